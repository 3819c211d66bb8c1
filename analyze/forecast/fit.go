package forecast

import (
	"math"
	"slices"
)

// Form is how a request's size depends on the parameter v.
type Form uint8

// Forms, simplest first: a fit takes the first that holds for every file.
const (
	// Constant: size = c (weights, optimizer state, fixed workspaces).
	Constant Form = iota
	// Linear: size = a·v (activations proportional to the batch).
	Linear
	// Quadratic: size = a·v² (attention scores in the sequence length).
	Quadratic
	// Affine: size = a·v + c.
	Affine
	// QuadraticAffine: size = a·v² + b·v + c (three files or more).
	QuadraticAffine
	// Capped: size = min(b·v, c), linear up to a cap: the form of a
	// reduction's staging buffer (reductionBuffers), tried for those
	// only.
	Capped
	// Irregular: no form with fewer parameters than there are files holds
	// for every file (with three files or more): the size is piecewise
	// linear between the files, and beyond them follows the line through
	// the two nearest (a workspace that grows with the size up to a cap,
	// a kernel chosen by size).
	Irregular
)

var formNames = [...]string{"constant", "linear", "quadratic", "affine", "quadratic+linear", "linear up to a cap", "irregular"}

// String names the form as the text and --json print it.
func (f Form) String() string {
	if int(f) < len(formNames) {
		return formNames[f]
	}
	return "?"
}

// basis gives the terms of each form (1, v, v²) in that order of A, B, C.
var basis = [...][3]bool{
	Constant:        {false, false, true},
	Linear:          {false, true, false},
	Quadratic:       {true, false, false},
	Affine:          {false, true, true},
	QuadraticAffine: {true, true, true},
}

// Fit is a request's size as a function of v: A·v² + B·v + C bytes
// (Capped: min(B·v, C)).
type Fit struct {
	Form    Form
	A, B, C float64
	// Rounded is true when the form holds only within the allocator's
	// rounding (every file's request rounds to the same block size as
	// the fit's), not to the byte; a Capped fit from three files or more,
	// within two of the buffer's blocks ([holdsBlocks]).
	Rounded bool
	// Xs and Ys are the files' values (increasing) and sizes of an
	// Irregular fit.
	Xs []float64
	Ys []int64
}

// At returns the fitted size at v in bytes, at least 1.
func (f *Fit) At(v float64) int64 {
	s := math.Round(f.A*v*v + f.B*v + f.C)
	switch f.Form {
	case Irregular:
		s = math.Round(f.piecewise(v))
	case Capped:
		s = math.Round(min(f.B*v, f.C))
	}
	if s < 1 || math.IsNaN(s) {
		return 1
	}
	if s > 1<<50 {
		return 1 << 50
	}
	return int64(s)
}

// fitSizes chooses the simplest form that gives every file's size at its
// value: first exactly (to the byte), then within round (the allocator's
// rounding of a request, allocator.Config.RoundSize). A form is tried only
// with more files than it has parameters, so that the files can refute it
// (with two files: constant, linear or quadratic, else affine, which two
// points always give; with three: also affine; with four: also a·v² + b·v
// + c). With capped (a reduction's staging buffer), linear up to a cap is
// tried before affine, and from two files it is the answer when the
// larger file's size is below the line through the smaller one and the
// origin (the cap binds there). With three files or more, a size no such
// form gives is Irregular. vs must be increasing.
func fitSizes(vs []float64, sizes []int64, round func(int64) int64, capped bool) Fit {
	n := len(vs)
	var fallback, capFallback *Fit
	for pass := 0; pass < 2; pass++ {
		for f := Constant; f <= Capped; f++ {
			if f == Affine && capped {
				if fit, ok := fitCapped(vs, sizes); ok {
					if n == 2 {
						// Two parameters from two files: it holds, the
						// answer when nothing simpler does.
						capFallback = &fit
					} else if holds(&fit, vs, sizes, pass == 1, round) {
						fit.Rounded = pass == 1
						return fit
					} else if pass == 1 && holdsBlocks(&fit, vs, sizes) {
						fit.Rounded = true
						return fit
					}
				}
			}
			if f == Capped {
				continue
			}
			np := nparams(f)
			if np > n {
				continue
			}
			fit, ok := solve(f, vs, sizes)
			if !ok {
				continue
			}
			if np == n {
				// As many parameters as files: it always holds; it is the
				// answer only when nothing simpler does.
				if fallback == nil {
					fb := fit
					fallback = &fb
				}
				continue
			}
			if holds(&fit, vs, sizes, pass == 1, round) {
				fit.Rounded = pass == 1
				return fit
			}
		}
	}
	if n == 2 && capFallback != nil {
		return *capFallback
	}
	if n == 2 && fallback != nil {
		return *fallback
	}
	return Fit{Form: Irregular, Xs: slices.Clone(vs), Ys: slices.Clone(sizes)}
}

// piecewise interpolates the points of an Irregular fit linearly, and
// extrapolates the segment nearest v.
func (f *Fit) piecewise(v float64) float64 {
	n := len(f.Xs)
	if n == 0 {
		return 0
	}
	if n == 1 {
		return float64(f.Ys[0])
	}
	i := 0
	for i < n-2 && v > f.Xs[i+1] {
		i++
	}
	x0, x1 := f.Xs[i], f.Xs[i+1]
	y0, y1 := float64(f.Ys[i]), float64(f.Ys[i+1])
	return y0 + (y1-y0)*(v-x0)/(x1-x0)
}

// fitCapped fits min(b·v, c): c the largest size (the last file's), b
// the steepest ratio of size to value among the files below it. ok is
// false unless the sizes grow with v and the files show the cap binding:
// a staging buffer is blocks x bytes per block, with blocks =
// div_up(values per thread, 16) while it grows (Reduce.cuh's
// setReduceConfig), so growing from file i to the last file L it has at
// least (blocks_i - 1) x v_L / v_i blocks at L. Counted in units of the
// greatest common divisor of the two sizes (a whole number of blocks'
// bytes, so never more blocks than there are), a size at L below that is
// capped; one above it may still be growing (then affine or a simpler
// form says it, and the band beyond the files holds both ends).
func fitCapped(vs []float64, sizes []int64) (Fit, bool) {
	n := len(vs)
	if n < 2 || vs[0] <= 0 {
		return Fit{}, false
	}
	last := sizes[n-1]
	i := -1 // the largest file below the cap
	b := 0.0
	for k := range n {
		if k > 0 && sizes[k] < sizes[k-1] {
			return Fit{}, false
		}
		if sizes[k] < last {
			i = k
			b = max(b, float64(sizes[k])/vs[k])
		}
	}
	if i < 0 || sizes[i] <= 0 {
		return Fit{}, false
	}
	u := gcd(sizes[i], last)
	bi, bl := float64(sizes[i]/u), float64(last/u)
	if bl >= (bi-1)*vs[n-1]/vs[i] {
		return Fit{}, false
	}
	return Fit{Form: Capped, B: b, C: float64(last)}, true
}

// holdsBlocks reports whether a Capped fit gives every file's size within
// two blocks (units of the greatest common divisor of the sizes below the
// cap): div_up rounds a growing buffer's blocks up, by less than one at
// each file and, through the slope taken from the files, by less than one
// more. Files at the cap must be at it.
func holdsBlocks(f *Fit, vs []float64, sizes []int64) bool {
	last := sizes[len(sizes)-1]
	var u int64
	for _, sz := range sizes {
		if sz < last {
			u = gcd(u, sz)
		}
	}
	for i, v := range vs {
		d := f.At(v) - sizes[i]
		if sizes[i] == last && d != 0 || d > 2*u || d < -2*u {
			return false
		}
	}
	return true
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func nparams(f Form) int {
	n := 0
	for _, b := range basis[f] {
		if b {
			n++
		}
	}
	return n
}

func holds(f *Fit, vs []float64, sizes []int64, rounded bool, round func(int64) int64) bool {
	for i, v := range vs {
		p := f.At(v)
		if rounded {
			if round(p) != round(sizes[i]) {
				return false
			}
		} else if p != sizes[i] {
			return false
		}
	}
	return true
}

// solve fits form f to the points by least squares (the normal equations
// over v scaled to at most 1, by Gaussian elimination). ok is false when
// the system is singular (values repeat).
func solve(f Form, vs []float64, sizes []int64) (Fit, bool) {
	scale := 0.0
	for _, v := range vs {
		scale = max(scale, math.Abs(v))
	}
	if scale == 0 {
		scale = 1
	}
	var idx []int // 0: v², 1: v, 2: 1
	for k, b := range basis[f] {
		if b {
			idx = append(idx, k)
		}
	}
	m := len(idx)
	term := func(k int, u float64) float64 {
		switch k {
		case 0:
			return u * u
		case 1:
			return u
		}
		return 1
	}
	var a [3][4]float64
	for i, v := range vs {
		u := v / scale
		for r := 0; r < m; r++ {
			for c := 0; c < m; c++ {
				a[r][c] += term(idx[r], u) * term(idx[c], u)
			}
			a[r][m] += term(idx[r], u) * float64(sizes[i])
		}
	}
	for c := 0; c < m; c++ {
		p := c
		for r := c + 1; r < m; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-12 {
			return Fit{}, false
		}
		a[c], a[p] = a[p], a[c]
		for r := 0; r < m; r++ {
			if r == c {
				continue
			}
			k := a[r][c] / a[c][c]
			for j := c; j <= m; j++ {
				a[r][j] -= k * a[c][j]
			}
		}
	}
	out := Fit{Form: f}
	for r := 0; r < m; r++ {
		x := a[r][m] / a[r][r]
		switch idx[r] {
		case 0:
			out.A = x / (scale * scale)
		case 1:
			out.B = x / scale
		default:
			out.C = x
		}
	}
	return out, true
}

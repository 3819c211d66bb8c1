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
	// Irregular: no form with fewer parameters than there are files holds
	// for every file (with three files or more): the size is piecewise
	// linear between the files, and beyond them follows the line through
	// the two nearest (a workspace that grows with the size up to a cap,
	// a kernel chosen by size).
	Irregular
)

var formNames = [...]string{"constant", "linear", "quadratic", "affine", "quadratic+linear", "irregular"}

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

// Fit is a request's size as a function of v: A·v² + B·v + C bytes.
type Fit struct {
	Form    Form
	A, B, C float64
	// Rounded is true when the form holds only within the allocator's
	// rounding (every file's request rounds to the same block size as
	// the fit's), not to the byte.
	Rounded bool
	// Xs and Ys are the files' values (increasing) and sizes of an
	// Irregular fit.
	Xs []float64
	Ys []int64
}

// At returns the fitted size at v in bytes, at least 1.
func (f *Fit) At(v float64) int64 {
	s := math.Round(f.A*v*v + f.B*v + f.C)
	if f.Form == Irregular {
		s = math.Round(f.piecewise(v))
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
// + c). With three files or more, a size no such form gives is Irregular.
// vs must be increasing.
func fitSizes(vs []float64, sizes []int64, round func(int64) int64) Fit {
	n := len(vs)
	var fallback *Fit
	for pass := 0; pass < 2; pass++ {
		for f := Constant; f <= QuadraticAffine; f++ {
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

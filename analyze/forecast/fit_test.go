package forecast

import (
	"testing"

	"github.com/snapview/snapview/analyze/allocator"
)

// q is a size of the form a·v² + b·v + c.
func q(v int64) int64 { return 1_000_000*v*v + 300_000*v + 700_000 }

// TestFitSizes: the simplest form that holds for every file is chosen,
// exactly first, then within the allocator's rounding; a form is not
// taken from as many files as it has parameters unless nothing simpler
// holds.
func TestFitSizes(t *testing.T) {
	var cfg allocator.Config
	round := cfg.RoundSize
	tests := []struct {
		name    string
		vs      []float64
		sizes   []int64
		form    Form
		rounded bool
		at      float64
		want    int64
	}{
		{"constant", []float64{1, 2}, []int64{4096, 4096}, Constant, false, 24, 4096},
		{"linear", []float64{1, 2}, []int64{786432, 1572864}, Linear, false, 24, 18874368},
		{"quadratic: attention scores in seq", []float64{128, 256}, []int64{4 * 12 * 128 * 128 * 2, 4 * 12 * 256 * 256 * 2}, Quadratic, false, 1024, 4 * 12 * 1024 * 1024 * 2},
		{"affine from two files", []float64{1, 2}, []int64{3_010_000, 6_010_000}, Affine, false, 24, 72_010_000},
		{"linear within rounding from two files: simpler than affine", []float64{1, 2}, []int64{3_000_016, 6_000_016}, Linear, true, 2, 6_000_019},
		{"affine checked by a third file", []float64{1, 2, 4}, []int64{1000, 2000, 4000}, Linear, false, 8, 8000},
		{"affine with three files", []float64{1, 2, 4}, []int64{1100, 2100, 4100}, Affine, false, 8, 8100},
		{"quadratic+linear from three files is not checked: piecewise", []float64{1, 2, 4}, []int64{q(1), q(2), q(4)}, Irregular, false, 8, q(4) + (q(4)-q(2))*2},
		{"quadratic+linear checked by a fourth file", []float64{1, 2, 4, 6}, []int64{q(1), q(2), q(4), q(6)}, QuadraticAffine, false, 8, q(8)},
		{"a workspace that stops growing", []float64{8, 16, 32, 48}, []int64{39321600, 78643200, 138412032, 138412032}, Irregular, false, 64, 138412032},
		{"piecewise between files", []float64{8, 16, 32, 48}, []int64{39321600, 78643200, 138412032, 138412032}, Irregular, false, 24, (78643200 + 138412032) / 2},
		{"constant within rounding", []float64{1, 2, 4}, []int64{1279, 1124, 1100}, Constant, true, 8, 1168},
		{"small sizes that scale are constant within rounding", []float64{1, 2, 4}, []int64{11, 24, 56}, Constant, true, 8, 30},
		{"irregular with four files", []float64{1, 2, 4, 8}, []int64{5 << 20, 1 << 20, 9 << 20, 2 << 20}, Irregular, false, 3, 5 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fitSizes(tt.vs, tt.sizes, round, false)
			if f.Form != tt.form || f.Rounded != tt.rounded {
				t.Fatalf("form %v rounded %t (%+v), want %v rounded %t", f.Form, f.Rounded, f, tt.form, tt.rounded)
			}
			if got := f.At(tt.at); got != tt.want {
				t.Errorf("at %v: %d, want %d", tt.at, got, tt.want)
			}
		})
	}
}

// TestFitCapped: a reduction's staging buffer (reductionBuffers) is
// fitted linear up to a cap when the files show the cap binding, by more
// than the rounding up of blocks explains (sizes of vit_bs's buffers).
func TestFitCapped(t *testing.T) {
	var cfg allocator.Config
	tests := []struct {
		name  string
		vs    []float64
		sizes []int64
		form  Form
		at    float64
		want  int64
	}{
		// 25 blocks of 1,572,864 B at batch 8, 88 at 32: growing, 100.
		{"capped between two files", []float64{8, 32}, []int64{39321600, 138412032}, Capped, 16, 78643200},
		{"capped above", []float64{8, 32}, []int64{39321600, 138412032}, Capped, 64, 138412032},
		{"capped below", []float64{8, 32}, []int64{39321600, 138412032}, Capped, 4, 19660800},
		// 50 blocks of 1,179,648 B at 16, 99 at 32: div_up's rounding,
		// not a cap (at 48 it is 118 blocks).
		{"still growing: affine", []float64{16, 32}, []int64{58982400, 116785152}, Affine, 48, 174587904},
		{"constant: a cap the files cannot place", []float64{48, 64}, []int64{138412032, 138412032}, Constant, 8, 138412032},
		{"linear", []float64{8, 16}, []int64{39321600, 78643200}, Linear, 32, 157286400},
		{"capped from three files", []float64{8, 16, 32}, []int64{39321600, 78643200, 138412032}, Capped, 64, 138412032},
		// 25, 50, 99 blocks of 1,179,648 B, then the cap: within two
		// blocks of min(b·v, c) (vit_bs's second kind of buffer).
		{"capped within div_up's blocks", []float64{8, 16, 32, 64}, []int64{29491200, 58982400, 116785152, 139198464}, Capped, 48, 139198464},
		{"a cap the third file refutes", []float64{8, 16, 32}, []int64{39321600, 60000000, 138412032}, Irregular, 24, 99206016},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fitSizes(tt.vs, tt.sizes, cfg.RoundSize, true)
			if f.Form != tt.form {
				t.Fatalf("form %v (%+v), want %v", f.Form, f, tt.form)
			}
			if got := f.At(tt.at); got != tt.want {
				t.Errorf("at %v: %d, want %d", tt.at, got, tt.want)
			}
			if plain := fitSizes(tt.vs, tt.sizes, cfg.RoundSize, false); plain.Form == Capped {
				t.Errorf("capped without a reduction buffer: %+v", plain)
			}
		})
	}
}

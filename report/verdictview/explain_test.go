package verdictview

import (
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/explain"
)

// TestExplainSettingAdvice: the "do:" of a finding that names a setting
// recommends it ("try", "lets the pool grow") only where whatif found it
// fits at every cap the file allows, and otherwise says what whatif found:
// the cap it needs, or an OOM at every cap. Without a whatif row (no cap)
// the plain advice stays.
func TestExplainSettingAdvice(t *testing.T) {
	const exp = "expandable_segments:True"
	with := func(f explain.Finding, setting string, fits bool, from int64) explain.Finding {
		f.Setting, f.SettingFits, f.SettingFrom, f.SettingPeak = setting, fits, from, 3<<30
		f.SettingFromAbove = from > 3200<<20 // the file allows caps up to 3,200 MiB
		return f
	}
	avoidable := explain.Finding{Kind: explain.KindAvoidableMalloc}
	contiguity := explain.Finding{Kind: explain.KindBlockers, Mode: "contiguity"}
	release := explain.Finding{Kind: explain.KindBlockers, Mode: "release"}
	gap := explain.Finding{Kind: explain.KindReservedGap}
	tests := []struct {
		name      string
		f         explain.Finding
		want, not []string
	}{
		{"avoidable, no cap", avoidable, []string{exp + " lets the pool grow in place"}, []string{"whatif"}},
		{"avoidable, fits", with(avoidable, exp, true, 0), []string{"lets the pool grow", "try PYTORCH_CUDA_ALLOC_CONF=" + exp, "no OOM"}, nil},
		{"avoidable, needs more", with(avoidable, exp, false, 3323985920),
			[]string{"fits at only some of the caps the file allows", "fits only from a cap of 3,170 MiB = 3,323,985,920 B"}, []string{"lets the pool grow", "try "}},
		{"avoidable, needs a larger cap", with(avoidable, exp, false, 3300<<20),
			[]string{"does not fit under the cap", "fits only from a cap of 3,300 MiB", "above the caps the file allows"}, []string{"lets the pool grow", "try "}},
		{"avoidable, never", with(avoidable, exp, false, 0), []string{"an OOM under it at every cap"}, []string{"lets the pool grow", "try "}},
		{"contiguity, no cap", contiguity, []string{"or try " + exp}, nil},
		{"contiguity, fits", with(contiguity, exp, true, 0), []string{"or try PYTORCH_CUDA_ALLOC_CONF=" + exp}, nil},
		{"contiguity, needs more", with(contiguity, exp, false, 3323985920), []string{"fits at only some of the caps", "3,170 MiB"}, []string{"try "}},
		{"release, never", with(release, "max_split_size_mb:20", false, 0), []string{"does not fit under the cap", "OOM under it at every cap"}, []string{"try "}},
		{"reserved gap, fits", with(gap, exp, true, 0), []string{"try PYTORCH_CUDA_ALLOC_CONF=" + exp}, nil},
		{"reserved gap, needs more", with(gap, exp, false, 3323985920), []string{"fits only from a cap of 3,170 MiB"}, []string{"try "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ef := ExplainFinding{Finding: tt.f}
			wordFinding(&ef)
			for _, w := range tt.want {
				if !strings.Contains(ef.Action, w) {
					t.Errorf("action %q, want %q in it", ef.Action, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(ef.Action, n) {
					t.Errorf("action %q says %q", ef.Action, n)
				}
			}
		})
	}
}

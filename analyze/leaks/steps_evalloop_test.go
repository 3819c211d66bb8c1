package leaks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/steps"
)

// TestStepsEvalLoopOnePerPrompt: on a real H200 recording of a KV-cache
// evaluation loop (testdata/snapshots/kv_eval_prompts: transformers GPT-2,
// model.generate(use_cache=True) over 24 prompts of 23-397 tokens, 12-48
// generated tokens each; 386,571 entries; no record_function), the steps
// found from the trace alone are the prompts: the outermost repeating unit,
// not the layers of one forward nor the tokens of one generation. The
// marker is the prompt's torch.randint (gpurec3.py:350), and step i starts
// after prompt i-1 ended and before prompt i ended, by the wall-clock times
// meta.json took after each prompt (time_us is microseconds since the
// epoch on the same machine).
func TestStepsEvalLoopOnePerPrompt(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "snapshots", "kv_eval_prompts")
	data, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Prompts []struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"prompts"`
		PerStep []struct {
			Step int     `json:"step"`
			Time float64 `json:"time"`
		} `json:"per_step"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	if len(meta.Prompts) != 24 || len(meta.PerStep) != 24 {
		t.Fatalf("meta: %d prompts, %d per_step records, want 24", len(meta.Prompts), len(meta.PerStep))
	}
	s := bundledLeak(t, filepath.Join("kv_eval_prompts", "snapshot.pickle.xz"))
	for _, src := range []steps.StepSource{steps.StepsAuto, steps.StepsPattern} {
		rep := leaksFor(t, s, 0, func(o *LeakOptions) { o.Steps = src })
		if rep.Steps.Source != steps.StepsPattern || rep.Steps.Count != len(meta.Prompts) {
			t.Fatalf("--steps %v: %d steps from %v, want %d from the pattern", src, rep.Steps.Count, rep.Steps.Source, len(meta.Prompts))
		}
		if !hasFrame(s, rep.Steps.Marker, "gpurec3.py", 350) {
			t.Errorf("marker stack %v has no gpurec3.py:350", s.Stack(rep.Steps.Marker))
		}
		var slices []steps.LeakSlice
		for _, sl := range rep.Slices {
			if sl.Step > 0 {
				slices = append(slices, sl)
			}
		}
		if len(slices) != len(meta.PerStep) {
			t.Fatalf("%d step slices, want %d", len(slices), len(meta.PerStep))
		}
		for i, sl := range slices {
			end := int64(meta.PerStep[i].Time * 1e6)
			if sl.StartUS > end {
				t.Errorf("step %d starts at %d us, after prompt %d ended (%d us)", sl.Step, sl.StartUS, i, end)
			}
			if i > 0 {
				if prev := int64(meta.PerStep[i-1].Time * 1e6); sl.StartUS < prev {
					t.Errorf("step %d starts at %d us, before prompt %d ended (%d us)", sl.Step, sl.StartUS, i-1, prev)
				}
			}
		}
	}
}

package replay

import (
	"encoding/json"
	"github.com/snapview/snapview/analyze/allocator"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// TestRoundingFromTrace: a whole torch_npu run whose end state has no
// active block (testdata/gen/npugen.py: the trimmed field file's rule,
// round_up(request + 32, 512), 7,624 entries) gives no block to read the
// rule from; the gaps between consecutive allocs carved from one segment
// do (a 16 KiB request and the next block 16,896 bytes on). With the rule
// read from the trace the replay is exact and its peaks are the
// generator's; forced to CUDA's rule (--rounding cuda) it fails at the
// first alloc CUDA's rule leaves no block for, and the history is unknown.
func TestRoundingFromTrace(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "snapshots")
	data, err := os.ReadFile(filepath.Join(dir, "npu_whole_run.meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Entries       int   `json:"entries"`
		PeakAllocated int64 `json:"peak_allocated"`
		PeakEntry     int   `json:"peak_entry"`
		PeakReserved  int64 `json:"peak_reserved"`
		ActiveAtEnd   int   `json:"active_blocks_at_end"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	load := func() *snapshot.Snapshot {
		s, err := snapshot.Load(filepath.Join(dir, "npu_whole_run.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := load()
	if meta.ActiveAtEnd != 0 || len(s.Traces[0]) != meta.Entries {
		t.Fatalf("fixture: %d active blocks at the end, %d entries; want 0 and %d", meta.ActiveAtEnd, len(s.Traces[0]), meta.Entries)
	}
	ro := allocator.InferRounding(s, 0)
	if ro.Rule != allocator.RoundNPU || !ro.FromTrace || ro.Blocks != 0 || ro.TraceNPU == 0 || ro.TraceCUDA != 0 {
		t.Fatalf("rounding %v from trace %v: %d blocks, trace gaps %d NPU / %d CUDA; want NPU from the trace alone",
			ro.Rule, ro.FromTrace, ro.Blocks, ro.TraceNPU, ro.TraceCUDA)
	}
	if ev := ro.Evidence(); !strings.Contains(ev, "a 16384-byte request and the next block 16896 bytes on") {
		t.Errorf("evidence %q lacks the 16 KiB example", ev)
	}
	r, err := Run(s, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Check.Equal || r.Stats.Known.History != stats.Exact {
		t.Fatalf("replay: end check %v %v, history %v; want exact", r.Check.Equal, r.Check.Differences, r.Stats.Known.History)
	}
	if r.PeakIndex != meta.PeakEntry || r.Allocated[r.PeakIndex] != meta.PeakAllocated || r.Reserved[r.PeakReservedIndex] != meta.PeakReserved {
		t.Errorf("peak allocated %d at entry %d, reserved %d; want %d at %d, %d", r.Allocated[r.PeakIndex], r.PeakIndex,
			r.Reserved[r.PeakReservedIndex], meta.PeakAllocated, meta.PeakEntry, meta.PeakReserved)
	}

	s = load()
	s.ForceRounding = "cuda"
	if ro := allocator.InferRounding(s, 0); ro.Rule != allocator.RoundCUDA || ro.Forced != "cuda" || !strings.HasPrefix(ro.Evidence(), "forced (--rounding cuda)") {
		t.Fatalf("forced: %v %q %q", ro.Rule, ro.Forced, ro.Evidence())
	}
	r, err = Run(s, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Check.Equal || r.Stats.Known.History != stats.Unknown {
		t.Errorf("CUDA's rule forced on an NPU run: end check %v, history %v; want a difference and unknown", r.Check.Equal, r.Stats.Known.History)
	}
}

// TestRoundingTraceKeepsCUDA: on real CUDA recordings the trace's gaps
// side with CUDA's rule, or are absent, and never turn it: the rule stays
// CUDA's (from the blocks, the trace, or assumed).
func TestRoundingTraceKeepsCUDA(t *testing.T) {
	for _, name := range []string{"mlp_train.pickle", "kv_eval.pickle", "train_norf.pickle", "ddp_rank0.pickle",
		"whatif/frag_oom/default_cap2048M/snapshot.pickle.xz", "whatif/vllm_load/default/snapshot.pickle.xz"} {
		s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", name))
		if err != nil {
			t.Fatal(err)
		}
		for d := range s.Traces {
			ro := allocator.InferRounding(s, d)
			if ro.Rule != allocator.RoundCUDA || ro.TraceNPU*10 >= ro.TraceCUDA && ro.TraceNPU > 0 {
				t.Errorf("%s device %d: %v, trace gaps %d NPU / %d CUDA (%s)", name, d, ro.Rule, ro.TraceNPU, ro.TraceCUDA, ro.Evidence())
			}
		}
	}
}

package monitor_test

import (
	"testing"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/internal/monitortest"
	"github.com/snapview/snapview/snapshot"
)

const trainBase = "../../testdata/snapshots/monitor_train"

// TestGapsReal: the real monitor_train recording (cupy takes 512 MiB
// outside PyTorch at step 5) set against its memory_stats() log and
// against its snapshot's replayed trace: one gap on GPU 0 that jumps by
// the 512 MiB, and the log agrees with the replay at every record within
// the trace. A device of the snapshot with no trace is a warning, no gap.
func TestGapsReal(t *testing.T) {
	smi, log := monitortest.TrainLogs(t, trainBase)
	gpus := monitor.SummarizeSMI(smi)
	steps := monitor.AnalyzeSteps(log)
	s, err := snapshot.Load(trainBase + ".pickle")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		o    monitor.GapOptions
	}{
		{"stats", monitor.GapOptions{SMIName: "smi.csv", Steps: steps, StatsName: "stats.jsonl"}},
		{"snapshot", monitor.GapOptions{SMIName: "smi.csv", Steps: steps, StatsName: "stats.jsonl", Snap: s, SnapName: "train.pickle"}},
	} {
		gaps, agree, notes, err := monitor.Gaps(gpus, tt.o)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(gaps) != 1 || gaps[0].GPU != 0 || gaps[0].Device != 0 || gaps[0].Steps == nil {
			t.Fatalf("%s: gaps %+v, want one on GPU 0 for device 0 with its steps", tt.name, gaps)
		}
		var most int64
		for _, j := range gaps[0].Gap.Jumps {
			most = max(most, j.Bytes)
		}
		if most < 500<<20 || most > 530<<20 {
			t.Errorf("%s: largest jump %d bytes, want about 512 MiB (cupy.empty)", tt.name, most)
		}
		if tt.o.Snap == nil {
			if len(agree) != 0 || len(notes) != 0 {
				t.Errorf("%s: agreements %v, notes %v; want none", tt.name, agree, notes)
			}
			continue
		}
		if len(agree) != 1 || agree[0].Checked == 0 || agree[0].Equal != agree[0].Checked {
			t.Errorf("%s: agreements %+v, want every record within the trace equal", tt.name, agree)
		}
		if len(notes) != 1 || notes[0].File != "train.pickle" {
			t.Errorf("%s: notes %+v, want the warning that device 1's trace covers no time", tt.name, notes)
		}
	}
}

package analysis

import (
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

func load(t *testing.T, name string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load(filepath.Join("..", "testdata", "snapshots", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplayOnce: concurrent views of a device share one replay.
func TestReplayOnce(t *testing.T) {
	s := load(t, "ddp_rank0.pickle")
	f := New(s, Options{})
	devs := s.Devices()
	if len(devs) == 0 {
		t.Fatal("no device")
	}
	got := make([]*replay.Result, 16)
	var wg sync.WaitGroup
	for k := range got {
		wg.Go(func() {
			r, err := f.Replay(devs[k%len(devs)])
			if err != nil {
				t.Error(err)
			}
			got[k] = r
		})
	}
	wg.Wait()
	for k := range got {
		if got[k] != got[k%len(devs)] {
			t.Errorf("call %d: a second replay of device %d", k, devs[k%len(devs)])
		}
	}
	if _, _, ok := f.replayed(devs[0]); !ok {
		t.Error("replayed: the replay is not recorded as done")
	}
}

// TestStartThenInfo: Info waits for the replays Start began and gives
// what Inspect gives with replays of its own.
func TestStartThenInfo(t *testing.T) {
	s := load(t, "mlp_train.pickle")
	f := New(s, Options{Mode: replay.StatsOnly})
	f.Start(s.Devices())
	if got, want := f.Info(nil), info.Inspect(s, nil, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("Info differs from Inspect:\n got %+v\nwant %+v", got, want)
	}
}

// TestStatsRule: the Cur Usage figures are the segments', the history the
// replay's with the trust rule's verdict; without a replayed trace the
// history is unknown.
func TestStatsRule(t *testing.T) {
	s := load(t, "mlp_train.pickle")
	f := New(s, Options{Mode: replay.StatsOnly})
	st, notes := f.Stats(0)
	r, err := f.Replay(0)
	if err != nil {
		t.Fatal(err)
	}
	cur := stats.CurrentStats(s, 0)
	if st.ReservedBytes[stats.PoolAll].Current != cur.ReservedBytes[stats.PoolAll].Current ||
		st.AllocatedBytes[stats.PoolAll].Peak != r.Stats.AllocatedBytes[stats.PoolAll].Peak ||
		st.Known != r.Stats.Known {
		t.Errorf("Stats: reserved %d (segments %d), peak %d (replay %d), known %+v (replay %+v)",
			st.ReservedBytes[stats.PoolAll].Current, cur.ReservedBytes[stats.PoolAll].Current,
			st.AllocatedBytes[stats.PoolAll].Peak, r.Stats.AllocatedBytes[stats.PoolAll].Peak, st.Known, r.Stats.Known)
	}
	if st.Known.History == stats.Unknown || len(notes) > 0 {
		t.Errorf("history %v, notes %q; want known, none", st.Known.History, notes)
	}

	// The same file without its trace: the state at the dump only.
	bare := *s
	bare.Traces = nil
	st, _ = New(&bare, Options{}).Stats(0)
	if st.Known.History != stats.Unknown || st.AllocatedBytes[stats.PoolAll].Peak != 0 {
		t.Errorf("without a trace: history %v, peak %d; want unknown, 0", st.Known.History, st.AllocatedBytes[stats.PoolAll].Peak)
	}
}

// TestTraceCoverageReplaysNothing: the summary's views read the replays
// made so far and make none.
func TestTraceCoverageReplaysNothing(t *testing.T) {
	s := load(t, "mlp_train.pickle")
	f := New(s, Options{})
	scanned := f.TraceCoverage(0)
	f.DeviceInfos(nil)
	if _, _, ok := f.replayed(0); ok {
		t.Fatal("TraceCoverage or DeviceInfos replayed device 0")
	}
	if _, err := f.Replay(0); err != nil {
		t.Fatal(err)
	}
	if got := f.TraceCoverage(0); !reflect.DeepEqual(got, scanned) {
		t.Errorf("coverage from the replay %+v, from a pass over the trace %+v", got, scanned)
	}
}

// TestPage: the report's analyses of a device need a Full replay.
func TestPage(t *testing.T) {
	s := load(t, "mlp_train.pickle")
	opt := PageOptions{Top: 5, Buckets: 100, MaxPoints: 100, MaxLiveEntries: 100000}
	if p := New(s, Options{Mode: replay.StatsOnly}).Page(0, opt); p != nil {
		t.Errorf("Page of a StatsOnly replay: %+v, want nil", p)
	}
	p := New(s, Options{}).Page(0, opt)
	if p == nil || p.Err != nil || p.Timeline == nil || p.Leaks == nil || p.Peak == nil || len(p.Lives) == 0 {
		t.Fatalf("Page: %+v", p)
	}
	// A trace longer than MaxLiveEntries gets the states PageStates asks
	// the replay for, the peak's among them.
	opt.MaxLiveEntries = 10
	f := New(s, Options{States: PageStates(10, 4)})
	p = f.Page(0, opt)
	if p == nil || p.Lives != nil || len(p.States) < 4 || p.Peak == nil {
		t.Fatalf("Page of a long trace: %+v", p)
	}
	r, _ := f.Replay(0)
	if p.Peak.Index != r.PeakIndex {
		t.Errorf("peak state at entry %d, peak at %d", p.Peak.Index, r.PeakIndex)
	}
}

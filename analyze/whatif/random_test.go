package whatif

import (
	"math/rand/v2"
	"testing"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// randomTrace is a trace of random requests on two streams, freed in a
// random order, some frees completing later (record_stream), with an
// empty_cache now and then: the shape of a real trace, not its addresses
// (the simulation never reads them but to compare).
func randomTrace(rng *rand.Rand, n int) *snapshot.Snapshot {
	var trace []snapshot.TraceEntry
	var live []snapshot.Addr
	var pending []snapshot.Addr
	next := snapshot.Addr(1 << 40)
	sizes := []int64{4, 512, 3000, 1 << 20, 1<<20 + 1, 3 << 20, 12 << 20, 100 << 20, 700 << 20}
	for len(trace) < n {
		switch r := rng.IntN(10); {
		case r < 5 || len(live) == 0:
			size := sizes[rng.IntN(len(sizes))] + int64(rng.IntN(4096))
			trace = append(trace, snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: next, Size: size, Stream: uint64(rng.IntN(2))})
			live = append(live, next)
			next += 1 << 32
		case r < 9:
			k := rng.IntN(len(live))
			a := live[k]
			live = append(live[:k], live[k+1:]...)
			trace = append(trace, snapshot.TraceEntry{Action: snapshot.ActionFreeRequested, Addr: a})
			if rng.IntN(5) == 0 {
				pending = append(pending, a)
			} else {
				trace = append(trace, snapshot.TraceEntry{Action: snapshot.ActionFreeCompleted, Addr: a})
			}
		default:
			for _, a := range pending {
				trace = append(trace, snapshot.TraceEntry{Action: snapshot.ActionFreeCompleted, Addr: a})
			}
			pending = pending[:0]
		}
	}
	return &snapshot.Snapshot{Traces: [][]snapshot.TraceEntry{trace}, HasDeviceTraces: true}
}

// TestRandomTraces runs random request sequences through every candidate
// setting, capped and not, and checks what must hold whatever the
// setting: nothing panics, peaks are consistent, and an uncapped run
// never fails.
func TestRandomTraces(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 40 {
		s := randomTrace(rng, 400+rng.IntN(800))
		r, err := replay.Run(s, 0, replay.Options{Mode: replay.StatsOnly})
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int64{0, 2 << 30, 600 << 20} {
			p := compile(s, r, allocator.Default(), limit)
			confs := append([]allocator.Config{allocator.Default()}, Candidates(allocator.Default(), limit)...)
			for _, c := range confs {
				out := newSim(p, c, limit, nil).run()
				if out.PeakAllocated > out.PeakReserved || out.GapAtPeak < 0 || out.GapAtPeak > out.PeakReserved {
					t.Errorf("trace %d, limit %d, %q: peak allocated %d, reserved %d, gap %d", k, limit, c, out.PeakAllocated, out.PeakReserved, out.GapAtPeak)
				}
				if limit == 0 && out.OOMs > 0 {
					t.Errorf("trace %d, %q: an uncapped run fails at entry %d", k, c, out.FirstOOM)
				}
				if limit > 0 && out.PeakReserved > limit {
					t.Errorf("trace %d, limit %d, %q: peak reserved %d over the cap", k, limit, c, out.PeakReserved)
				}
			}
		}
	}
}

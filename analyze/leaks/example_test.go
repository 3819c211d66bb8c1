package leaks_test

import (
	"fmt"
	"log"

	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// Leaks on the hand-made gc sawtooth of testdata/snapshots: by default it
// looks at the last OOM, where the reference cycles (model.py:120) rank
// first and the list that only grows (model.py:150) second.
func ExampleLeaks() {
	s, err := snapshot.Load("../../testdata/snapshots/leak_gc_oom.pickle")
	if err != nil {
		log.Fatal(err)
	}
	res, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		log.Fatal(err)
	}
	opts := leaks.DefaultLeakOptions(res)
	opts.Top = 3
	rep, err := leaks.Leaks(s, res, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d steps from %v\n", rep.Steps.Count, rep.Steps.Source)
	for _, g := range rep.Groups {
		f := s.Frames[s.Stack(g.Stack)[0]]
		fmt.Printf("%d. %s:%d %d MiB: %v\n", g.Rank, f.Name, f.Line, g.Bytes>>20, g.Verdict)
	}
	// Output:
	// 27 steps from annotation
	// 1. attach_debug:120 224 MiB: grows every step, freed only in bursts (3 so far): likely leak (reference cycles left to gc?)
	// 2. log_stats:150 54 MiB: grows every step, never freed: likely leak
	// 3. convert:1341 20 MiB: allocated before the first step, never freed: parameters/state
}

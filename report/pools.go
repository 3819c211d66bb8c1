package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
)

// The private pools' figures (analysis.File.Pools) as summary, segments
// and state show them: one paragraph per pool in text, a "private_pools"
// list in JSON with the keys explain's pool findings use.

// poolBytes formats a pool figure in bytes as the text views do: "at
// least" before a lower bound, "?" when unknown.
func poolBytes(v int64, e stats.Exactness) string {
	switch e {
	case stats.Unknown:
		return "?"
	case stats.LowerBound:
		return "at least " + units.Bytes(v)
	}
	return units.Bytes(v)
}

// PoolLines says each private pool's figures in words, one line a pool,
// in explain's words: its reserved high-water over the trace, its active
// bytes (live blocks, stats.PoolFigures) at the allocated peak and at the
// end, its segments at the dump, its allocations and their first entry,
// and whether it is abandoned.
func PoolLines(pools []stats.PoolFigures) []string {
	var out []string
	for k := range pools {
		p := &pools[k]
		var b strings.Builder
		fmt.Fprintf(&b, "Private pool %s: ", p.Pool)
		atEnd := units.Bytes(p.ActiveAtEnd)
		if p.PendingFreeEnd > 0 {
			atEnd += " (and " + units.Bytes(p.PendingFreeEnd) + " pending free)"
		}
		if p.Known.History == stats.Unknown {
			fmt.Fprintf(&b, "%s reserved in %s at the dump, %s of it active; high-water unknown",
				units.Bytes(p.ReservedAtEnd), units.Plural(p.SegmentsAtEnd, "segment"), atEnd)
			if p.Known.Why != "" {
				fmt.Fprintf(&b, " (%s)", p.Known.Why)
			}
			b.WriteString(".")
		} else {
			allocs := units.Plural(p.Allocations, "allocation")
			if p.HighWater == stats.LowerBound {
				allocs = "at least " + allocs
			}
			dump := fmt.Sprintf("%s in %s at the dump", units.Bytes(p.ReservedAtEnd), units.Plural(p.SegmentsAtEnd, "segment"))
			fmt.Fprintf(&b, "reserved up to %s over the trace (%s); %s active at the allocated peak, %s at the end; %s",
				poolBytes(p.ReservedHighWater, p.HighWater), dump, poolBytes(p.ActiveAtPeak, p.Known.History), atEnd, allocs)
			if p.FirstAlloc >= 0 {
				fmt.Fprintf(&b, ", the first at entry %s", units.Int(int64(p.FirstAlloc)))
			}
			b.WriteString(".")
			if p.HighWater == stats.LowerBound {
				fmt.Fprintf(&b, " Lower bounds: %s.", p.HighWaterWhy)
			}
		}
		if p.Abandoned() {
			b.WriteString(" Abandoned: segments and no active block; the memory stays reserved until the graph or MemPool is freed.")
		}
		out = append(out, b.String())
	}
	return out
}

// poolFiguresJSON is one private pool in --json: the figures under the
// keys of explain's pool findings, each with its exactness.
type poolFiguresJSON struct {
	PoolID    [2]int64          `json:"pool_id"`
	Figures   map[string]*int64 `json:"figures"`
	Exactness map[string]string `json:"exactness"`
	// Why says why the high-water and allocations are lower bounds.
	Why string `json:"why,omitempty"`
	// FirstAllocEntry is the pool's first alloc entry, -1 none.
	FirstAllocEntry int  `json:"first_alloc_entry"`
	Abandoned       bool `json:"abandoned"`
}

// newPoolsJSON returns pools in --json (nil when there are none, so that
// the key is left out).
func newPoolsJSON(pools []stats.PoolFigures) []poolFiguresJSON {
	var out []poolFiguresJSON
	for k := range pools {
		p := &pools[k]
		j := poolFiguresJSON{PoolID: p.Pool, Figures: map[string]*int64{}, Exactness: map[string]string{},
			Why: p.HighWaterWhy, FirstAllocEntry: p.FirstAlloc, Abandoned: p.Abandoned()}
		add := func(name string, v int64, e stats.Exactness) {
			j.Figures[name], j.Exactness[name] = kit.KnownOr(v, e), e.String()
		}
		add("reserved_high_water_bytes", p.ReservedHighWater, p.HighWater)
		add("active_at_peak_bytes", p.ActiveAtPeak, p.Known.History)
		add("active_at_end_bytes", p.ActiveAtEnd, p.Known.Current)
		add("pending_free_at_end_bytes", p.PendingFreeEnd, p.Known.Current)
		add("segments_at_end", int64(p.SegmentsAtEnd), p.Known.Current)
		add("reserved_at_end_bytes", p.ReservedAtEnd, p.Known.Current)
		add("allocations", int64(p.Allocations), p.HighWater)
		out = append(out, j)
	}
	return out
}

// writeStatePools writes the private pools' lines under a heading, as
// the state view ends (nothing when there are none).
func writeStatePools(_ io.Writer, ew *kit.ErrWriter, v *StateView) error {
	if len(v.PrivatePools) == 0 {
		return ew.Err
	}
	ew.Printf("\nPrivate pools (over the whole trace and at the dump, not at this moment)\n")
	for _, line := range PoolLines(v.PrivatePools) {
		ew.Printf("%s", kit.WrapAt("  ", line, 100))
	}
	return ew.Err
}

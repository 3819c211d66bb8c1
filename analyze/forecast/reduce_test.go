package forecast

import (
	"slices"
	"testing"

	"github.com/snapview/snapview/analyze/whatif"
)

// TestReductionBuffers: the staging buffer of a reduction is the first
// of two requests freed in reverse order with nothing between them (the
// second under 64 KiB); a pair with anything between, frees in the other
// order, or a large second request is not (the sequence of gpt2_bs
// batch 24's entries 713-721, then variants).
func TestReductionBuffers(t *testing.T) {
	alloc := func(id int32, size int64) whatif.Event {
		return whatif.Event{Kind: whatif.EventAlloc, ID: id, Size: size}
	}
	free := func(id int32) []whatif.Event {
		return []whatif.Event{{Kind: whatif.EventFreeRequested, ID: id}, {Kind: whatif.EventFreeCompleted, ID: id}}
	}
	cat := func(parts ...any) []whatif.Event {
		var out []whatif.Event
		for _, p := range parts {
			switch p := p.(type) {
			case whatif.Event:
				out = append(out, p)
			case []whatif.Event:
				out = append(out, p...)
			}
		}
		return out
	}
	tests := []struct {
		name   string
		events []whatif.Event
		want   []bool
	}{
		{"gpt2_bs batch 24, entries 713-721", cat(alloc(1, 75497472), alloc(2, 4718592), alloc(3, 1536), alloc(4, 75497472), alloc(5, 24), free(5), free(4), free(3)),
			[]bool{false, false, false, true, false}},
		{"frees in allocation order", cat(alloc(1, 75497472), alloc(2, 24), free(1), free(2)), []bool{false, false}},
		{"a request between", cat(alloc(1, 75497472), alloc(2, 24), alloc(3, 512), free(2), free(1), free(3)), []bool{false, false, false}},
		{"second request over 64 KiB", cat(alloc(1, 75497472), alloc(2, 1<<20), free(2), free(1)), []bool{false, false}},
		{"semaphores not a whole number of ints", cat(alloc(1, 75497472), alloc(2, 26), free(2), free(1)), []bool{false, false}},
		{"another stream", cat(alloc(1, 75497472), whatif.Event{Kind: whatif.EventAlloc, ID: 2, Size: 24, Stream: 7}, free(2), free(1)), []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var allocs []int32
			for i, e := range tt.events {
				if e.Kind == whatif.EventAlloc {
					allocs = append(allocs, int32(i))
				}
			}
			if got := reductionBuffers(tt.events, allocs); !slices.Equal(got, tt.want) {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
}

// TestReductionBuffersSeries: every recorded series has reduction
// buffers (bias and norm gradients in the backward, batch norm statistics,
// the loss), logged per file with the sizes of their semaphores.
func TestReductionBuffersSeries(t *testing.T) {
	n := 0
	for _, root := range scalingRoots(t) {
		for _, w := range workloadsIn(root) {
			pts := seriesOf(t, root, w)
			if len(pts) == 0 {
				continue
			}
			n++
			p := pts[len(pts)-1]
			sq, err := prepare(&filesOf(t, []point{p})[0], 0, map[string]int32{})
			if err != nil {
				t.Fatal(err)
			}
			k, bytes := 0, int64(0)
			sems := map[int64]int{}
			for x, ok := range sq.reduce {
				if ok {
					k++
					bytes += sq.events[sq.allocs[x]].Size
					sems[sq.events[sq.allocs[x+1]].Size]++
				}
			}
			t.Logf("%s %d: %d reduction buffers of %d requests, %d bytes; semaphores (bytes: count) %v", w, p.value, k, len(sq.allocs), bytes, sems)
			if k == 0 {
				t.Errorf("%s %d: no reduction buffer", w, p.value)
			}
		}
	}
	if n == 0 {
		noSeries(t, "no series")
	}
}

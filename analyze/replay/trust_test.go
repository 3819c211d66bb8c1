package replay

import (
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// TestRequestedTrust is the Requested half of the one trust rule
// (DecideTrust), on small snapshots of one rule each: a block whose
// requested_size is above its size, a block without a requested size,
// and sane ones (including what a request above the size on another
// device or in a free block must not change).
func TestRequestedTrust(t *testing.T) {
	const MiB = 1 << 20
	blk := func(addr snapshot.Addr, size, req int64, st snapshot.BlockState) snapshot.Block {
		return snapshot.Block{Address: addr, Size: size, RequestedSize: req, State: st}
	}
	seg := func(dev int, addr snapshot.Addr, blocks ...snapshot.Block) snapshot.Segment {
		var total int64
		for _, b := range blocks {
			total += b.Size
		}
		return snapshot.Segment{Device: dev, Address: addr, TotalSize: total, Type: "large", Blocks: blocks}
	}
	tests := []struct {
		name   string
		segs   []snapshot.Segment
		noReq  []int // Snapshot.NoRequestedSize
		device int
		want   stats.Exactness
		why    string // a part of RequestedWhy
	}{
		{"no segments", nil, nil, 0, stats.Exact, ""},
		{"requested below size", []snapshot.Segment{seg(0, 0x1000000, blk(0x1000000, 2*MiB, 2*MiB-100, snapshot.StateActiveAllocated))}, nil, 0, stats.Exact, ""},
		{"requested equal to size", []snapshot.Segment{seg(0, 0x1000000, blk(0x1000000, 2*MiB, 2*MiB, snapshot.StateActivePendingFree))}, nil, 0, stats.Exact, ""},
		{"requested above size", []snapshot.Segment{seg(0, 0x1000000,
			blk(0x1000000, 32*MiB, 1e15, snapshot.StateActiveAllocated), blk(0x3000000, 2*MiB, 3*MiB, snapshot.StateActiveAllocated))}, nil, 0, stats.Unknown,
			"2 active blocks request more bytes than they hold, 1000000000000000 bytes of the 33554432-byte block at 0x1000000"},
		{"pending free block above size", []snapshot.Segment{seg(0, 0x1000000, blk(0x1000000, 2*MiB, 2*MiB+1, snapshot.StateActivePendingFree))}, nil, 0, stats.Unknown,
			"1 active block requests more bytes than it holds"},
		// PyTorch leaves requested_size stale in free blocks: not a fault.
		{"stale requested size in a free block", []snapshot.Segment{seg(0, 0x1000000, blk(0x1000000, 2*MiB, 3*MiB, snapshot.StateInactive))}, nil, 0, stats.Exact, ""},
		{"fault on another device", []snapshot.Segment{seg(0, 0x1000000, blk(0x1000000, 2*MiB, 2*MiB, snapshot.StateActiveAllocated)),
			seg(1, 0x1000000, blk(0x1000000, 2*MiB, 3*MiB, snapshot.StateActiveAllocated))}, nil, 0, stats.Exact, ""},
		{"fault on this device", []snapshot.Segment{seg(0, 0x1000000, blk(0x1000000, 2*MiB, 2*MiB, snapshot.StateActiveAllocated)),
			seg(1, 0x1000000, blk(0x1000000, 2*MiB, 3*MiB, snapshot.StateActiveAllocated))}, nil, 1, stats.Unknown, "requests more bytes than it holds"},
		{"no requested size", []snapshot.Segment{seg(0, 0x1000000, blk(0x1000000, 2*MiB, 2*MiB, snapshot.StateActiveAllocated))}, []int{0}, 0, stats.Unknown,
			"gives no requested_size"},
		{"no requested size on another device", []snapshot.Segment{seg(0, 0x1000000, blk(0x1000000, 2*MiB, 2*MiB, snapshot.StateActiveAllocated))}, []int{1}, 0, stats.Exact, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Segments: tt.segs, NoRequestedSize: tt.noReq}
			got, why := stats.RequestedTrust(s, tt.device)
			if got != tt.want || !strings.Contains(why, tt.why) || (got == stats.Exact) != (why == "") {
				t.Errorf("RequestedTrust = %v, %q; want %v with %q", got, why, tt.want, tt.why)
			}
			// Every path to the verdict carries the same one.
			k := DecideTrust(s, tt.device, nil, nil)
			if k.Requested != got || k.RequestedWhy != why {
				t.Errorf("DecideTrust: Requested %v %q, RequestedTrust %v %q", k.Requested, k.RequestedWhy, got, why)
			}
			if c := stats.CurrentStats(s, tt.device).Known; c.Requested != got || c.RequestedWhy != why {
				t.Errorf("CurrentStats: Requested %v %q, RequestedTrust %v %q", c.Requested, c.RequestedWhy, got, why)
			}
			// Every requested_bytes figure follows the verdict; no other
			// figure moves.
			exact := stats.Known{Current: stats.Exact, History: stats.Exact, Requested: got}
			st := &stats.MemoryStats{Known: exact}
			for _, f := range st.Figures() {
				want := stats.Exact
				switch {
				case strings.HasPrefix(f.Key, "requested_bytes."):
					want = got
				case !strings.Contains(f.Key, "."):
					continue // scalars: their own rules
				}
				if f.Exactness != want {
					t.Errorf("%s: %v, want %v", f.Key, f.Exactness, want)
				}
			}
		})
	}
}

// TestKnownRequested: a requested figure is as trusted as the worse of
// Known.Requested and its column.
func TestKnownRequested(t *testing.T) {
	for _, tt := range []struct {
		req, col, want stats.Exactness
	}{
		{stats.Exact, stats.Exact, stats.Exact},
		{stats.Exact, stats.LowerBound, stats.LowerBound},
		{stats.Exact, stats.Unknown, stats.Unknown},
		{stats.Unknown, stats.Exact, stats.Unknown},
		{stats.Unknown, stats.LowerBound, stats.Unknown},
		{stats.LowerBound, stats.Exact, stats.LowerBound},
	} {
		k := stats.Known{Requested: tt.req, Current: tt.col, History: tt.col}
		if got := k.RequestedCurrent(); got != tt.want {
			t.Errorf("Requested %v, Current %v: RequestedCurrent %v, want %v", tt.req, tt.col, got, tt.want)
		}
		if got := k.RequestedHistory(); got != tt.want {
			t.Errorf("Requested %v, History %v: RequestedHistory %v, want %v", tt.req, tt.col, got, tt.want)
		}
	}
}

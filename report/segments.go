package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/tw"
	"github.com/snapview/snapview/analyze"
	"github.com/snapview/snapview/snapshot"
)

// MapWidth is the number of characters of a segment's block map.
const MapWidth = 24

// Segments is what `snapview segments` prints: every segment of the chosen
// devices, with totals per device and over all of them.
type Segments struct {
	Devices []SegmentsDevice
	// Total sums every segment of every device in Devices.
	Total analyze.SegmentUsage
}

// SegmentsDevice is the segments of one device.
type SegmentsDevice struct {
	Device   int
	Segments []SegmentRow
	Total    analyze.SegmentUsage
}

// SegmentRow is one segment: its usage, its block map and its blocks.
type SegmentRow struct {
	analyze.SegmentUsage
	// Map is the block map, MapWidth characters (see [BlockMap]).
	Map string
	// BlockList is the segment's blocks (shared with the snapshot).
	BlockList []snapshot.Block
}

// NewSegments collects the segments of the given devices of s, in file
// order (by address within a device).
func NewSegments(s *snapshot.Snapshot, devices []int) *Segments {
	r := &Segments{Devices: []SegmentsDevice{}}
	var all []analyze.SegmentUsage
	for _, d := range devices {
		us := analyze.SegmentUsages(s, d)
		dev := SegmentsDevice{Device: d, Segments: make([]SegmentRow, 0, len(us)), Total: analyze.SumSegments(us)}
		dev.Total.Device = d
		for _, u := range us {
			seg := &s.Segments[u.Index]
			dev.Segments = append(dev.Segments, SegmentRow{SegmentUsage: u, Map: BlockMap(seg, MapWidth), BlockList: seg.Blocks})
		}
		all = append(all, us...)
		r.Devices = append(r.Devices, dev)
	}
	r.Total = analyze.SumSegments(all)
	return r
}

// BlockMap draws a segment in width characters, each standing for
// 1/width of the segment's bytes:
//
//	'#'  at least half of it is live tensors (active_allocated blocks)
//	'+'  some of it is live tensors, less than half
//	'~'  no live tensor, but blocks freed by the program that another
//	     stream still uses (active_pending_free)
//	'.'  free: cached blocks (inactive)
func BlockMap(seg *snapshot.Segment, width int) string {
	if width <= 0 || seg.TotalSize <= 0 {
		return ""
	}
	live := make([]int64, width)
	pending := make([]int64, width)
	size := seg.TotalSize
	// bucket i covers [lo(i), lo(i+1)).
	lo := func(i int) int64 { return int64(float64(size) * float64(i) / float64(width)) }
	var off int64
	for _, b := range seg.Blocks {
		start, end := off, off+b.Size
		off = end
		var acc []int64
		switch b.State {
		case snapshot.StateActiveAllocated:
			acc = live
		case snapshot.StateActivePendingFree:
			acc = pending
		default:
			continue
		}
		first := int(float64(start) * float64(width) / float64(size))
		for i := max(first-1, 0); i < width && lo(i) < end; i++ {
			if o := min(end, lo(i+1)) - max(start, lo(i)); o > 0 {
				acc[i] += o
			}
		}
	}
	var sb strings.Builder
	for i := range width {
		n := lo(i+1) - lo(i)
		switch {
		case live[i] > 0 && 2*live[i] >= n:
			sb.WriteByte('#')
		case live[i] > 0:
			sb.WriteByte('+')
		case pending[i] > 0:
			sb.WriteByte('~')
		default:
			sb.WriteByte('.')
		}
	}
	return sb.String()
}

// internalPct is segsum's "(X% internal)": the share of the free bytes that
// is rounding slack inside live blocks.
func internalPct(u *analyze.SegmentUsage) string {
	free := u.FreeBytes()
	if free == 0 {
		return "0.0%"
	}
	return strconv.FormatFloat(float64(u.InternalFreeBytes())/float64(free)*100, 'f', 1, 64) + "%"
}

// usageLine is the one-line account of a set of segments.
func usageLine(u *analyze.SegmentUsage) string {
	slack := ""
	if n := u.InternalFreeBytes(); n != 0 {
		slack = fmt.Sprintf(" (%s of it rounding slack in live blocks)", FormatBytes(n))
	}
	return fmt.Sprintf("%s, %s reserved, %s allocated, %s free%s, largest free block %s",
		plural(u.Segments, "segment"), FormatBytes(u.Size), FormatBytes(u.RequestedBytes),
		FormatBytes(u.FreeBytes()), slack, FormatBytes(u.LargestFree))
}

// plural formats "1 segment", "2 segments", "3 entries", "2 keys", with
// thousands separators.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if stem, ok := strings.CutSuffix(noun, "y"); ok && !strings.HasSuffix(stem, "a") && !strings.HasSuffix(stem, "e") &&
		!strings.HasSuffix(stem, "o") {
		noun = stem + "ie"
	}
	return FormatInt(int64(n)) + " " + noun + "s"
}

// ofAll is k of n nouns: "the only entry", "all 3 entries", "2 of 3
// entries".
func ofAll(k, n int, noun string) string {
	switch {
	case k == n && n == 1:
		return "the only " + noun
	case k == n:
		return "all " + plural(n, noun)
	}
	return FormatInt(int64(k)) + " of " + plural(n, noun)
}

// WriteSegments writes r as text: for each device a line of totals and a
// table of its segments, then the legend.
//
// Allocated and Free split each segment as `python -m torch.cuda._memory_viz
// stats` does (torch/cuda/_memory_viz.py segsum): Allocated is the bytes
// live tensors requested, Free all the rest (cached free blocks, blocks
// pending free, and the rounding slack inside live blocks), so the totals
// equal its total_reserved, total_allocated and total_free.
func WriteSegments(w io.Writer, r *Segments) error {
	for i, d := range r.Devices {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(w, "Device %d: %s\n", d.Device, usageLine(&d.Total)); err != nil {
			return err
		}
		if len(d.Segments) == 0 {
			continue
		}
		t := newTable(w, tw.AlignLeft, tw.AlignRight, tw.AlignLeft, tw.AlignRight, tw.AlignRight,
			tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft)
		t.Header("Address", "Size", "Pool", "Stream", "Blocks", "Live", "Allocated", "Free", "Largest free", "Map")
		for _, s := range d.Segments {
			if err := t.Append(s.Addr.String(), FormatBytes(s.Size), statePoolLabel(s.Large, s.Pool, s.Expandable),
				strconv.FormatUint(s.Stream, 10), FormatInt(int64(s.Blocks)), FormatInt(int64(s.AllocatedBlocks)),
				FormatBytes(s.RequestedBytes), FormatBytes(s.FreeBytes()), FormatBytes(s.LargestFree), s.Map); err != nil {
				return err
			}
		}
		tot := &d.Total
		t.Footer("total", FormatBytes(tot.Size), "", "", FormatInt(int64(tot.Blocks)), FormatInt(int64(tot.AllocatedBlocks)),
			FormatBytes(tot.RequestedBytes), FormatBytes(tot.FreeBytes()), FormatBytes(tot.LargestFree), "")
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(r.Devices) > 1 {
		if _, err := fmt.Fprintf(w, "\nAll devices: %s\n", usageLine(&r.Total)); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, `
Allocated: bytes requested by live tensors. Free: the rest of the segment
(cached free blocks, blocks pending free, rounding slack in live blocks).
Live: blocks holding a live tensor. Map: one character per 1/%d of the
segment: '#' half or more live tensors, '+' some live tensors, '~' freed but
still used by another stream, '.' free.
`, MapWidth)
	return err
}

// segmentsJSON and the types below are the --json schema of `snapview
// segments`. Byte figures are in bytes, unrounded.
type segmentsJSON struct {
	Devices []segmentsDeviceJSON `json:"devices"`
	Totals  usageJSON            `json:"totals"`
}

type segmentsDeviceJSON struct {
	Device   int           `json:"device"`
	Segments []segmentJSON `json:"segments"`
	Totals   usageJSON     `json:"totals"`
}

type usageJSON struct {
	Segments          int   `json:"segments"`
	Blocks            int   `json:"blocks"`
	AllocatedBlocks   int   `json:"allocated_blocks"`
	PendingFreeBlocks int   `json:"pending_free_blocks"`
	InactiveBlocks    int   `json:"inactive_blocks"`
	ReservedBytes     int64 `json:"reserved_bytes"`
	AllocatedBytes    int64 `json:"allocated_bytes"`
	RequestedBytes    int64 `json:"requested_bytes"`
	PendingFreeBytes  int64 `json:"pending_free_bytes"`
	InactiveBytes     int64 `json:"inactive_bytes"`
	FreeBytes         int64 `json:"free_bytes"`
	InternalFreeBytes int64 `json:"internal_free_bytes"`
	LargestFreeBytes  int64 `json:"largest_free_bytes"`
}

type segmentJSON struct {
	Address    uint64   `json:"address"`
	Pool       string   `json:"pool"`
	PoolID     [2]int64 `json:"pool_id"`
	Stream     uint64   `json:"stream"`
	Expandable bool     `json:"expandable"`
	usageJSON
	Map       string      `json:"map"`
	BlockList []blockJSON `json:"block_list"`
}

type blockJSON struct {
	Address       uint64 `json:"address"`
	Size          int64  `json:"size"`
	RequestedSize int64  `json:"requested_size"`
	State         string `json:"state"`
}

func newUsageJSON(u *analyze.SegmentUsage) usageJSON {
	return usageJSON{
		Segments:          u.Segments,
		Blocks:            u.Blocks,
		AllocatedBlocks:   u.AllocatedBlocks,
		PendingFreeBlocks: u.PendingFreeBlocks,
		InactiveBlocks:    u.InactiveBlocks,
		ReservedBytes:     u.Size,
		AllocatedBytes:    u.AllocatedBytes,
		RequestedBytes:    u.RequestedBytes,
		PendingFreeBytes:  u.PendingFreeBytes,
		InactiveBytes:     u.InactiveBytes,
		FreeBytes:         u.FreeBytes(),
		InternalFreeBytes: u.InternalFreeBytes(),
		LargestFreeBytes:  u.LargestFree,
	}
}

// WriteSegmentsJSON writes r as indented JSON: per device its segments
// (with every block) and totals, then the totals over all devices. Field
// names follow the snapshot's and memory_stats()'s; requested_bytes is
// what _memory_viz stats calls allocated.
func WriteSegmentsJSON(w io.Writer, r *Segments) error {
	out := segmentsJSON{Devices: []segmentsDeviceJSON{}, Totals: newUsageJSON(&r.Total)}
	for _, d := range r.Devices {
		dj := segmentsDeviceJSON{Device: d.Device, Segments: []segmentJSON{}, Totals: newUsageJSON(&d.Total)}
		for _, s := range d.Segments {
			pool := "small"
			if s.Large {
				pool = "large"
			}
			sj := segmentJSON{
				Address:    uint64(s.Addr),
				Pool:       pool,
				PoolID:     s.Pool,
				Stream:     s.Stream,
				Expandable: s.Expandable,
				usageJSON:  newUsageJSON(&s.SegmentUsage),
				Map:        s.Map,
				BlockList:  make([]blockJSON, 0, len(s.BlockList)),
			}
			for _, b := range s.BlockList {
				sj.BlockList = append(sj.BlockList, blockJSON{uint64(b.Address), b.Size, b.RequestedSize, b.State.String()})
			}
			dj.Segments = append(dj.Segments, sj)
		}
		out.Devices = append(out.Devices, dj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

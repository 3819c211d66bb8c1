package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/snapview/snapview/analysis"

	"github.com/olekukonko/tablewriter/tw"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// MapWidth is the number of characters of a segment's block map.
const MapWidth = 24

// Segments is what `snapview segments` prints: every segment of the chosen
// devices, with totals per device and over all of them.
type Segments struct {
	Devices []SegmentsDevice
	// Notes say what the file lacked that replay.Complete put back
	// (inactive blocks, segments), the same words the summary uses.
	Notes []string
	// Total sums every segment of every device in Devices.
	Total replay.SegmentUsage
}

// SegmentsDevice is the segments of one device.
type SegmentsDevice struct {
	Device   int
	Segments []SegmentRow
	Total    replay.SegmentUsage
	// Known holds the device's verdict on its requested sizes
	// (Known.Requested and RequestedWhy, from stats.RequestedTrust); its
	// other fields are unset. The Requested and Free incl. slack figures
	// show "?" (null in JSON) when it is Unknown.
	Known stats.Known
	// PrivatePools are the figures of the device's private pools, from
	// [Segments.AddPools]; nil when it has none.
	PrivatePools []stats.PoolFigures
}

// SegmentRow is one segment: its usage, its block map and its blocks.
type SegmentRow struct {
	replay.SegmentUsage
	// Map is the block map, MapWidth characters (see [BlockMap]).
	Map string
	// BlockList is the segment's blocks (shared with the snapshot).
	BlockList []snapshot.Block
}

// NewSegments collects the segments of the given devices of s, in file
// order (by address within a device).
func NewSegments(s *snapshot.Snapshot, devices []int) *Segments {
	r := &Segments{Devices: []SegmentsDevice{}, Notes: fileLines(&Summary{
		InactiveBlocksMissing: s.InactiveBlocksMissing, SegmentsFromTrace: s.SegmentsFromTrace,
	})}
	var all []replay.SegmentUsage
	for _, d := range devices {
		us := replay.SegmentUsages(s, d)
		dev := SegmentsDevice{Device: d, Segments: make([]SegmentRow, 0, len(us)), Total: replay.SumSegments(us)}
		dev.Total.Device = d
		dev.Known.Requested, dev.Known.RequestedWhy = stats.RequestedTrust(s, d)
		for _, u := range us {
			seg := &s.Segments[u.Index]
			dev.Segments = append(dev.Segments, SegmentRow{SegmentUsage: u, Map: BlockMap(seg, MapWidth), BlockList: seg.Blocks})
		}
		all = append(all, us...)
		r.Devices = append(r.Devices, dev)
	}
	r.Total = replay.SumSegments(all)
	return r
}

// AddPools gives each device of r the figures of its private pools from
// f, the analysis of the same snapshot (analysis.File.Pools: a device is
// replayed only when it has private pools and a trace).
func (r *Segments) AddPools(f *analysis.File) {
	for k := range r.Devices {
		r.Devices[k].PrivatePools = f.Pools(r.Devices[k].Device)
	}
}

// requestedKnown is the verdict on the requested sizes of all of r's
// devices: Unknown, with the first device's reason, when one is.
func (r *Segments) requestedKnown() stats.Known {
	k := stats.Known{Requested: stats.Exact}
	for _, d := range r.Devices {
		if d.Known.Requested == stats.Unknown {
			return stats.Known{Requested: stats.Unknown, RequestedWhy: fmt.Sprintf("device %d: %s", d.Device, d.Known.RequestedWhy)}
		}
	}
	return k
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
func internalPct(u *replay.SegmentUsage) string {
	free := u.FreeBytes()
	if free == 0 {
		return "0.0%"
	}
	return strconv.FormatFloat(float64(u.InternalFreeBytes())/float64(free)*100, 'f', 1, 64) + "%"
}

// usageLine is the account of a set of segments, in two lines (the
// second indented): their bytes as `_memory_viz stats` splits them. The
// requested bytes, and the free ones taken from them, are "unknown" when
// k.Requested is.
func usageLine(u *replay.SegmentUsage, k stats.Known) string {
	if k.Requested == stats.Unknown {
		return fmt.Sprintf("%s, %s reserved, largest free block %s;\n  requested by live allocations: ?, free incl. rounding slack: ?",
			units.Plural(u.Segments, "segment"), units.Bytes(u.Size), units.Bytes(u.LargestFree))
	}
	slack := ""
	if n := u.InternalFreeBytes(); n != 0 {
		slack = fmt.Sprintf(" incl. %s rounding slack in live blocks", units.Bytes(n))
	}
	return fmt.Sprintf("%s, %s reserved, largest free block %s;\n  %s requested by live allocations, %s free%s",
		units.Plural(u.Segments, "segment"), units.Bytes(u.Size), units.Bytes(u.LargestFree),
		units.Bytes(u.RequestedBytes), units.Bytes(u.FreeBytes()), slack)
}

// summaryLine says how the figures of a set of segments relate to those
// of `snapview summary`, which counts whole blocks.
func summaryLine(u *replay.SegmentUsage) string {
	pending := ""
	if u.PendingFreeBytes > 0 {
		pending = fmt.Sprintf(", %s pending free", units.Bytes(u.PendingFreeBytes))
	}
	return fmt.Sprintf("snapview summary: %s allocated (requested + slack), %s free (cached blocks only)%s.",
		units.Bytes(u.AllocatedBytes), units.Bytes(u.InactiveBytes), pending)
}

// minMapWidth is the narrowest map the segments table draws to keep
// within the width; below it, columns are left out.
const minMapWidth = 10

// WriteSegments writes r as text: for each device its totals, a table
// of its segments and how its totals relate to `snapview summary`'s, then
// the legend.
//
// Requested and Free split each segment as `python -m torch.cuda._memory_viz
// stats` does (torch/cuda/_memory_viz.py segsum, which calls them allocated
// and free): Requested is the bytes live tensors requested, Free all the
// rest (cached free blocks, blocks pending free, and the rounding slack
// inside live blocks), so the totals equal its total_reserved,
// total_allocated and total_free. The Stream column is left out for a
// device whose segments are all on the default stream (0).
func WriteSegments(w io.Writer, r *Segments) error {
	ew := &kit.ErrWriter{W: w}
	for i, d := range r.Devices {
		if i > 0 {
			ew.Printf("\n")
		}
		ew.Printf("Device %d: %s.\n", d.Device, usageLine(&d.Total, d.Known))
		for _, n := range r.Notes {
			ew.Printf("%s", kit.WrapAt("  ", n, 100))
		}
		if n := kit.RequestedNote(d.Known); n != "" {
			ew.Printf("%s", kit.WrapAt("  ", n, 100))
		}
		if len(d.Segments) == 0 || ew.Err != nil {
			continue
		}
		streams := false
		for _, s := range d.Segments {
			streams = streams || s.Stream != 0
		}
		// The columns: the Stream column only when some segment is on
		// another stream than the default.
		const streamCol = 3
		cut := func(row []string) []string { return kit.DropColumn(row, streamCol, !streams) }
		align := kit.DropColumn([]tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight,
			tw.AlignRight, tw.AlignRight, tw.AlignLeft}, streamCol, !streams)
		header := cut([]string{"Address", "Size", "Pool", "Stream", "Live/\nblocks", "Requested", "Free incl.\nslack", "Largest\nfree", "Map"})
		tot := &d.Total
		footer := cut([]string{"total", units.Bytes(tot.Size), "", "", units.Int(tot.AllocatedBlocks) + "/" + units.Int(tot.Blocks),
			kit.RequestedBytes(tot.RequestedBytes, d.Known), kit.RequestedBytes(tot.FreeBytes(), d.Known), units.Bytes(tot.LargestFree), ""})
		rows := make([][]string, len(d.Segments))
		for k, s := range d.Segments {
			rows[k] = cut([]string{s.Addr.String(), units.Bytes(s.Size), kit.PoolLabel(s.Large, s.Pool, s.Expandable),
				strconv.FormatUint(s.Stream, 10), units.Int(s.AllocatedBlocks) + "/" + units.Int(s.Blocks),
				kit.RequestedBytes(s.RequestedBytes, d.Known), kit.RequestedBytes(s.FreeBytes(), d.Known), units.Bytes(s.LargestFree), s.Map})
		}
		// A narrower map where the table would pass segmentsWidth.
		mapWidth := MapWidth
		if over := kit.TableWidth(append(rows, header, footer)) - kit.Width(w); over > 0 {
			mapWidth = max(minMapWidth, MapWidth-over)
			for k, s := range d.Segments {
				rows[k][len(rows[k])-1] = BlockMap(&snapshot.Segment{TotalSize: s.Size, Blocks: s.BlockList}, mapWidth)
			}
		}
		// Still too wide: leave out the columns least needed.
		drop := []int{len(header) - 1}
		for _, name := range []string{"Stream", "Largest\nfree", "Free incl.\nslack"} {
			if c := slices.Index(header, name); c >= 0 {
				drop = append(drop, c)
			}
		}
		ft := kit.FitColumns(kit.Width(w), header, align, rows, footer, drop...)
		if err := ft.Render(w, ""); err != nil {
			return err
		}
		ew.Printf("%s\n", summaryLine(tot))
		for _, line := range PoolLines(d.PrivatePools) {
			ew.Printf("%s", kit.WrapAt("  ", line, 100))
		}
	}
	if len(r.Devices) > 1 {
		ew.Printf("\nAll devices: %s.\n", usageLine(&r.Total, r.requestedKnown()))
	}
	ew.Printf(`
Requested: bytes requested by live allocations (what _memory_viz stats calls allocated). Free incl. slack:
the rest of the segment (cached free blocks, blocks pending free, rounding slack in live blocks).
Live/blocks: blocks holding a live allocation, of all blocks. Stream: shown when a segment is on a stream
other than the default (0). Map: %d characters per segment (fewer if the table would pass %d columns),
each an equal share of it: '#' half or more live allocations, '+' some, '~' freed but still used by another
stream, '.' free.
`, MapWidth, kit.Width(w))
	return ew.Err
}

// segmentsJSON and the types below are the --json schema of `snapview
// segments`. Byte figures are in bytes, unrounded.
type segmentsJSON struct {
	Notes   []string             `json:"notes,omitempty"`
	Devices []segmentsDeviceJSON `json:"devices"`
	Totals  usageJSON            `json:"totals"`
}

type segmentsDeviceJSON struct {
	Device   int           `json:"device"`
	Segments []segmentJSON `json:"segments"`
	Totals   usageJSON     `json:"totals"`
	// PrivatePools are the private pools' figures (left out when none).
	PrivatePools []poolFiguresJSON `json:"private_pools,omitempty"`
	// Requested is the verdict on the file's requested sizes ("exact" or
	// "unknown", and why): when unknown, requested_bytes, free_bytes and
	// internal_free_bytes are null (block_list keeps the file's
	// requested_size).
	Requested kit.HistoryJSON `json:"requested"`
}

type usageJSON struct {
	Segments          int    `json:"segments"`
	Blocks            int    `json:"blocks"`
	AllocatedBlocks   int    `json:"allocated_blocks"`
	PendingFreeBlocks int    `json:"pending_free_blocks"`
	InactiveBlocks    int    `json:"inactive_blocks"`
	ReservedBytes     int64  `json:"reserved_bytes"`
	AllocatedBytes    int64  `json:"allocated_bytes"`
	RequestedBytes    *int64 `json:"requested_bytes"` // null when unknown
	PendingFreeBytes  int64  `json:"pending_free_bytes"`
	InactiveBytes     int64  `json:"inactive_bytes"`
	FreeBytes         *int64 `json:"free_bytes"`          // null when unknown
	InternalFreeBytes *int64 `json:"internal_free_bytes"` // null when unknown
	LargestFreeBytes  int64  `json:"largest_free_bytes"`
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

func newUsageJSON(u *replay.SegmentUsage, k stats.Known) usageJSON {
	return usageJSON{
		Segments:          u.Segments,
		Blocks:            u.Blocks,
		AllocatedBlocks:   u.AllocatedBlocks,
		PendingFreeBlocks: u.PendingFreeBlocks,
		InactiveBlocks:    u.InactiveBlocks,
		ReservedBytes:     u.Size,
		AllocatedBytes:    u.AllocatedBytes,
		RequestedBytes:    kit.RequestedJSON(u.RequestedBytes, k),
		PendingFreeBytes:  u.PendingFreeBytes,
		InactiveBytes:     u.InactiveBytes,
		FreeBytes:         kit.RequestedJSON(u.FreeBytes(), k),
		InternalFreeBytes: kit.RequestedJSON(u.InternalFreeBytes(), k),
		LargestFreeBytes:  u.LargestFree,
	}
}

// WriteSegmentsJSON writes r as indented JSON: per device its segments
// (with every block) and totals, then the totals over all devices. Field
// names follow the snapshot's and memory_stats()'s; requested_bytes is
// what _memory_viz stats calls allocated.
func WriteSegmentsJSON(w io.Writer, r *Segments) error {
	out := segmentsJSON{Notes: r.Notes, Devices: []segmentsDeviceJSON{}, Totals: newUsageJSON(&r.Total, r.requestedKnown())}
	for _, d := range r.Devices {
		dj := segmentsDeviceJSON{Device: d.Device, Segments: []segmentJSON{}, Totals: newUsageJSON(&d.Total, d.Known),
			Requested: kit.RequestedVerdictJSON(d.Known), PrivatePools: newPoolsJSON(d.PrivatePools)}
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
				usageJSON:  newUsageJSON(&s.SegmentUsage, d.Known),
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
	return kit.WriteJSON(w, out)
}

// WriteSegmentsOf writes `snapview segments` of devices of the file f
// analyses, each device with its private pools (AddPools): as JSON
// (WriteSegmentsJSON) or text (WriteSegments). As text a file that holds
// pinned host memory only (record_cuda=False) shows that memory
// (WriteNothing) instead of an empty device 0. Errors are w's.
func WriteSegmentsOf(w io.Writer, f *analysis.File, devices []int, json bool) error {
	s := f.Snap
	if !json && hostview.Has(s) && len(s.Devices()) == 0 {
		return WriteNothing(w, f, "the snapshot")
	}
	r := NewSegments(s, devices)
	r.AddPools(f)
	if json {
		return WriteSegmentsJSON(w, r)
	}
	return WriteSegments(w, r)
}

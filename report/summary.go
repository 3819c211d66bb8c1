package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter/tw"
	"github.com/snapview/snapview/analyze"
	"github.com/snapview/snapview/snapshot"
)

// Summary is what `snapview summary --format text` and `--format json`
// print: for each device the memory_stats() figures (with their
// exactness), the current use per pool, and what the file holds.
type Summary struct {
	// File is the snapshot's path as the user gave it.
	File string
	// Format, Legacy and Settings describe the file (see snapshot.Snapshot).
	Format   snapshot.Format
	Legacy   bool
	Settings *snapshot.AllocatorSettings
	// NumDevices is the number of devices the allocator recorded
	// (len(device_traces)), 0 when the file has no device_traces.
	NumDevices int
	Devices    []DeviceSummary
	// Warnings are the decoder's warnings about the file (JSON only: the
	// CLI prints them to stderr).
	Warnings []string
}

// DeviceSummary is the summary of one device.
type DeviceSummary struct {
	Device int
	// Stats are the memory_stats() figures: Cur Usage from the segments,
	// the rest from a replay of the trace when one could be made.
	Stats *analyze.MemoryStats
	// Pools is the current use per pool (default large and small pools,
	// then private pools), Total their sum.
	Pools []analyze.SegmentUsage
	Total analyze.SegmentUsage
	// Coverage says what the trace holds.
	Coverage analyze.Coverage
}

// NewSummary gathers the summary of s for the devices of stats (one
// MemoryStats per device, in the order to print).
func NewSummary(file string, s *snapshot.Snapshot, stats []*analyze.MemoryStats) *Summary {
	sum := &Summary{
		File:       file,
		Format:     s.Format,
		Legacy:     s.Legacy,
		Settings:   s.Settings,
		NumDevices: len(s.Traces),
		Devices:    []DeviceSummary{},
		Warnings:   append([]string{}, s.Warnings...),
	}
	for _, st := range stats {
		us := analyze.SegmentUsages(s, st.Device)
		total := analyze.SumSegments(us)
		total.Device = st.Device
		sum.Devices = append(sum.Devices, DeviceSummary{
			Device:   st.Device,
			Stats:    st,
			Pools:    analyze.PoolUsages(us),
			Total:    total,
			Coverage: analyze.TraceCoverage(s, st.Device),
		})
	}
	return sum
}

// summaryPoolLabel names a pool row: "large", "small", or
// "private (1, 0) large" for a CUDA-graph or MemPool pool.
func summaryPoolLabel(u *analyze.SegmentUsage) string {
	s := "small"
	if u.Large {
		s = "large"
	}
	if !u.Pool.IsDefault() {
		s = "private " + u.Pool.String() + " " + s
	}
	return s
}

// WriteSummaryText writes the overview a person reads first: what the file
// holds, then per device a table of the current use per pool and the
// peaks when the trace allows them.
func WriteSummaryText(w io.Writer, sum *Summary) error {
	ew := &errWriter{w: w}
	ew.printf("%s: %s\n", sum.File, describeFormat(sum))
	if st := sum.Settings; st != nil {
		split := "unlimited"
		if st.MaxSplitSize >= 0 {
			split = FormatBytes(st.MaxSplitSize)
		}
		exp := "off"
		if st.ExpandableSegments {
			exp = "on"
		}
		ew.printf("Allocator: expandable_segments %s, max_split_size %s, PYTORCH_CUDA_ALLOC_CONF=%q\n", exp, split, st.Conf)
	}
	for _, d := range sum.Devices {
		ew.printf("\nDevice %d\n", d.Device)
		t := &d.Total
		if t.Segments == 0 {
			ew.printf("  No segments: the allocator held no GPU memory on this device when the snapshot was taken.\n")
		} else {
			ew.printf("  %s reserved in %s; %s allocated to %s; %s free inside the segments (largest free block %s).\n",
				FormatBytes(t.Size), plural(t.Segments, "segment"),
				FormatBytes(t.AllocatedBytes), plural(t.AllocatedBlocks, "tensor"),
				FormatBytes(t.InactiveBytes), FormatBytes(t.LargestFree))
			if t.PendingFreeBlocks > 0 {
				ew.printf("  %s in %s freed by the program but still in use by another stream (pending free).\n",
					FormatBytes(t.PendingFreeBytes), plural(t.PendingFreeBlocks, "block"))
			}
			if ew.err == nil {
				ew.err = writePoolTable(w, &d)
			}
		}
		for _, line := range historyLines(&d) {
			ew.printf("  %s\n", line)
		}
	}
	return ew.err
}

// writePoolTable writes the per-pool table of one device.
func writePoolTable(w io.Writer, d *DeviceSummary) error {
	t := newTable(w, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight,
		tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight)
	t.Header("Pool", "Reserved", "Allocated", "Active", "Requested", "Segments", "Blocks", "Tensors", "Free", "Largest free")
	row := func(label string, u *analyze.SegmentUsage) []string {
		return []string{label, FormatBytes(u.Size), FormatBytes(u.AllocatedBytes), FormatBytes(u.ActiveBytes()),
			FormatBytes(u.ActiveRequestedBytes()), FormatInt(int64(u.Segments)), FormatInt(int64(u.Blocks)),
			FormatInt(int64(u.AllocatedBlocks)), FormatBytes(u.InactiveBytes), FormatBytes(u.LargestFree)}
	}
	for i := range d.Pools {
		if err := t.Append(row(summaryPoolLabel(&d.Pools[i]), &d.Pools[i])); err != nil {
			return err
		}
	}
	t.Footer(row("total", &d.Total))
	return t.Render()
}

// historyLines explains what the trace of a device holds and what that
// means for the Peak and Tot figures.
func historyLines(d *DeviceSummary) []string {
	c := &d.Coverage
	var lines []string
	switch {
	case !c.HasTraces:
		lines = append(lines, "Trace: none in the file (a bare segment list): only the current state is known.")
	case c.Entries == 0:
		lines = append(lines, "Trace: none recorded for this device: only the current state is known.",
			"Call torch.cuda.memory._record_memory_history() before the first allocation to record one.")
	default:
		span := ""
		if c.FirstUS != 0 && c.LastUS >= c.FirstUS {
			span = " over " + time.Duration((c.LastUS-c.FirstUS)*int64(time.Microsecond)).Round(time.Millisecond).String()
		}
		if c.FromStart() {
			lines = append(lines, fmt.Sprintf("Trace: %s%s, from the first allocation on: every free and every live block", plural(c.Entries, "entry"), span),
				"has its alloc in the trace, so peaks and totals can be replayed.")
		} else {
			var why []string
			if c.OrphanFrees > 0 {
				why = append(why, plural(c.OrphanFrees, "free")+" of blocks allocated before it")
			}
			if c.UntracedBlocks > 0 {
				why = append(why, plural(c.UntracedBlocks, "live block")+" it never allocated")
			}
			lines = append(lines, fmt.Sprintf("Trace: %s%s, missing the start of the run (%s):", plural(c.Entries, "entry"), span, strings.Join(why, ", ")),
				"recording started late or the ring buffer (max_entries) wrapped, so peaks and totals are lower bounds at best.")
		}
	}
	switch {
	case c.Entries > 0 && c.TraceStacks > 0:
		lines = append(lines, fmt.Sprintf("Stacks: on %s of %s trace entries and %s of %s live blocks.",
			FormatInt(int64(c.TraceStacks)), FormatInt(int64(c.Entries)), FormatInt(int64(c.LiveBlockStacks)), FormatInt(int64(c.LiveBlocks))))
	case c.LiveBlockStacks > 0:
		lines = append(lines, fmt.Sprintf("Stacks: on %s of %s live blocks, none on trace entries.",
			FormatInt(int64(c.LiveBlockStacks)), FormatInt(int64(c.LiveBlocks))))
	default:
		lines = append(lines, "Stacks: none recorded (context=None, or the blocks predate recording).")
	}
	if c.OOMs > 0 {
		lines = append(lines, fmt.Sprintf("Out of memory: the trace holds %s.", plural(c.OOMs, "oom entry")))
	}
	st := d.Stats
	switch st.Known.History {
	case analyze.Exact:
		lines = append(lines, fmt.Sprintf("Peak: %s allocated, %s reserved (exact).",
			FormatBytes(st.AllocatedBytes[analyze.PoolAll].Peak), FormatBytes(st.ReservedBytes[analyze.PoolAll].Peak)))
	case analyze.LowerBound:
		lines = append(lines, fmt.Sprintf("Peak: at least %s allocated, at least %s reserved (the trace misses the start).",
			FormatBytes(st.AllocatedBytes[analyze.PoolAll].Peak), FormatBytes(st.ReservedBytes[analyze.PoolAll].Peak)))
	}
	return lines
}

// describeFormat is the one-line description of the file.
func describeFormat(sum *Summary) string {
	f := sum.Format
	var parts []string
	switch f.Encoding {
	case "pickle":
		parts = append(parts, "pickle protocol "+strconv.Itoa(f.PickleProtocol))
	case "":
	default:
		parts = append(parts, f.Encoding)
	}
	if f.Compression != "" {
		parts = append(parts, f.Compression+"-compressed")
	}
	if f.Bytes > 0 {
		parts = append(parts, FormatBytes(f.Bytes))
	}
	if sum.Legacy {
		parts = append(parts, "a bare segment list (torch.cuda.memory_snapshot())")
	}
	if sum.NumDevices > 0 {
		parts = append(parts, plural(sum.NumDevices, "device")+" recorded")
	}
	if len(parts) == 0 {
		return "snapshot"
	}
	return strings.Join(parts, ", ")
}

// summaryJSON and the types below are the --format json schema of
// `snapview summary`. Byte figures are bytes, unrounded.
type summaryJSON struct {
	File     string              `json:"file"`
	Format   formatJSON          `json:"format"`
	Devices  []deviceSummaryJSON `json:"devices"`
	Warnings []string            `json:"warnings"`
}

type formatJSON struct {
	Encoding       string `json:"encoding"`
	PickleProtocol int    `json:"pickle_protocol,omitempty"`
	Compression    string `json:"compression,omitempty"`
	Bytes          int64  `json:"bytes"`
	Legacy         bool   `json:"legacy_segment_list"`
	Devices        int    `json:"devices_recorded"`
}

type deviceSummaryJSON struct {
	Device int `json:"device"`
	// MemoryStats is keyed by torch.cuda.memory_stats() key.
	MemoryStats map[string]figureJSON `json:"memory_stats"`
	Pools       []poolJSON            `json:"pools"`
	Total       poolJSON              `json:"total"`
	Trace       traceJSON             `json:"trace"`
}

// figureJSON is one memory_stats() figure: value is null when unknown.
type figureJSON struct {
	Value     *int64 `json:"value"`
	Exactness string `json:"exactness"`
}

type poolJSON struct {
	Pool             string   `json:"pool"`
	PoolID           [2]int64 `json:"pool_id"`
	ReservedBytes    int64    `json:"reserved_bytes"`
	AllocatedBytes   int64    `json:"allocated_bytes"`
	ActiveBytes      int64    `json:"active_bytes"`
	RequestedBytes   int64    `json:"requested_bytes"`
	Segments         int      `json:"segments"`
	Blocks           int      `json:"blocks"`
	Allocations      int      `json:"allocations"`
	PendingFree      int      `json:"pending_free_blocks"`
	FreeBytes        int64    `json:"free_bytes"`
	LargestFreeBytes int64    `json:"largest_free_bytes"`
}

type traceJSON struct {
	Recorded        bool  `json:"recorded"`
	Entries         int   `json:"entries"`
	FirstTimeUS     int64 `json:"first_time_us"`
	LastTimeUS      int64 `json:"last_time_us"`
	FromStart       bool  `json:"from_start"`
	OrphanFrees     int   `json:"orphan_frees"`
	UntracedBlocks  int   `json:"untraced_live_blocks"`
	EntryStacks     int   `json:"entries_with_stacks"`
	LiveBlocks      int   `json:"live_blocks"`
	LiveBlockStacks int   `json:"live_blocks_with_stacks"`
	OOMs            int   `json:"oom_entries"`
}

func newPoolJSON(label string, u *analyze.SegmentUsage) poolJSON {
	return poolJSON{
		Pool:             label,
		PoolID:           u.Pool,
		ReservedBytes:    u.Size,
		AllocatedBytes:   u.AllocatedBytes,
		ActiveBytes:      u.ActiveBytes(),
		RequestedBytes:   u.ActiveRequestedBytes(),
		Segments:         u.Segments,
		Blocks:           u.Blocks,
		Allocations:      u.AllocatedBlocks,
		PendingFree:      u.PendingFreeBlocks,
		FreeBytes:        u.InactiveBytes,
		LargestFreeBytes: u.LargestFree,
	}
}

// WriteSummaryJSON writes sum as indented JSON. Each device carries every
// torch.cuda.memory_stats() figure under its flat key with its exactness
// ("exact", "lower_bound", or "unknown" with a null value), the current
// use per pool, and what the trace holds.
func WriteSummaryJSON(w io.Writer, sum *Summary) error {
	out := summaryJSON{
		File: sum.File,
		Format: formatJSON{
			Encoding:       sum.Format.Encoding,
			PickleProtocol: sum.Format.PickleProtocol,
			Compression:    sum.Format.Compression,
			Bytes:          sum.Format.Bytes,
			Legacy:         sum.Legacy,
			Devices:        sum.NumDevices,
		},
		Devices:  []deviceSummaryJSON{},
		Warnings: append([]string{}, sum.Warnings...),
	}
	for _, d := range sum.Devices {
		dj := deviceSummaryJSON{
			Device:      d.Device,
			MemoryStats: map[string]figureJSON{},
			Pools:       []poolJSON{},
			Total:       newPoolJSON("total", &d.Total),
		}
		for _, f := range d.Stats.Figures() {
			fj := figureJSON{Exactness: f.Exactness.String()}
			if f.Exactness != analyze.Unknown {
				v := f.Value
				fj.Value = &v
			}
			dj.MemoryStats[f.Key] = fj
		}
		for i := range d.Pools {
			dj.Pools = append(dj.Pools, newPoolJSON(summaryPoolLabel(&d.Pools[i]), &d.Pools[i]))
		}
		c := &d.Coverage
		dj.Trace = traceJSON{
			Recorded:        c.HasTraces,
			Entries:         c.Entries,
			FirstTimeUS:     c.FirstUS,
			LastTimeUS:      c.LastUS,
			FromStart:       c.FromStart(),
			OrphanFrees:     c.OrphanFrees,
			UntracedBlocks:  c.UntracedBlocks,
			EntryStacks:     c.TraceStacks,
			LiveBlocks:      c.LiveBlocks,
			LiveBlockStacks: c.LiveBlockStacks,
			OOMs:            c.OOMs,
		}
		out.Devices = append(out.Devices, dj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

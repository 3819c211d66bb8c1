package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/snapview/snapview/analyze/allocator"

	"github.com/olekukonko/tablewriter/tw"
	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
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
	// (len(device_traces)), 0 when the file has no device_traces;
	// IdleDevices are those of them with neither segments nor trace
	// entries (info.Info.IdleDevices).
	NumDevices  int
	IdleDevices []int
	Devices     []DeviceSummary
	// Warnings are the decoder's warnings about the file (JSON only: the
	// CLI prints them to stderr).
	Warnings []string
	// InactiveBlocksMissing and SegmentsFromTrace are the snapshot's (see
	// replay.Complete): the text says them under each device.
	InactiveBlocksMissing bool `json:"inactive_blocks_missing"`
	SegmentsFromTrace     bool `json:"segments_from_trace"`
	// Host is the pinned host memory (info.Host), in its own section.
	Host info.HostMemory
	// Rounding is the allocator's rounding inferred from the file; the
	// text names it when it is not CUDA's.
	Rounding allocator.InferredRounding
}

// DeviceSummary is the summary of one device.
type DeviceSummary struct {
	Device int
	// Stats are the memory_stats() figures: Cur Usage from the segments,
	// the rest from a replay of the trace when one could be made.
	Stats *stats.MemoryStats
	// Pools is the current use per pool (default large and small pools,
	// then private pools), Total their sum.
	Pools []replay.SegmentUsage
	Total replay.SegmentUsage
	// Coverage says what the trace holds; Info is the device as `snapview
	// info` describes it (its Coverage kind and evidence), nil for a
	// device with neither segments nor trace entries.
	Coverage replay.Coverage
	Info     *info.DeviceInfo
	// PrivatePools are the figures of the device's private pools
	// (analysis.File.Pools), nil when it has none.
	PrivatePools []stats.PoolFigures

	hostHistory bool // the file has pinned host memory trace entries
}

// NewSummary gathers the summary of the file f for the devices of stats
// (one MemoryStats per device, in the order to print, from f.Stats or
// stats.CurrentStats). The coverage of each device's trace comes from f's
// replay of it when f has made one, else from a pass over the trace.
func NewSummary(file string, f *analysis.File, stats []*stats.MemoryStats) *Summary {
	s := f.Snap
	sum := &Summary{
		File:       file,
		Format:     s.Format,
		Legacy:     s.Legacy,
		Settings:   s.Settings,
		NumDevices: len(s.Traces),
		Devices:    []DeviceSummary{},
		Warnings:   append([]string{}, s.Warnings...),

		InactiveBlocksMissing: s.InactiveBlocksMissing,
		SegmentsFromTrace:     s.SegmentsFromTrace,
		Host:                  *f.Host(),
		Rounding:              allocator.InferRounding(s, -1),
	}
	// The coverage of each trace as `snapview info` tells it (from the
	// start, wrapped, started late, state only), from the replays the
	// stats were made with: they are lower bounds when the replay had to
	// seed blocks older than the trace.
	seeded := map[int]bool{}
	for _, st := range stats {
		seeded[st.Device] = st.Known.Seeded
	}
	infos := f.DeviceInfos(seeded)
	have := map[int]bool{}
	for _, d := range s.Devices() {
		have[d] = true
	}
	sum.IdleDevices = []int{}
	for d := range s.Traces {
		if !have[d] {
			sum.IdleDevices = append(sum.IdleDevices, d)
		}
	}
	infoOf := make(map[int]*info.DeviceInfo, len(infos))
	for i := range infos {
		infoOf[infos[i].Device] = &infos[i]
	}
	for _, st := range stats {
		us := replay.SegmentUsages(s, st.Device)
		total := replay.SumSegments(us)
		total.Device = st.Device
		d := DeviceSummary{
			Device: st.Device,
			Stats:  st,
			Pools:  replay.PoolUsages(us),
			Total:  total,

			hostHistory: len(s.HostTraces) > 0,
		}
		if info, ok := infoOf[st.Device]; ok {
			d.Info = info
		}
		d.Coverage = f.TraceCoverage(st.Device)
		d.PrivatePools = f.Pools(st.Device)
		sum.Devices = append(sum.Devices, d)
	}
	return sum
}

// summaryPoolLabel names a pool row: "large", "small", or
// "private (1, 0) large" for a CUDA-graph or MemPool pool.
func summaryPoolLabel(u *replay.SegmentUsage) string {
	s := "small"
	if u.Large {
		s = "large"
	}
	if !u.Pool.IsDefault() {
		// Two lines: the table stays within 120 columns.
		s = "private pool\n" + u.Pool.String() + " " + s
	}
	return s
}

// summaryWidth is the width the summary's lines are kept within where
// they can wrap.
const summaryWidth = 120

// WriteSummaryText writes the overview a person reads first: what the file
// holds, then per device a table of the current use per pool and the
// peaks when the trace allows them.
func WriteSummaryText(w io.Writer, sum *Summary) error {
	ew := &kit.ErrWriter{W: w}
	if head := kit.Escape(sum.File) + ": " + describeFormat(sum); len(head) <= kit.Width(w) {
		ew.Printf("%s\n", head)
	} else {
		ew.Printf("%s:\n%s", kit.Escape(sum.File), kit.WrapIndented("  ", describeFormat(sum)))
	}
	if st := sum.Settings; st != nil {
		split := "unlimited"
		if st.MaxSplitSize >= 0 {
			split = units.Bytes(st.MaxSplitSize)
		}
		exp := "off"
		if st.ExpandableSegments {
			exp = "on"
		}
		ew.Printf("%s", kit.WrapIndented("Allocator: ", fmt.Sprintf("expandable_segments %s, max_split_size %s, PYTORCH_CUDA_ALLOC_CONF=%q", exp, split, st.Conf)))
	}
	if r := sum.Rounding; r.Rule != allocator.RoundCUDA || r.Forced != "" {
		how := ", inferred from "
		if r.Forced != "" {
			how = ", "
		}
		ew.Printf("%s", kit.WrapIndented("Rounding: ", r.Rule.Formula()+how+r.Evidence()+"."))
	}
	for _, d := range sum.Devices {
		ew.Printf("\nDevice %d\n", d.Device)
		t := &d.Total
		switch {
		case d.Info == nil && t.Segments == 0 && d.Coverage.HasTraces:
			ew.Printf("  No segments and no trace entries: nothing on this device (the allocator held no GPU memory on it\n" +
				"  and recorded no event).\n")
			continue
		case t.Segments == 0:
			ew.Printf("  No segments: the allocator held no GPU memory on this device when the snapshot was taken.\n")
		default:
			ew.Printf("%s", kit.WrapIndented("  ", fmt.Sprintf("%s reserved in %s; %s allocated in %s; %s free inside the segments (largest free block %s).",
				units.Bytes(t.Size), units.Plural(t.Segments, "segment"),
				units.Bytes(t.AllocatedBytes), units.Plural(t.AllocatedBlocks, "allocation"),
				units.Bytes(t.InactiveBytes), units.Bytes(t.LargestFree))))
			if t.PendingFreeBlocks > 0 {
				ew.Printf("%s", kit.WrapIndented("  ", fmt.Sprintf("%s in %s freed by the program but still in use by another stream (pending free).",
					units.Bytes(t.PendingFreeBytes), units.Plural(t.PendingFreeBlocks, "block"))))
			}
			if ew.Err == nil {
				ew.Err = writePoolTable(w, &d)
			}
		}
		for _, line := range append(append(fileLines(sum), historyLines(&d)...), PoolLines(d.PrivatePools)...) {
			ew.Printf("%s", kit.WrapIndented("  ", line))
		}
	}
	if lines := hostview.Lines(&sum.Host); lines != nil {
		ew.Printf("\nPinned host memory (the CUDA host allocator)\n")
		for _, line := range lines {
			ew.Printf("%s", kit.WrapIndented("  ", line))
		}
	}
	return ew.Err
}

// writePoolTable writes the per-pool table of one device. The Active
// column (allocated and pending-free blocks) is left out when no block is
// pending free: it equals Allocated.
func writePoolTable(w io.Writer, d *DeviceSummary) error {
	active := d.Total.PendingFreeBlocks > 0
	const activeCol = 3
	align := kit.DropColumn([]tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight,
		tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight}, activeCol, !active)
	header := kit.DropColumn([]string{"Pool", "Reserved", "Allocated", "Active", "Requested", "Segments", "Blocks", "Allocations", "Free", "Largest\nfree"},
		activeCol, !active)
	row := func(label string, u *replay.SegmentUsage) []string {
		return kit.DropColumn([]string{label, units.Bytes(u.Size), units.Bytes(u.AllocatedBytes), units.Bytes(u.ActiveBytes()),
			kit.RequestedBytes(u.ActiveRequestedBytes(), d.Stats.Known), units.Int(u.Segments), units.Int(u.Blocks),
			units.Int(u.AllocatedBlocks), units.Bytes(u.InactiveBytes), units.Bytes(u.LargestFree)}, activeCol, !active)
	}
	var rows [][]string
	for i := range d.Pools {
		rows = append(rows, row(summaryPoolLabel(&d.Pools[i]), &d.Pools[i]))
	}
	// Too wide for the width: Requested, Blocks, Largest free, Active,
	// then Segments go (by name: Active may be absent).
	var drop []int
	for _, name := range []string{"Requested", "Blocks", "Largest\nfree", "Active", "Segments"} {
		if c := slices.Index(header, name); c >= 0 {
			drop = append(drop, c)
		}
	}
	ft := kit.FitColumns(kit.Width(w), header, align, rows, row("total", &d.Total), drop...)
	return ft.Render(w, "snapview summary --json has every figure")
}

// fileLines says what the file lacks that replay.Complete put back.
func fileLines(sum *Summary) []string {
	var lines []string
	if sum.InactiveBlocksMissing {
		lines = append(lines, "Blocks: the file's blocks lists lack inactive blocks (a slice of a bigger snapshot?): "+
			"the free space is reserved - active per segment, one free block per gap.")
	}
	if sum.SegmentsFromTrace {
		lines = append(lines, "Segments: none in the file; this end state comes from the trace alone.")
	}
	return lines
}

// historyLines explains what the trace of a device holds and what that
// means for the Peak and Tot figures, one paragraph per line. How much
// of the run the trace covers is said as `snapview info` says it.
func historyLines(d *DeviceSummary) []string {
	c := &d.Coverage
	var lines []string
	switch {
	case !c.HasTraces:
		lines = append(lines, "Trace: none in the file (a bare segment list): only the current state is known.")
	case c.Entries == 0:
		if d.hostHistory {
			lines = append(lines, "Trace: none recorded for this device (the file records pinned host memory only): only the current state is known.")
		} else {
			lines = append(lines, "Trace: none recorded for this device: only the current state is known. "+
				"Call torch.cuda.memory._record_memory_history() before the first allocation to record one.")
		}
	default:
		span := ""
		if c.FirstUS != 0 && c.LastUS >= c.FirstUS {
			span = " over " + units.Span(c.LastUS-c.FirstUS)
		}
		cover := "from the start"
		if !c.FromStart() {
			cover = "missing the start of the run"
		}
		if d.Info != nil {
			cover = CoverageText(d.Info)
		}
		lines = append(lines, fmt.Sprintf("Trace: %s%s; %s.", units.Plural(c.Entries, "entry"), span, cover))
	}
	switch {
	case c.Entries > 0 && c.TraceStacks > 0:
		lines = append(lines, fmt.Sprintf("Stacks: on %s and %s.",
			units.OfAll(c.TraceStacks, c.Entries, "trace entry"), units.OfAll(c.LiveBlockStacks, c.LiveBlocks, "live block")))
	case c.LiveBlockStacks > 0 && c.Entries > 0:
		lines = append(lines, fmt.Sprintf("Stacks: on %s, none on trace entries.", units.OfAll(c.LiveBlockStacks, c.LiveBlocks, "live block")))
	case c.LiveBlockStacks > 0:
		lines = append(lines, fmt.Sprintf("Stacks: on %s.", units.OfAll(c.LiveBlockStacks, c.LiveBlocks, "live block")))
	case c.Entries > 0 || c.LiveBlocks > 0:
		lines = append(lines, "Stacks: none recorded (context=None, or the blocks predate recording).")
	}
	if c.OOMs > 0 {
		lines = append(lines, fmt.Sprintf("Out of memory: the trace holds %s.", units.Plural(c.OOMs, "oom entry")))
	}
	st := d.Stats
	if n := kit.RequestedNote(st.Known); n != "" {
		lines = append(lines, n)
	}
	if c.Entries > 0 {
		switch k := st.Known; k.History {
		case stats.Exact:
			lines = append(lines, fmt.Sprintf("Peak: %s allocated, %s reserved (exact).",
				units.Bytes(st.AllocatedBytes[stats.PoolAll].Peak), units.Bytes(st.ReservedBytes[stats.PoolAll].Peak)))
		case stats.LowerBound:
			lines = append(lines, fmt.Sprintf("Peak: at least %s allocated, at least %s reserved (lower bounds: %s).",
				units.Bytes(st.AllocatedBytes[stats.PoolAll].Peak), units.Bytes(st.ReservedBytes[stats.PoolAll].Peak), k.Why))
		case stats.Unknown:
			if k.Why == "" {
				lines = append(lines, "Peak: unknown.")
			} else {
				lines = append(lines, fmt.Sprintf("Peak: unknown (%s).", k.Why))
			}
		}
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
		parts = append(parts, units.Bytes(f.Bytes))
	}
	if sum.Legacy {
		parts = append(parts, "a bare segment list (torch.cuda.memory_snapshot())")
	}
	switch idle := len(sum.IdleDevices); {
	case sum.NumDevices == 0:
	case idle == sum.NumDevices && idle == 1:
		parts = append(parts, "1 device recorded, with nothing on it")
	case idle == sum.NumDevices:
		parts = append(parts, units.Plural(sum.NumDevices, "device")+" recorded, nothing on any of them")
	case idle > 0:
		parts = append(parts, fmt.Sprintf("%s recorded, nothing on %s", units.Plural(sum.NumDevices, "device"), kit.JoinIntRuns(sum.IdleDevices)))
	default:
		parts = append(parts, units.Plural(sum.NumDevices, "device")+" recorded")
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
	Host     *hostview.JSON      `json:"host,omitempty"`
	Rounding roundingJSON        `json:"rounding"`
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
	MemoryStats map[string]kit.FigureJSON `json:"memory_stats"`
	Pools       []poolJSON                `json:"pools"`
	Total       poolJSON                  `json:"total"`
	Trace       traceJSON                 `json:"trace"`
	// History is the trust of the history figures: "exact",
	// "lower_bound" or "unknown", and why (replay.DecideTrust).
	History kit.HistoryJSON `json:"history"`
	// Requested is the trust of the file's requested sizes ("exact" or
	// "unknown", and why): when unknown, every requested figure is null.
	Requested kit.HistoryJSON `json:"requested"`
	// PrivatePools are the private pools' figures (left out when none).
	PrivatePools []poolFiguresJSON `json:"private_pools,omitempty"`
}

type poolJSON struct {
	Pool             string   `json:"pool"`
	PoolID           [2]int64 `json:"pool_id"`
	ReservedBytes    int64    `json:"reserved_bytes"`
	AllocatedBytes   int64    `json:"allocated_bytes"`
	ActiveBytes      int64    `json:"active_bytes"`
	RequestedBytes   *int64   `json:"requested_bytes"` // null when unknown
	Segments         int      `json:"segments"`
	Blocks           int      `json:"blocks"`
	Allocations      int      `json:"allocations"`
	PendingFree      int      `json:"pending_free_blocks"`
	FreeBytes        int64    `json:"free_bytes"`
	LargestFreeBytes int64    `json:"largest_free_bytes"`
}

type traceJSON struct {
	Recorded bool `json:"recorded"`
	// Coverage is the `snapview info` coverage: "none", "from_start",
	// "wrapped", "started_late" or "state_only".
	Coverage        string `json:"coverage"`
	Entries         int    `json:"entries"`
	FirstTimeUS     int64  `json:"first_time_us"`
	LastTimeUS      int64  `json:"last_time_us"`
	FromStart       bool   `json:"from_start"`
	OrphanFrees     int    `json:"orphan_frees"`
	UntracedBlocks  int    `json:"untraced_live_blocks"`
	EntryStacks     int    `json:"entries_with_stacks"`
	LiveBlocks      int    `json:"live_blocks"`
	LiveBlockStacks int    `json:"live_blocks_with_stacks"`
	OOMs            int    `json:"oom_entries"`
}

func newPoolJSON(label string, u *replay.SegmentUsage, k stats.Known) poolJSON {
	return poolJSON{
		Pool:             label,
		PoolID:           u.Pool,
		ReservedBytes:    u.Size,
		AllocatedBytes:   u.AllocatedBytes,
		ActiveBytes:      u.ActiveBytes(),
		RequestedBytes:   kit.RequestedJSON(u.ActiveRequestedBytes(), k),
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
		Host:     hostview.NewJSON(&sum.Host),
		Rounding: newRoundingJSON(sum.Rounding),
		Warnings: append([]string{}, sum.Warnings...),
	}
	for _, d := range sum.Devices {
		dj := deviceSummaryJSON{
			Device:      d.Device,
			MemoryStats: map[string]kit.FigureJSON{},
			Pools:       []poolJSON{},
			Total:       newPoolJSON("total", &d.Total, d.Stats.Known),
		}
		for _, f := range d.Stats.Figures() {
			fj := kit.FigureJSON{Exactness: f.Exactness.String()}
			if f.Exactness != stats.Unknown {
				v := f.Value
				fj.Value = &v
			}
			if f.Max > 0 && f.Max > f.Value {
				hi := f.Max
				fj.AtMost = &hi
			}
			dj.MemoryStats[f.Key] = fj
		}
		dj.History = kit.HistoryJSON{Exactness: d.Stats.Known.History.String(), Why: d.Stats.Known.Why}
		dj.Requested = kit.RequestedVerdictJSON(d.Stats.Known)
		dj.PrivatePools = newPoolsJSON(d.PrivatePools)
		for i := range d.Pools {
			dj.Pools = append(dj.Pools, newPoolJSON(strings.Replace(summaryPoolLabel(&d.Pools[i]), " pool\n", " ", 1), &d.Pools[i], d.Stats.Known))
		}
		c := &d.Coverage
		dj.Trace = traceJSON{
			Recorded:        c.HasTraces,
			Coverage:        string(info.CoverageNone),
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
		if d.Info != nil {
			dj.Trace.Coverage = string(d.Info.Coverage)
			dj.Trace.FromStart = d.Info.Coverage == info.CoverageFromStart
		}
		out.Devices = append(out.Devices, dj)
	}
	return kit.WriteJSON(w, out)
}

// WriteSummaryAs writes the summary of the file f analyses, named file,
// from the figures of its devices all (analysis.File.StatsOf), in format:
// "torch" memory_summary()'s table per device (WriteTorchTables), "json"
// WriteSummaryJSON, else WriteSummaryText. Errors are w's.
func WriteSummaryAs(w io.Writer, format, file string, f *analysis.File, all []*stats.MemoryStats) error {
	switch format {
	case "torch":
		return WriteTorchTables(w, all)
	case "json":
		return WriteSummaryJSON(w, NewSummary(file, f, all))
	}
	return WriteSummaryText(w, NewSummary(file, f, all))
}

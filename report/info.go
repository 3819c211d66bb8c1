package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// Info is what `snapview info` prints: the file itself, then what
// info.Inspect found in it.
type Info struct {
	// Path is the file as the user named it; SizeOnDisk its size in
	// bytes (compressed, if it is).
	Path       string
	SizeOnDisk int64
	// Format is how the file was encoded.
	Format snapshot.Format
	*info.Info
}

// NewInfo is the info view of in (analysis.File.Info), the description
// of a snapshot of the given format read from path, whose size on disk is
// sizeOnDisk bytes.
func NewInfo(path string, sizeOnDisk int64, format snapshot.Format, in *info.Info) *Info {
	return &Info{Path: path, SizeOnDisk: sizeOnDisk, Format: format, Info: in}
}

// WriteInfo writes v as text: sections File, Layout, PyTorch version,
// Devices, Recording, Allocator settings, Unknown fields, Warnings.
func WriteInfo(w io.Writer, v *Info) error {
	ew := &kit.ErrWriter{W: w}
	ew.Printf("File\n")
	ew.Printf("  path:          %s\n", kit.Escape(v.Path))
	ew.Printf("  size on disk:  %s\n", bytesAndCount(v.SizeOnDisk))
	ew.Printf("  format:        %s\n", v.Format)
	ew.Printf("  decoded:       %s\n", bytesAndCount(v.Format.Bytes))

	ew.Printf("\nLayout\n")
	if v.Legacy {
		ew.Printf("  a bare list of %s (torch.cuda.memory_snapshot()): no trace, no allocator settings\n", units.Plural(v.NumSegments, "segment"))
	} else {
		ew.Printf("  dict with keys: %s\n", strings.Join(kit.EscapeAll(v.TopLevelKeys), ", "))
		ew.Printf("  %s in all; device_traces lists %s", units.Plural(v.NumSegments, "segment"), units.Plural(v.RecordedDevices, "device"))
		if n := len(v.IdleDevices); n > 0 {
			ew.Printf(", %d of them with nothing in the file (%s)", n, kit.JoinIntRuns(v.IdleDevices))
		}
		ew.Printf("\n")
	}

	ew.Printf("\nPyTorch version (a hint from the fields present; #N are pytorch/pytorch pull requests): %s\n", v.Version.String())
	for _, c := range v.Version.Clues {
		src := ""
		if c.Source != "" {
			src = "  (" + c.Source + ")"
		}
		ew.Printf("%s", kit.WrapIndented("  "+padRight(c.Bound(), 6), kit.Escape(c.Clue+src)))
	}

	ew.Printf("\nDevices\n")
	if len(v.Devices) == 0 {
		ew.Printf("  none: no segments and no trace entries\n")
	}
	for i := range v.Devices {
		writeInfoDevice(ew, &v.Devices[i], v.SegmentsFromTrace)
	}

	r := &v.Recording
	ew.Printf("\nRecording (_record_memory_history arguments, inferred)\n")
	maxEntries := "max_entries=unknown"
	switch {
	case r.MaxEntries > 0 && r.MaxEntriesAtLeast:
		maxEntries = "max_entries>=" + units.Int(r.MaxEntries)
	case r.MaxEntries > 0:
		maxEntries = "max_entries~" + units.Int(r.MaxEntries)
	}
	rows := [][2]string{
		{"enabled=" + string(r.Enabled), r.EnabledWhy},
		{"stacks=" + string(r.Stacks), r.StacksWhy},
		{"context=" + string(r.Context), r.ContextWhy},
		{maxEntries, r.MaxEntriesWhy},
	}
	if len(r.SkipActions) > 0 {
		rows = append(rows, [2]string{"skip_actions=" + strings.Join(r.SkipActions, ","), r.SkipActionsWhy})
	}
	for _, row := range rows {
		label := fmt.Sprintf("  %-24s", row[0])
		if len(row[0]) >= 24 {
			label += " "
		}
		ew.Printf("%s", kit.WrapIndented(label, kit.Escape(row[1])))
	}

	if lines := hostview.Lines(&v.Host); lines != nil {
		ew.Printf("\nPinned host memory (the CUDA host allocator)\n")
		for _, line := range lines {
			ew.Printf("%s", kit.WrapIndented("  ", line))
		}
	}

	ew.Printf("\nAllocator settings\n")
	if len(v.Settings) == 0 {
		ew.Printf("  none in the file (PyTorch before 2.3, or a bare segment list)\n")
	}
	// Keys are padded to the longest, up to maxKeyColumn: a key of a
	// megabyte would otherwise pad every other key to its length.
	const maxKeyColumn = 40
	width := 0
	for _, kv := range v.Settings {
		width = max(width, min(len(kit.Escape(kv.Key)), maxKeyColumn))
	}
	for _, kv := range v.Settings {
		ew.Printf("%s", kit.WrapIndented(fmt.Sprintf("  %-*s  ", width, kit.Escape(kv.Key)), kit.Escape(kv.Value)))
	}
	ew.Printf("%s", kit.WrapIndented("  rounding (inferred): ", v.Rounding.Rule.Formula()+"; "+v.Rounding.Evidence()))

	ew.Printf("\nUnknown fields and actions (from a newer PyTorch; skipped)\n")
	if len(v.Unknown) == 0 {
		ew.Printf("  none\n")
	}
	width = 0
	for _, c := range v.Unknown {
		width = max(width, len(kit.Escape(c.Name)))
	}
	for _, c := range v.Unknown {
		ew.Printf("  %-*s  %s\n", width, kit.Escape(c.Name), units.Int(c.Count))
	}

	ew.Printf("\nWarnings\n")
	if len(v.Warnings) == 0 {
		ew.Printf("  none\n")
	}
	for _, m := range v.Warnings {
		ew.Printf("%s", kit.WrapIndented("  - ", kit.Escape(m)))
	}
	return ew.Err
}

// writeInfoDevice writes the lines of one device.
func writeInfoDevice(ew *kit.ErrWriter, d *info.DeviceInfo, segmentsFromTrace bool) {
	ew.Printf("  device %d\n", d.Device)
	if d.Segments == 0 {
		ew.Printf("    segments:  none (the allocator held no memory on it at dump time)\n")
	} else {
		ew.Printf("    segments:  %s, %s reserved; %s, %s allocated\n",
			units.Plural(d.Segments, "segment"), units.Bytes(d.ReservedBytes), units.Plural(d.Blocks, "block"), units.Bytes(d.AllocatedBytes))
		if d.LiveBlocks > 0 {
			ew.Printf("    stacks:    on %s\n", units.OfAll(d.LiveBlockStacks, d.LiveBlocks, "live block"))
		}
		if d.Trust.Requested == stats.Unknown {
			// The verdict every view marks its requested figures with.
			ew.Printf("%s", kit.WrapIndented("    requested: ", "unknown: "+d.Trust.RequestedWhy))
		}
	}
	if d.Entries == 0 {
		ew.Printf("    trace:     no entries\n")
		ew.Printf("    end state: nothing to replay\n")
		return
	}
	span := ""
	if d.FirstUS != 0 && d.LastUS >= d.FirstUS {
		span = " over " + units.Span(d.LastUS-d.FirstUS)
	} else {
		span = " (no time_us: ordered by position only)"
	}
	ew.Printf("    trace:     %s%s\n", units.Plural(d.Entries, "entry"), span)
	acts := make([]string, len(d.Actions))
	for i, a := range d.Actions {
		acts[i] = kit.Escape(a.Name) + " " + units.Int(a.Count)
	}
	ew.Printf("%s", kit.WrapIndented("    actions:   ", strings.Join(acts, ", ")))
	if d.OOMs > 0 {
		ew.Printf("    OOMs:      %s\n", units.Plural(d.OOMs, "oom entry"))
	}
	ew.Printf("%s", kit.WrapIndented("    coverage:  ", CoverageText(d)))
	if d.Replayed || d.ReplayError != "" {
		ew.Printf("%s", kit.WrapIndented("    history:   ", kit.TrustText(d.Trust)))
	}
	switch {
	case d.ReplayError != "":
		ew.Printf("%s", kit.WrapIndented("    end state: ", "not checked: "+d.ReplayError))
	case segmentsFromTrace:
		ew.Printf("%s", kit.WrapIndented("    end state: ", fmt.Sprintf("not checked: the file has no segments, so the %s and %s shown are the trace's own",
			units.Plural(d.Check.Segments, "segment"), units.Plural(d.Check.Blocks, "block"))))
	case d.Check.Equal:
		ew.Printf("    end state: the replayed trace ends in the file's segments and blocks (%s, %s)\n",
			units.Plural(d.Check.Segments, "segment"), units.Plural(d.Check.Blocks, "block"))
	default:
		ew.Printf("    end state: the replay differs from the file's segments:\n")
		for _, line := range d.Check.Differences {
			ew.Printf("%s", kit.WrapIndented("      ", line))
		}
	}
}

// CoverageText explains a device's trace coverage.
func CoverageText(d *info.DeviceInfo) string {
	var why []string
	if d.UntracedBlocks > 0 {
		why = append(why, units.Plural(d.UntracedBlocks, "live block")+" it never allocated")
	}
	if d.OrphanFrees > 0 {
		why = append(why, units.Plural(d.OrphanFrees, "free")+" of blocks allocated before it")
	}
	missing := ""
	if len(why) > 0 {
		missing = " (" + strings.Join(why, ", ") + ")"
	}
	switch d.Coverage {
	case info.CoverageFromStart:
		return "from the start: every free and every live block has its alloc in the trace"
	case info.CoverageWrapped:
		return "wrapped: the trace misses the start" + missing + " and its length looks like max_entries"
	case info.CoverageLate:
		return "started late: the trace misses the start" + missing + "; it may also have wrapped at an unround max_entries"
	case info.CoverageWindow:
		return "a window: the trace misses the start" + missing + " and the file looks cut from a bigger one (its blocks lists lack inactive blocks), so whether recording started late or the ring buffer wrapped is not known"
	case info.CoverageStateOnly:
		return "state only: the single entry is the latest event, not a history"
	}
	return string(d.Coverage)
}

// bytesAndCount formats a byte count as "38.4 KiB (39,329 bytes)".
func bytesAndCount(n int64) string {
	if n < 1024 {
		return units.Bytes(n)
	}
	return units.Bytes(n) + " (" + units.Int(n) + " bytes)"
}

// padRight pads s with spaces to n runes.
func padRight(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

// joinInts is units.IntList: "0, 1, 2", shortened past 16 numbers.
func joinInts(ns []int) string { return units.IntList(ns) }

// DeviceNumbers returns the ordinals of v's Devices, in order.
func (v *Info) DeviceNumbers() []int {
	devs := make([]int, len(v.Devices))
	for i, d := range v.Devices {
		devs[i] = d.Device
	}
	return devs
}

package monitorview

import (
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
)

// StatsDump is what `snapview summary` shows of a memory_stats() dump (a
// file of json.dump(torch.cuda.memory_stats()), or one record of a log).
type StatsDump struct {
	// File is the path as the user gave it; From says where in it the
	// figures are ("" for the whole file, "step 29, line 30" for a log).
	File, From string
	// Stats has one entry per device, every figure exact.
	Stats []*stats.MemoryStats
}

// WriteStatsDumpText writes the readable view of a memory_stats() dump:
// per device the current and peak figures of each pool, the lifetime
// counters, and the warnings of monitor.Check, each with the figures it
// rests on.
func WriteStatsDumpText(w io.Writer, d *StatsDump) error {
	ew := &kit.ErrWriter{W: w}
	from := ""
	if d.From != "" {
		from = " (" + d.From + ")"
	}
	ew.Printf("%s", kit.WrapTo(w, "", fmt.Sprintf("%s: torch.cuda.memory_stats()%s, %s; every figure is torch's own, exact.", d.File, from, units.Plural(len(d.Stats), "device"))))
	for _, st := range d.Stats {
		ew.Printf("\nDevice %d\n", st.Device)
		all := func(s *[stats.NumPools]stats.Stat) stats.Stat { return s[stats.PoolAll] }
		ew.Printf("%s", kit.WrapTo(w, "  ", fmt.Sprintf("%s reserved in %s; %s allocated to %s; %s cached but unused.",
			units.Bytes(all(&st.ReservedBytes).Current), units.Plural(int(all(&st.Segment).Current), "segment"),
			units.Bytes(all(&st.AllocatedBytes).Current), units.Plural(int(all(&st.Allocation).Current), "tensor"),
			units.Bytes(all(&st.ReservedBytes).Current-all(&st.AllocatedBytes).Current))))
		if ew.Err == nil {
			ew.Err = writeStatsPoolTable(w, st)
		}
		ew.Printf("%s", kit.WrapTo(w, "  ", fmt.Sprintf("Peak: %s allocated, %s reserved. Lifetime: %s (%s in all), %s and %s.",
			units.Bytes(all(&st.AllocatedBytes).Peak), units.Bytes(all(&st.ReservedBytes).Peak),
			units.Plural(int(all(&st.Allocation).Allocated), "allocation"), units.Bytes(all(&st.AllocatedBytes).Allocated),
			units.Plural(int(st.NumDeviceAlloc), "cudaMalloc"), units.Plural(int(st.NumDeviceFree), "cudaFree"))))
		split := "unlimited"
		if st.MaxSplitSize >= 0 {
			split = units.Bytes(st.MaxSplitSize)
		}
		ew.Printf("  CUDA OOMs: %d; cudaMalloc retries: %d; max_split_size: %s.\n", st.NumOOMs, st.NumAllocRetries, split)
		findings := monitor.Check(st)
		if len(findings) == 0 {
			ew.Printf("  No warning: no retry, no OOM, reserved close to allocated, no oversize allocation.\n")
		}
		for _, f := range findings {
			ew.Printf("%s", kit.WrapTo(w, "  warning: ", FindingText(f)))
		}
	}
	return ew.Err
}

// writeStatsPoolTable writes the current and peak figures per pool.
func writeStatsPoolTable(w io.Writer, st *stats.MemoryStats) error {
	var rows [][]string
	for p, name := range []string{"all", "large", "small"} {
		pool := stats.Pool(p)
		rows = append(rows, []string{name,
			units.Bytes(st.ReservedBytes[pool].Current), units.Bytes(st.ReservedBytes[pool].Peak),
			units.Bytes(st.AllocatedBytes[pool].Current), units.Bytes(st.AllocatedBytes[pool].Peak),
			units.Bytes(st.RequestedBytes[pool].Current),
			fmt.Sprintf("%s in %d", units.Bytes(st.InactiveSplitBytes[pool].Current), st.InactiveSplit[pool].Current),
			units.Int(st.Segment[pool].Current), units.Int(st.Allocation[pool].Current)})
	}
	// Too wide: the requested bytes, then the counts go.
	ft := kit.FitColumns(kit.Width(w), []string{"Pool", "Reserved", "Peak\nreserved", "Allocated", "Peak\nallocated", "Requested", "Non-releasable\n(inactive_split)", "Segments", "Tensors"},
		[]tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight},
		rows, nil, 5, 8, 7)
	return ft.Render(w, "--json has them")
}

// FindingText explains one warning about a memory_stats() dump in a
// sentence or three, citing its figures.
func FindingText(f monitor.Finding) string {
	v := map[string]int64{}
	for _, fig := range f.Figures {
		v[fig.Key] = fig.Value
	}
	switch f.Kind {
	case monitor.FindingRetries:
		return fmt.Sprintf("%s (num_alloc_retries): the caching allocator found no cached block and no room for a new cudaMalloc, "+
			"freed its cached blocks (num_sync_all_streams: %d synchronizations of every stream) and tried again. "+
			"The run is close to running out of memory, and every retry is slow.",
			units.Plural(int(v["num_alloc_retries"]), "cudaMalloc retry"), v["num_sync_all_streams"])
	case monitor.FindingOOMs:
		return fmt.Sprintf("%s (num_ooms): an allocation failed even after the cache was freed.", units.Plural(int(v["num_ooms"]), "CUDA out-of-memory error"))
	case monitor.FindingFragmentation:
		res, alloc := v["reserved_bytes.all.current"], v["allocated_bytes.all.current"]
		split := v["inactive_split_bytes.all.current"]
		ratio := "∞"
		if alloc > 0 {
			ratio = fmt.Sprintf("%.1fx", float64(res)/float64(alloc))
		}
		return fmt.Sprintf("reserved %s is %s allocated %s: %s cached but unused. %s of it sits in %s of split segments "+
			"(inactive_split_bytes: %s large pool, %s small pool): fragmentation, usable only by requests that fit those pieces. "+
			"The rest, %s, is in blocks torch.cuda.empty_cache() could return or that are pending free on another stream.",
			units.Bytes(res), ratio, units.Bytes(alloc), units.Bytes(res-alloc),
			units.Bytes(split), units.Plural(int(v["inactive_split.all.current"]), "free piece"),
			units.Bytes(v["inactive_split_bytes.large_pool.current"]), units.Bytes(v["inactive_split_bytes.small_pool.current"]),
			units.Bytes(max(0, res-alloc-split)))
	case monitor.FindingOversize:
		return fmt.Sprintf("%s above max_split_size (%s; %d live now, in %s): such blocks are never split, and a request "+
			"reuses a cached one only when it is at most 20 MiB larger, so varying sizes above the limit each get a new segment.",
			units.Plural(int(v["oversize_allocations.allocated"]), "oversize allocation"), units.Bytes(v["max_split_size"]),
			v["oversize_allocations.current"], units.Plural(int(v["oversize_segments.current"]), "oversize segment"))
	}
	return f.Kind
}

// statsDumpJSON is the --json schema of a memory_stats() dump.
type statsDumpJSON struct {
	File    string                `json:"file"`
	From    string                `json:"from,omitempty"`
	Devices []statsDumpDeviceJSON `json:"devices"`
}

type statsDumpDeviceJSON struct {
	Device      int                       `json:"device"`
	MemoryStats map[string]kit.FigureJSON `json:"memory_stats"`
	Warnings    []findingJSON             `json:"warnings"`
}

type findingJSON struct {
	Kind    string           `json:"kind"`
	Figures map[string]int64 `json:"figures"`
	Message string           `json:"message"`
}

// WriteStatsDumpJSON writes d as JSON: every memory_stats() figure under
// its own key, marked "exact" as `summary --json` marks a snapshot's, and
// the warnings with their figures.
func WriteStatsDumpJSON(w io.Writer, d *StatsDump) error {
	out := statsDumpJSON{File: d.File, From: d.From, Devices: []statsDumpDeviceJSON{}}
	for _, st := range d.Stats {
		dj := statsDumpDeviceJSON{Device: st.Device, MemoryStats: map[string]kit.FigureJSON{}, Warnings: []findingJSON{}}
		for _, f := range st.Figures() {
			v := f.Value
			dj.MemoryStats[f.Key] = kit.FigureJSON{Value: &v, Exactness: f.Exactness.String()}
		}
		dj.Warnings = findingsJSON(monitor.Check(st))
		out.Devices = append(out.Devices, dj)
	}
	return kit.WriteJSON(w, out)
}

func findingsJSON(fs []monitor.Finding) []findingJSON {
	out := []findingJSON{}
	for _, f := range fs {
		fj := findingJSON{Kind: f.Kind, Figures: map[string]int64{}, Message: FindingText(f)}
		for _, fig := range f.Figures {
			fj.Figures[fig.Key] = fig.Value
		}
		out = append(out, fj)
	}
	return out
}

// LastRecords is what `snapview summary` shows of a memory_stats() log
// named name: the last record of each device (monitor.AnalyzeSteps), From
// naming each record's step and line.
func LastRecords(name string, l *monitor.StatsLog) *StatsDump {
	dump := &StatsDump{File: name}
	var where []string
	for _, d := range monitor.AnalyzeSteps(l) {
		r := d.Records[len(d.Records)-1]
		dump.Stats = append(dump.Stats, r.Stats)
		w := fmt.Sprintf("line %d", r.Line)
		if r.HasStep {
			w = fmt.Sprintf("step %d, %s", r.Step, w)
		}
		where = append(where, fmt.Sprintf("device %d: %s", d.Device, w))
	}
	dump.From = "the last record: " + strings.Join(where, "; ")
	if len(dump.Stats) == 1 {
		dump.From = "the last record, " + strings.TrimPrefix(where[0], "device 0: ")
	}
	return dump
}

// WriteStatsDumpAs writes d as JSON (WriteStatsDumpJSON) or text
// (WriteStatsDumpText). Errors are w's.
func WriteStatsDumpAs(w io.Writer, d *StatsDump, json bool) error {
	if json {
		return WriteStatsDumpJSON(w, d)
	}
	return WriteStatsDumpText(w, d)
}

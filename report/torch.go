package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/report/kit"
)

// torchWidth is the width of memory_summary()'s table between the outer
// bars.
const torchWidth = 75

// WriteTorchSummary writes st as torch.cuda.memory_summary(device) prints
// it (torch/cuda/memory.py memory_summary, PyTorch 2.11): the same 75-column
// layout, row order and number formatting ([FormatTorchSize],
// [FormatTorchCount]), the pool rows in the unit of the "all" row. When
// every figure of st is Exact the output is byte-identical to torch's.
//
// Figures torch knows but the snapshot does not carry are marked without
// moving any column:
//
//   - Unknown: the cell shows "?" where the last digit would be, and no
//     unit ("     ?    " for bytes, "      ?   " for counts); the header
//     shows "?" for CUDA OOMs or cudaMalloc retries.
//   - LowerBound: the number is printed as usual and the blank that
//     follows the cell (before the next '|') becomes a '+', read "at
//     least": "| 282123 KiB+|". In the header the number is followed by
//     "+" ("CUDA OOMs: 1+").
//
// The Requested memory rows take their marks from Known.RequestedCurrent
// and Known.RequestedHistory: "?" throughout when the file's requested
// sizes are unknown (Known.Requested).
func WriteTorchSummary(w io.Writer, st *stats.MemoryStats) error {
	return writeTorchSummary(w, st, false)
}

// torchMetric is one metric block of memory_summary(), in print order.
type torchMetric struct {
	label     string
	stat      *[stats.NumPools]stats.Stat
	bytes     bool // _format_size, else _format_count
	requested bool // requested_bytes: its cells also follow Known.Requested
}

// writeTorchSummary is memory_summary(device, abbreviated): abbreviated
// drops the "from large pool" and "from small pool" rows.
func writeTorchSummary(w io.Writer, st *stats.MemoryStats, abbreviated bool) error {
	metrics := []torchMetric{
		{"Allocated memory", &st.AllocatedBytes, true, false},
		{"Active memory", &st.ActiveBytes, true, false},
		{"Requested memory", &st.RequestedBytes, true, true},
		{"GPU reserved memory", &st.ReservedBytes, true, false},
		{"Non-releasable memory", &st.InactiveSplitBytes, true, false},
		{"Allocations", &st.Allocation, false, false},
		{"Active allocs", &st.Active, false, false},
		{"GPU reserved segments", &st.Segment, false, false},
		{"Non-releasable allocs", &st.InactiveSplit, false, false},
	}
	rule := func(c string) string { return strings.Repeat(c, torchWidth) }
	lines := []string{
		rule("="),
		fmt.Sprintf(" %16s PyTorch CUDA memory summary, device ID %-17d ", "", st.Device),
		rule("-"),
		fmt.Sprintf("  %9s CUDA OOMs: %-12s | %6s cudaMalloc retries: %-8s  ", "",
			torchHeaderValue(st.NumOOMs, st.Known.NumOOMs), "",
			torchRetries(st)),
		rule("="),
		"        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ",
	}
	pools := []struct {
		pool  stats.Pool
		label string
	}{
		{stats.PoolAll, ""},
		{stats.PoolLarge, "      from large pool"},
		{stats.PoolSmall, "      from small pool"},
	}
	if abbreviated {
		pools = pools[:1]
	}
	for _, m := range metrics {
		lines = append(lines, rule("-"))
		all := m.stat[stats.PoolAll]
		known := st.Known
		if m.requested {
			known.Current, known.History = known.RequestedCurrent(), known.RequestedHistory()
		}
		for _, p := range pools {
			label := p.label
			if p.pool == stats.PoolAll {
				label = m.label
			}
			lines = append(lines, torchRow(label, m.stat[p.pool], all, m.bytes, known))
		}
	}
	for _, m := range []struct {
		label string
		stat  stats.Stat
	}{
		{"Oversize allocations", st.OversizeAllocations},
		{"Oversize GPU segments", st.OversizeSegments},
	} {
		lines = append(lines, rule("-"), torchRow(m.label, m.stat, m.stat, false, st.Known))
	}
	lines = append(lines, rule("="))
	_, err := io.WriteString(w, "|"+strings.Join(lines, "|\n|")+"|\n")
	return err
}

// torchRow formats one row: f" {label:<21} | {cur} | {peak} | {alloc} |
// {freed} ", each figure in the unit its column has in the pref row.
func torchRow(label string, v, pref stats.Stat, bytes bool, known stats.Known) string {
	cell := func(v, pref int64, e stats.Exactness) string {
		if e == stats.Unknown {
			if bytes {
				return fmt.Sprintf(" %6s %3s ", "?", "")
			}
			return fmt.Sprintf(" %7s %s  ", "?", " ")
		}
		var s string
		if bytes {
			s = FormatTorchSize(v, pref)
		} else {
			s = FormatTorchCount(v, pref)
		}
		if e == stats.LowerBound {
			return " " + s + "+"
		}
		return " " + s + " "
	}
	return fmt.Sprintf(" %-21s |%s|%s|%s|%s", label,
		cell(v.Current, pref.Current, known.Current),
		cell(v.Peak, pref.Peak, known.History),
		cell(v.Allocated, pref.Allocated, known.History),
		cell(v.Freed, pref.Freed, known.History))
}

// torchHeaderValue formats CUDA OOMs or cudaMalloc retries: the number,
// "N+" for a lower bound, "?" when unknown.
func torchHeaderValue(v int64, e stats.Exactness) string {
	switch e {
	case stats.Unknown:
		return "?"
	case stats.LowerBound:
		return fmt.Sprintf("%d+", v)
	}
	return fmt.Sprintf("%d", v)
}

// FormatTorchSize formats a byte figure as memory_summary()'s _format_size
// (torch/cuda/memory.py): starting from bytes, it moves to the next unit
// (KiB … PiB), floor-dividing sz by 1024, while pref is at least 768 of the
// current unit; the result is f"{sz:6d} {unit}" with units padded to three
// characters ("B  "). pref is the figure of the same column in the "all"
// row (sz itself for that row), so the pool rows share its unit.
func FormatTorchSize(sz, pref int64) string {
	units := []string{"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"}
	unit := units[0]
	// torch divides pref_sz by 1024 in floating point; comparing pref
	// against 768 KiB scaled up is the same test, exactly.
	limit := int64(768 * 1024)
	for _, u := range units[1:] {
		if pref < limit {
			break
		}
		unit = u
		sz = floorDiv(sz, 1024)
		if limit > math.MaxInt64/1024 {
			limit = math.MaxInt64 // 768 EiB: beyond int64, never reached
		} else {
			limit *= 1024
		}
	}
	return fmt.Sprintf("%6d %s", sz, unit)
}

// FormatTorchCount formats a count as memory_summary()'s _format_count
// (torch/cuda/memory.py): units " ", "K", "M", switching while pref is at
// least 750 of the current unit, floor-dividing cnt by 1000; the result is
// f"{cnt:7d} {unit} ". pref is as for [FormatTorchSize].
func FormatTorchCount(cnt, pref int64) string {
	units := []string{" ", "K", "M"}
	unit := units[0]
	limit := int64(750 * 1000)
	for _, u := range units[1:] {
		if pref < limit {
			break
		}
		unit = u
		cnt = floorDiv(cnt, 1000)
		limit *= 1000
	}
	return fmt.Sprintf("%7d %s ", cnt, unit)
}

// floorDiv is Python's a // b for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// WriteTorchTables writes the memory_summary() table of each device
// (WriteTorchSummary), a blank line between two. Errors are w's.
func WriteTorchTables(w io.Writer, all []*stats.MemoryStats) error {
	for i, st := range all {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := WriteTorchSummary(w, st); err != nil {
			return err
		}
	}
	return nil
}

// torchRetries is the header's cudaMalloc retries: torchHeaderValue, or
// "LO to HI" where the trace bounds the figure from both sides
// (stats.MemoryStats.RetriesRange).
func torchRetries(st *stats.MemoryStats) string {
	if lo, hi, ok := st.RetriesRange(); ok {
		return kit.FigureRange(lo, hi, false)
	}
	return torchHeaderValue(st.NumAllocRetries, st.Known.NumAllocRetries)
}

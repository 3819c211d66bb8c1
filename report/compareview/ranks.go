package compareview

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/tw"
	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/report/kit"

	"github.com/snapview/snapview/internal/units"
)

// RanksOptions says how [WriteRanks] shows a rank comparison.
type RanksOptions struct {
	// Top bounds the varying stacks and the diffed stacks (0: all).
	Top int
	// Frames is the most lines printed per stack (0: all).
	Frames int
	// Full says stacks were keyed by whole stacks.
	Full bool
}

// rankFileNames names each side's file as briefly as stays unambiguous:
// the fewest trailing path elements that tell the files apart (its base
// name, or "legacy_segments/snapshot.pickle" when two files share a base
// name), the whole path where no shorter suffix does.
func rankFileNames(sides []*compare.Side) []string {
	files := map[string]bool{}
	for _, s := range sides {
		files[s.File] = true
	}
	suffix := func(p string, k int) string {
		parts := strings.Split(filepath.ToSlash(p), "/")
		if k >= len(parts) {
			return p
		}
		return strings.Join(parts[len(parts)-k:], "/")
	}
	out := make([]string, len(sides))
	for k := 1; ; k++ {
		owner := map[string]string{}
		clash, whole := false, true
		for i, s := range sides {
			out[i] = suffix(s.File, k)
			if f, ok := owner[out[i]]; ok && f != s.File {
				clash = true
			}
			owner[out[i]] = s.File
			whole = whole && out[i] == s.File
		}
		if !clash || whole {
			return out
		}
	}
}

// rankNames names each side for the lines that point at a rank: "rank N"
// where its file's name gives N (compare.RankNumber), else its file name
// (see rankFileNames); "device D" is added for a file compared by
// several devices. Where two sides would get the same name, every side is
// named by its file (and device). Never the side's position.
func rankNames(sides []*compare.Side) []string {
	files := rankFileNames(sides)
	perFile := map[string]int{}
	for _, s := range sides {
		perFile[s.File]++
	}
	name := func(i int, byFile bool) string {
		s := sides[i]
		out := files[i]
		if n, ok := compare.RankNumber(s.File); ok && !byFile {
			out = "rank " + strconv.Itoa(n)
		}
		if perFile[s.File] > 1 {
			out += " device " + strconv.Itoa(s.Device)
		}
		return out
	}
	out := make([]string, len(sides))
	seen := map[string]bool{}
	for i := range sides {
		out[i] = name(i, false)
		if seen[out[i]] {
			for j := range sides {
				out[j] = name(j, true)
			}
			return out
		}
		seen[out[i]] = true
	}
	return out
}

// rankColumn is the Rank column: the rank the file name gives, "-" when
// it gives none.
func rankColumn(s *compare.Side) string {
	if n, ok := compare.RankNumber(s.File); ok {
		return strconv.Itoa(n)
	}
	return "-"
}

// when says when a peak fell: "step 7, 2.310 s" or "entry 1,234, 2.310 s",
// the time from origin (the ranks' one clock, see compare.Ranks.OneClock),
// or from the side's own first entry when origin is 0.
func when(s *compare.Side, origin int64, entry, step int, us int64) string {
	if entry < 0 {
		return "at the end (no trace)"
	}
	var parts []string
	if step >= 0 {
		parts = append(parts, "step "+strconv.Itoa(step))
	} else {
		parts = append(parts, "entry "+units.Int(entry))
	}
	if s.HasTime {
		if origin == 0 {
			origin = s.FirstUS
		}
		parts = append(parts, units.Seconds(us-origin, 3))
	}
	return strings.Join(parts, ", ")
}

// peakTimeUS is the time_us (microseconds, the trace's clock) of a peak at
// entry, as the When columns of WriteRanks show it from the clock origin;
// nil where the peak is at the end of a file with no trace or the trace
// has no times.
func peakTimeUS(s *compare.Side, entry int, us int64) *int64 {
	if entry < 0 || !s.HasTime {
		return nil
	}
	return &us
}

// WriteRanks writes the text view of `snapview ranks`: one row per rank,
// the spread of each figure, the flagged ranks, the stacks that vary most
// and the outlier diffed against the median rank.
func WriteRanks(w io.Writer, rk *compare.Ranks, o RanksOptions) error {
	header := []string{"Rank", "File", "Dev", "Peak allocated", "When allocated", "Peak reserved", "When reserved",
		"Cached at peak", "End allocated", "OOMs", "Retries", "Coverage"}
	align := []tw.Align{tw.AlignRight, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignLeft, tw.AlignRight, tw.AlignLeft,
		tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft}
	// The text shows names with their control characters escaped (the
	// JSON keeps them as they are).
	names := kit.EscapeAll(rankFileNames(rk.Sides))
	labels := kit.EscapeAll(rankNames(rk.Sides))
	var origin int64 // 0: each rank's times from its own first entry
	if rk.OneClock {
		origin = rk.ClockOrigin
	}
	var rows [][]string
	for i, s := range rk.Sides {
		h := s.Stats.Known.History
		flag := ""
		for _, out := range rk.Outliers {
			if out.Rank == i {
				flag = " !"
				break
			}
		}
		rows = append(rows, []string{rankColumn(s) + flag, names[i], strconv.Itoa(s.Device),
			kit.FigureValue(s.PeakAllocated, true, h), when(s, origin, s.PeakAllocatedAt, s.PeakAllocatedStep, s.PeakAllocatedUS),
			kit.FigureValue(s.PeakReserved, true, h), when(s, origin, s.PeakReservedAt, s.PeakReservedStep, s.PeakReservedUS),
			kit.FigureValue(s.ReservedAtPeakAllocated-s.PeakAllocated, true, h),
			units.Bytes(s.End.AllocatedBytes[stats.PoolAll].Current),
			kit.FigureValue(int64(s.OOMs), false, s.End.Known.NumOOMs),
			kit.RetriesValue(&s.End),
			string(s.Coverage)})
	}
	// Too wide: the cached and end figures, the coverage, the times of
	// the peaks, the counts, the device and the file go, in that order.
	ft := kit.FitWrapped(kit.Width(w), header, align, rows, nil, 1, 7, 8, 11, 6, 10, 9, 4, 2)
	if err := ft.Render(w, "--json has them"); err != nil {
		return err
	}
	// One line per item, so that each wraps on its own.
	fmt.Fprintln(w, "Cached at peak: reserved minus allocated at the allocated peak.")
	legend := "'!': beyond 10% of the median rank; '+': at least this much (the trace misses the start, or a retry that leaves no entry); '?': unknown."
	for _, s := range rk.Sides {
		if _, _, ok := s.End.RetriesRange(); ok {
			legend = strings.Replace(legend, "; '?'", "; 'LO to HI': retries the trace bounds from both sides; '?'", 1)
			break
		}
	}
	fmt.Fprintln(w, legend)
	fmt.Fprintln(w, "Rank: the rank the file name gives ('-': none).")

	fmt.Fprintln(w)
	if len(rk.Unknown) > 0 {
		var left []string
		for _, i := range rk.Unknown {
			left = append(left, labels[i])
		}
		why := rk.Sides[rk.Unknown[0]].Stats.Known.Why
		fmt.Fprintf(w, "Left out of what follows, their peaks unknown: %s", strings.Join(left, ", "))
		if why != "" {
			fmt.Fprintf(w, " (%s)", why)
		}
		fmt.Fprintln(w, ".")
	}
	if len(rk.Spreads) == 0 {
		fmt.Fprintln(w, "No rank's peaks are known: nothing to compare.")
		return nil
	}
	rows = nil
	for _, sp := range rk.Spreads {
		spread := units.Bytes(sp.Spread)
		if sp.Median > 0 {
			spread += fmt.Sprintf(" (%.0f%%)", 100*float64(sp.Spread)/float64(sp.Median))
		}
		rows = append(rows, []string{sp.Figure.String(),
			byRank(sp.Min, labels[sp.MinRank]),
			byRank(sp.Median, labels[sp.MedianRank]),
			byRank(sp.Max, labels[sp.MaxRank]),
			spread})
	}
	ft = kit.FitColumns(kit.Width(w), []string{"Over the ranks", "Min", "Median", "Max", "Spread"},
		[]tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight}, rows, nil, 2, 1)
	if err := ft.Render(w, "--json has them"); err != nil {
		return err
	}
	if len(rk.Sides)-len(rk.Unknown) > 1 {
		fmt.Fprintln(w, peakClockText(rk))
	}

	if err := writeRankOutliers(w, rk, labels, o); err != nil {
		return err
	}

	if rk.Diff != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Diffed: %s against the median rank, %s, each at its peak\n", labels[rk.Outlier], labels[rk.Median])
		for _, n := range rk.Diff.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
		if err := writeStackDiffs(w, rk.Diff.Stacks, DiffOptions{Top: o.Top, Full: o.Full, Frames: o.Frames}, diffRequestedKnown(rk.Diff)); err != nil {
			return err
		}
	}
	return nil
}

// writeRankOutliers writes the ranks flagged against the median rank and
// the stacks whose live bytes at each rank's peak vary most.
func writeRankOutliers(w io.Writer, rk *compare.Ranks, labels []string, o RanksOptions) error {
	fmt.Fprintln(w)
	if len(rk.Outliers) == 0 {
		fmt.Fprintln(w, "No rank is more than 10% away from the median rank.")
	} else {
		fmt.Fprintln(w, "Flagged: more than 10% away from the median rank")
		for _, out := range rk.Outliers {
			s := rk.Sides[out.Rank]
			fmt.Fprintf(w, "  %s (%s, device %d): %s %s, %+.1f%% against the median %s\n",
				labels[out.Rank], kit.Escape(s.File), s.Device, out.Figure, units.Bytes(out.Value), 100*out.Deviation, units.Bytes(out.Median))
		}
	}

	if len(rk.Stacks) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Stacks whose live bytes at each rank's peak vary most across the ranks")
		var rows [][]string
		for i, v := range rk.Stacks {
			rows = append(rows, []string{strconv.Itoa(i + 1), units.Bytes(v.Spread),
				byRank(v.Min, labels[v.MinRank]),
				byRank(v.Max, labels[v.MaxRank]),
				strings.Join(frameLines(v.Frames, o.Full, o.Frames), "\n")})
		}
		ft := kit.FitWrapped(kit.Width(w), []string{"#", "Spread", "Min", "Max", "Stack (innermost frame first)"},
			[]tw.Align{tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft}, rows, nil, 4, 2)
		if err := ft.Render(w, "--json has them"); err != nil {
			return err
		}
	}
	return nil
}

// The --json schema of `snapview ranks` (documented in its --help).
type ranksJSON struct {
	Ranks       []rankJSON        `json:"ranks"`
	Spreads     []rankSpreadJSON  `json:"spreads"`
	Outliers    []rankOutlierJSON `json:"outliers"`
	Stacks      []rankStackJSON   `json:"stacks"`
	MedianRank  int               `json:"median_rank"`
	OutlierRank int               `json:"outlier_rank"`
	PeaksApart  bool              `json:"peaks_apart"`
	// ClockOriginUS and PeakSpreadUS put the ranks on one clock (time_us,
	// microseconds since the epoch): null when a rank has no timestamps.
	ClockOriginUS *int64    `json:"clock_origin_us"`
	PeakSpreadUS  *int64    `json:"peak_spread_us"`
	Unknown       []int     `json:"unknown_ranks"`
	Diff          *diffJSON `json:"diff"`
	// Align is "step" when the ranks were lined up on their first steps
	// (--align step): every time above is then on that clock, each rank's
	// time_us moved by its align_shift_us. Left out otherwise.
	Align string `json:"align,omitempty"`
}

type rankJSON struct {
	Name                  string `json:"name"`
	Rank                  *int   `json:"rank"`
	File                  string `json:"file"`
	Device                int    `json:"device"`
	PeakAllocatedBytes    *int64 `json:"peak_allocated_bytes"`
	PeakReservedBytes     *int64 `json:"peak_reserved_bytes"`
	CurrentAllocatedBytes int64  `json:"current_allocated_bytes"`
	CurrentReservedBytes  int64  `json:"current_reserved_bytes"`
	OOMs                  *int   `json:"ooms"`
	Exactness             string `json:"exactness"`
	PeakAllocatedEntry    int    `json:"peak_allocated_entry"`
	PeakAllocatedStep     int    `json:"peak_allocated_step"`
	PeakReservedEntry     int    `json:"peak_reserved_entry"`
	PeakReservedStep      int    `json:"peak_reserved_step"`
	PeakAllocatedTimeUS   *int64 `json:"peak_allocated_time_us"`
	PeakReservedTimeUS    *int64 `json:"peak_reserved_time_us"`
	ReservedMinusAlloc    *int64 `json:"reserved_minus_allocated_bytes"`
	NumAllocRetries       *int64 `json:"num_alloc_retries"`
	// NumAllocRetriesAtMost is the most num_alloc_retries can be where
	// the trace bounds it from both sides (summary's "at_most").
	NumAllocRetriesAtMost *int64 `json:"num_alloc_retries_at_most,omitempty"`
	Coverage              string `json:"coverage"`
	// AlignShiftUS is how far --align step moved the rank's times
	// (microseconds); left out without it.
	AlignShiftUS *int64 `json:"align_shift_us,omitempty"`
}

type rankSpreadJSON struct {
	Figure     string `json:"figure"`
	Min        int64  `json:"min"`
	Median     int64  `json:"median"`
	Max        int64  `json:"max"`
	Spread     int64  `json:"spread"`
	MinRank    int    `json:"min_rank"`
	MedianRank int    `json:"median_rank"`
	MaxRank    int    `json:"max_rank"`
}

type rankOutlierJSON struct {
	Rank      int     `json:"rank"`
	Name      string  `json:"name"`
	File      string  `json:"file"`
	Device    int     `json:"device"`
	Figure    string  `json:"figure"`
	Value     int64   `json:"value"`
	Median    int64   `json:"median"`
	Deviation float64 `json:"deviation"`
}

type rankStackJSON struct {
	Key    string          `json:"key"`
	Frames []diffFrameJSON `json:"frames"`
	Bytes  []*int64        `json:"bytes"`
	Min    int64           `json:"min"`
	Max    int64           `json:"max"`
	Spread int64           `json:"spread"`
}

// WriteRanksJSON writes a rank comparison as `snapview ranks --json` does.
func WriteRanksJSON(w io.Writer, rk *compare.Ranks, o RanksOptions) error {
	j := ranksJSON{
		Ranks: []rankJSON{}, Spreads: []rankSpreadJSON{}, Outliers: []rankOutlierJSON{}, Stacks: []rankStackJSON{},
		MedianRank: rk.Median, OutlierRank: rk.Outlier, PeaksApart: rk.PeaksApart, Unknown: rk.Unknown,
	}
	if rk.OneClock {
		origin, spread := rk.ClockOrigin, rk.PeakSpreadUS
		j.ClockOriginUS, j.PeakSpreadUS = &origin, &spread
	}
	labels := rankNames(rk.Sides)
	for i, s := range rk.Sides {
		h := s.Stats.Known.History
		rj := rankJSON{
			Name: labels[i], File: s.File, Device: s.Device,
			PeakAllocatedBytes: kit.KnownOr(s.PeakAllocated, h), PeakReservedBytes: kit.KnownOr(s.PeakReserved, h),
			CurrentAllocatedBytes: s.End.AllocatedBytes[stats.PoolAll].Current,
			CurrentReservedBytes:  s.End.ReservedBytes[stats.PoolAll].Current,
			OOMs:                  kit.KnownOr(s.OOMs, s.End.Known.NumOOMs), Exactness: h.String(),
			PeakAllocatedEntry: s.PeakAllocatedAt, PeakAllocatedStep: s.PeakAllocatedStep,
			PeakReservedEntry: s.PeakReservedAt, PeakReservedStep: s.PeakReservedStep,
			ReservedMinusAlloc: kit.KnownOr(s.ReservedAtPeakAllocated-s.PeakAllocated, h),
			NumAllocRetries:    kit.KnownOr(s.End.NumAllocRetries, s.End.Known.NumAllocRetries), Coverage: string(s.Coverage),
		}
		if _, hi, ok := s.End.RetriesRange(); ok {
			rj.NumAllocRetriesAtMost = &hi
		}
		rj.PeakAllocatedTimeUS = peakTimeUS(s, s.PeakAllocatedAt, s.PeakAllocatedUS)
		rj.PeakReservedTimeUS = peakTimeUS(s, s.PeakReservedAt, s.PeakReservedUS)
		if n, ok := compare.RankNumber(s.File); ok {
			rj.Rank = &n
		}
		if s.Aligned {
			shift := s.ShiftUS
			rj.AlignShiftUS = &shift
			j.Align = "step"
		}
		j.Ranks = append(j.Ranks, rj)
	}
	for _, sp := range rk.Spreads {
		j.Spreads = append(j.Spreads, rankSpreadJSON{
			Figure: string(sp.Figure), Min: sp.Min, Median: sp.Median, Max: sp.Max, Spread: sp.Spread,
			MinRank: sp.MinRank, MedianRank: sp.MedianRank, MaxRank: sp.MaxRank,
		})
	}
	for _, out := range rk.Outliers {
		s := rk.Sides[out.Rank]
		j.Outliers = append(j.Outliers, rankOutlierJSON{
			Rank: out.Rank, Name: labels[out.Rank], File: s.File, Device: s.Device, Figure: string(out.Figure),
			Value: out.Value, Median: out.Median, Deviation: out.Deviation,
		})
	}
	for _, v := range rk.Stacks {
		bytes := make([]*int64, len(v.Bytes))
		for r, b := range v.Bytes {
			bytes[r] = kit.KnownOr(b, rk.Sides[r].Stats.Known.History)
		}
		j.Stacks = append(j.Stacks, rankStackJSON{Key: v.Key, Frames: framesJSON(v.Frames), Bytes: bytes, Min: v.Min, Max: v.Max, Spread: v.Spread})
	}
	if rk.Diff != nil {
		dj := diffToJSON(rk.Diff, DiffOptions{BaseAt: "peak", NewAt: "peak"})
		j.Diff = &dj
	}
	return kit.WriteJSON(w, j)
}

// rankCellWidth is the most columns a rank's name takes in a table cell
// before it wraps: a file's path can be long.
const rankCellWidth = 24

// byRank is a table cell of bytes held by a rank: "322.1 MiB (rank 1)",
// or, for a rank named by a long path, the name in parentheses below the
// bytes, wrapped to rankCellWidth.
func byRank(bytes int64, label string) string {
	if len(label) <= 10 {
		return units.Bytes(bytes) + " (" + label + ")"
	}
	return units.Bytes(bytes) + "\n" + kit.WrapCell("("+label+")", rankCellWidth)
}

// peakClockText says whether the ranks' allocated peaks fall together, on
// which clock, and how far apart.
func peakClockText(rk *compare.Ranks) string {
	const since = " (times are from the first rank's first entry)"
	clock := "the time_us clock"
	if rk.Aligned {
		clock = "the time_us clock with the ranks' first steps lined up (--align step)"
	}
	if rk.PeaksApart {
		var where []string
		lo, hi := -1, -1
		for _, s := range rk.Sides {
			if s.PeakAllocatedStep >= 0 && (lo < 0 || s.PeakAllocatedStep < lo) {
				lo = s.PeakAllocatedStep
			}
			hi = max(hi, s.PeakAllocatedStep)
		}
		if lo >= 0 && hi != lo {
			where = append(where, fmt.Sprintf("in steps %d to %d", lo, hi))
		}
		if rk.OneClock {
			where = append(where, units.Span(rk.PeakSpreadUS)+" apart on "+clock+since)
		}
		if len(where) == 0 {
			where = append(where, "at different points of their traces")
		}
		return "The ranks' allocated peaks fall apart, " + strings.Join(where, ", ") + ": each rank is compared at its own peak, not at one instant."
	}
	if rk.OneClock && rk.Aligned {
		return fmt.Sprintf("The ranks' allocated peaks fall together: within %s of each other on %s%s; their first steps started up to %s apart on time_us.",
			units.Span(rk.PeakSpreadUS), clock, since, units.Span(rk.FirstStepsApartUS))
	}
	if rk.OneClock {
		return fmt.Sprintf("The ranks' allocated peaks fall together: within %s of each other on %s%s; the ranks started recording up to %s apart.",
			units.Span(rk.PeakSpreadUS), clock, since, units.Span(latestStart(rk)-rk.ClockOrigin))
	}
	return "Each rank is compared at its own peak; here the peaks fall in the same step (or at the same point of the trace)."
}

// latestStart is the latest first entry's time_us of the ranks.
func latestStart(rk *compare.Ranks) int64 {
	var t int64
	for _, s := range rk.Sides {
		if s.HasTime {
			t = max(t, s.FirstUS)
		}
	}
	return t
}

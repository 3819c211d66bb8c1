package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/report/html"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// TestViewsAgree is the consistency property over every file of
// ../shared/snapshots: for each device, the models behind summary,
// segments, state --at end, leaks and info agree on the live allocations,
// the free bytes inside the segments and the largest free block; every view
// carries the one trust verdict (replay.DecideTrust) for the history
// figures; and no output calls them exact where the verdict is not, or
// prints a history figure the verdict calls unknown. Files that do not
// decode (hostile ones) are left to the bad-input tests.
func TestViewsAgree(t *testing.T) {
	root := corpus.Dir(t)
	var files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		switch {
		case strings.HasSuffix(name, ".pickle"), strings.HasSuffix(name, ".pickle.xz"), strings.HasSuffix(name, ".pickle.gz"):
		case strings.HasSuffix(name, ".json") && strings.Contains(p, string(filepath.Separator)+"field"+string(filepath.Separator)):
		default:
			return nil
		}
		if testing.Short() && (strings.HasSuffix(name, ".xz") || strings.Contains(p, "hostile")) {
			return nil
		}
		files = append(files, p)
		return nil
	})
	var checked, devices, undecoded int
	byTrust := map[stats.Exactness]int{}
	byRequested := map[stats.Exactness]int{}
	for _, p := range files {
		raw, err := snapshot.Load(p)
		if err != nil {
			undecoded++
			continue
		}
		s, _ := replay.Complete(raw)
		name, _ := filepath.Rel(root, p)
		checked++
		info := info.Inspect(s, nil, nil)
		devs := s.Devices()
		if len(devs) > 4 {
			// hostile/devices_10000_memo: every view builds its model per
			// device from the whole file; four devices show the property.
			devs = devs[:4]
		}
		// One analysis per file as the commands make it: StatsOnly as
		// summary's, Full as state's and leaks'; every device's views are
		// queries on them (a replay each, not one per view).
		an := analysis.New(s, analysis.Options{Mode: replay.StatsOnly})
		full := analysis.New(s, analysis.Options{})
		var page *html.Report
		if !strings.Contains(name, "hostile") {
			if page, err = buildHTML(s, html.Options{Title: name, Top: 5, Devices: devs}); err != nil {
				t.Errorf("%s: report: %v", name, err)
			}
		}
		for _, dev := range devs {
			devices++
			st, _ := an.Stats(dev)
			checkDeviceViews(t, name, s, full, st, dev, info, page)
			if page != nil {
				checkHTMLDevice(t, name, s, st, dev, page)
			}
			byTrust[st.Known.History]++
			byRequested[st.Known.Requested]++
		}
	}
	// 116 files today, 67 of them with -short (no .xz, no hostile).
	minFiles := 100
	if testing.Short() {
		minFiles = 60
	}
	corpus.AtLeast(t, "snapshots decoded", checked, minFiles)
	t.Logf("%d files (%d did not decode), %d devices; history exact on %d, lower bounds on %d, unknown on %d; requested sizes exact on %d, unknown on %d",
		checked, undecoded, devices, byTrust[stats.Exact], byTrust[stats.LowerBound], byTrust[stats.Unknown],
		byRequested[stats.Exact], byRequested[stats.Unknown])
}

// checkDeviceViews checks the views of device dev of s: st is its
// summary's figures, full the file's Full analysis, page the report (nil:
// built here where needed).
func checkDeviceViews(t *testing.T, name string, s *snapshot.Snapshot, full *analysis.File, st *stats.MemoryStats, dev int, info *info.Info, page *html.Report) {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s device %d: "+format, append([]any{name, dev}, args...)...)
	}
	// summary (each format takes the same stats and model).
	sum := report.NewSummary(name, full, []*stats.MemoryStats{st})
	total := sum.Devices[0].Total
	// segments.
	seg := report.NewSegments(s, []int{dev}).Devices[0].Total
	// state --at end, from the replay.
	r, err := full.Replay(dev)
	if err != nil {
		errorf("replay: %v", err)
		return
	}
	if r.Stats.Known != st.Known {
		errorf("summary's trust %+v, the replay's %+v", st.Known, r.Stats.Known)
	}
	end, err := r.StateAt(len(r.Allocated) - 1)
	if err != nil {
		errorf("state at end: %v", err)
		return
	}
	var stFree, stLargest int64
	for _, f := range end.Free {
		stFree += f.FreeBytes
		stLargest = max(stLargest, f.Largest)
	}
	stLive := end.Stats.Allocation[stats.PoolAll].Current
	// leaks at the end.
	lo := leaks.DefaultLeakOptions(r)
	lo.At = len(r.Allocated) - 1
	rep, err := leaks.Leaks(s, r, lo)
	if err != nil {
		errorf("leaks: %v", err)
		return
	}
	if rep.History != st.Known && len(r.Allocated) > 0 {
		errorf("leaks' trust %+v, the summary's %+v", rep.History, st.Known)
	}
	for _, c := range []struct {
		what       string
		a, b, c, d int64
	}{
		{"live allocations (summary, segments, state, leaks)", int64(total.AllocatedBlocks), int64(seg.AllocatedBlocks), stLive, int64(rep.LiveCount)},
		{"free bytes (summary, segments, state, summary stats)", total.InactiveBytes, seg.InactiveBytes, stFree,
			st.ReservedBytes[stats.PoolAll].Current - st.ActiveBytes[stats.PoolAll].Current},
		{"largest free block (summary, segments, state)", total.LargestFree, seg.LargestFree, stLargest, stLargest},
	} {
		if c.a != c.b || c.a != c.c || c.a != c.d {
			errorf("%s disagree: %d, %d, %d, %d", c.what, c.a, c.b, c.c, c.d)
		}
	}
	checkRequestedViews(t, name, s, dev, st, sum, r, end, page)
	// info.
	for _, di := range info.Devices {
		if di.Device == dev && di.Replayed && di.Trust != st.Known {
			errorf("info's trust %+v, the summary's %+v", di.Trust, st.Known)
		}
	}
	// What the outputs say.
	var text, torch bytes.Buffer
	if err := report.WriteSummaryText(&text, sum); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteTorchSummary(&torch, st); err != nil {
		t.Fatal(err)
	}
	k := st.Known
	switch k.History {
	case stats.Exact:
		if strings.Contains(text.String(), "Peak: unknown") || strings.Contains(text.String(), "Peak: at least") {
			errorf("history exact, but the summary says otherwise:\n%s", text.String())
		}
		if strings.Contains(torch.String(), "?") && hasTrace(s, dev) {
			errorf("history exact, but the torch table has a '?':\n%s", torch.String())
		}
	default:
		if strings.Contains(text.String(), "(exact)") || strings.Contains(text.String(), "are exact") {
			errorf("history %v, but the summary calls a figure exact:\n%s", k.History, text.String())
		}
		if k.History == stats.Unknown && !strings.Contains(torch.String(), "?") {
			errorf("history unknown, but the torch table has no '?':\n%s", torch.String())
		}
		if k.History == stats.LowerBound && !strings.Contains(torch.String(), "+|") {
			errorf("history a lower bound, but the torch table has no '+':\n%s", torch.String())
		}
		if hasTrace(s, dev) && k.Why == "" {
			errorf("history %v without a reason", k.History)
		}
	}
	if len(s.Devices()) == 1 {
		var in bytes.Buffer
		if err := report.WriteInfo(&in, &report.Info{Path: name, Info: info}); err != nil {
			t.Fatal(err)
		}
		if k.History != stats.Exact && strings.Contains(in.String(), "are exact") {
			errorf("history %v, but info calls peaks exact:\n%s", k.History, in.String())
		}
		if want := kit.TrustText(k); hasTrace(s, dev) && !strings.Contains(strings.Join(strings.Fields(in.String()), " "), want) {
			errorf("info does not say %q", want)
		}
	}
	for _, f := range st.Figures() {
		if f.Exactness == stats.Exact && k.History != stats.Exact && isHistoryKey(f.Key) {
			errorf("%s is exact while the history is %v", f.Key, k.History)
		}
	}
}

// isHistoryKey reports whether a memory_stats() key is a history figure
// (peak, allocated, freed, num_ooms).
func isHistoryKey(key string) bool {
	return strings.HasSuffix(key, ".peak") || strings.HasSuffix(key, ".allocated") || strings.HasSuffix(key, ".freed") || key == "num_ooms"
}

// checkHTMLDevice checks the report's section of dev: the memory_summary()
// table is the summary's, and a history that is not exact is said there in
// the words of every view.
func checkHTMLDevice(t *testing.T, name string, s *snapshot.Snapshot, st *stats.MemoryStats, dev int, r *html.Report) {
	t.Helper()
	var torch bytes.Buffer
	if err := report.WriteTorchSummary(&torch, st); err != nil {
		t.Fatal(err)
	}
	for _, d := range r.Devices {
		if d.Device != dev {
			continue
		}
		if d.Summary != torch.String() {
			t.Errorf("%s device %d: the report's memory_summary() differs from the summary's", name, dev)
		}
		if k := st.Known; hasTrace(s, dev) && k.History != stats.Exact {
			want := "History: " + kit.TrustText(k)
			found := false
			for _, n := range d.Notes {
				found = found || strings.HasPrefix(n, want)
			}
			if !found {
				t.Errorf("%s device %d: the report does not say %q (notes %q)", name, dev, want, d.Notes)
			}
		}
		return
	}
	t.Errorf("%s device %d: not in the report", name, dev)
}

// checkRequestedViews is the property for the requested bytes: every view
// of dev carries the one verdict on its requested sizes
// (stats.RequestedTrust, in Known.Requested); where it is Unknown no
// view prints the file's requested figure unmarked: the torch table has
// "?" in every Requested memory cell, the text views say why and show no
// requested total, the JSON views carry "requested": unknown and null
// figures; where it is Exact the figures are printed as before.
func checkRequestedViews(t *testing.T, name string, s *snapshot.Snapshot, dev int, st *stats.MemoryStats, sum *report.Summary,
	r *replay.Result, end *replay.State, page *html.Report) {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s device %d: "+format, append([]any{name, dev}, args...)...)
	}
	k := st.Known
	want, why := stats.RequestedTrust(s, dev)
	segs := report.NewSegments(s, []int{dev})
	for _, v := range []struct {
		view string
		k    stats.Known
	}{{"summary", k}, {"replay", r.Stats.Known}, {"state", end.Stats.Known}, {"segments", segs.Devices[0].Known}} {
		if v.k.Requested != want || v.k.RequestedWhy != why {
			errorf("%s: requested %v (%q), the rule says %v (%q)", v.view, v.k.Requested, v.k.RequestedWhy, want, why)
		}
	}
	view := report.NewStateView(s, r, end, "end", report.StateOptions{Top: 10})
	var text, torch, segText, stText, sumJSON, segJSON, stJSON bytes.Buffer
	for _, w := range []error{
		report.WriteSummaryText(&text, sum), report.WriteTorchSummary(&torch, st), report.WriteSegments(&segText, segs),
		report.WriteState(&stText, view), report.WriteSummaryJSON(&sumJSON, sum), report.WriteSegmentsJSON(&segJSON, segs),
		report.WriteStateJSON(&stJSON, view),
	} {
		if w != nil {
			t.Fatal(w)
		}
	}
	// The Requested memory rows of the torch table: the label, then the
	// four cells.
	var torchReq []string
	lines := strings.Split(torch.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "| Requested memory") && i+2 < len(lines) {
			torchReq = []string{l[24:], lines[i+1][24:], lines[i+2][24:]}
		}
	}
	if len(torchReq) != 3 {
		errorf("no Requested memory rows in the torch table:\n%s", torch.String())
		return
	}
	var sj struct {
		Devices []struct {
			MemoryStats map[string]struct {
				Value *int64 `json:"value"`
			} `json:"memory_stats"`
			Total struct {
				RequestedBytes *int64 `json:"requested_bytes"`
			} `json:"total"`
			Requested struct{ Exactness, Why string } `json:"requested"`
		} `json:"devices"`
	}
	var gj struct {
		Devices []struct {
			Totals    struct{ RequestedBytes, FreeBytes *int64 } `json:"totals"`
			Requested struct{ Exactness, Why string }            `json:"requested"`
		} `json:"devices"`
	}
	var tj struct {
		Requested struct{ Exactness, Why string } `json:"requested"`
		Largest   []struct {
			RequestedSize *int64 `json:"requested_size"`
		} `json:"largest"`
	}
	for _, j := range []struct {
		buf *bytes.Buffer
		v   any
	}{{&sumJSON, &sj}, {&segJSON, &gj}, {&stJSON, &tj}} {
		if err := json.Unmarshal(j.buf.Bytes(), j.v); err != nil {
			t.Fatal(err)
		}
	}
	if len(sj.Devices) != 1 || len(gj.Devices) != 1 {
		errorf("JSON: %d summary devices, %d segments devices", len(sj.Devices), len(gj.Devices))
		return
	}
	for _, v := range []struct {
		view, exactness, why string
	}{{"summary", sj.Devices[0].Requested.Exactness, sj.Devices[0].Requested.Why}, {"segments", gj.Devices[0].Requested.Exactness, gj.Devices[0].Requested.Why},
		{"state", tj.Requested.Exactness, tj.Requested.Why}} {
		if v.exactness != want.String() || v.why != why {
			errorf("%s --json: requested %q (%q), the rule says %v (%q)", v.view, v.exactness, v.why, want, why)
		}
	}
	total := sum.Devices[0].Total.ActiveRequestedBytes()
	figure := units.Bytes(total)
	texts := map[string]string{"summary": text.String(), "segments": segText.String(), "state": stText.String()}
	if want == stats.Unknown {
		for i, row := range torchReq {
			if strings.ContainsAny(row, "0123456789") || strings.Count(row, "?") != 4 {
				errorf("requested unknown, but Requested memory row %d of the torch table is %q", i, row)
			}
		}
		note := "Requested: unknown (" + why + ")."
		other := map[string]bool{}
		for _, v := range []int64{sum.Devices[0].Total.AllocatedBytes, sum.Devices[0].Total.ActiveBytes(), sum.Devices[0].Total.Size} {
			other[units.Bytes(v)] = true
		}
		for v, out := range texts {
			if !strings.Contains(strings.Join(strings.Fields(out), " "), note) {
				errorf("requested unknown, but %s does not say %q:\n%s", v, note, out)
			}
			if total > 0 && !other[figure] && strings.Contains(out, figure) {
				errorf("requested unknown, but %s prints the requested total %s:\n%s", v, figure, out)
			}
		}
		if sj.Devices[0].Total.RequestedBytes != nil || gj.Devices[0].Totals.RequestedBytes != nil || gj.Devices[0].Totals.FreeBytes != nil {
			errorf("requested unknown, but the JSON totals carry requested figures")
		}
		for key, f := range sj.Devices[0].MemoryStats {
			if strings.HasPrefix(key, "requested_bytes.") && f.Value != nil {
				errorf("requested unknown, but summary --json gives %s = %d", key, *f.Value)
			}
		}
		for _, a := range tj.Largest {
			if a.RequestedSize != nil {
				errorf("requested unknown, but state --json gives a live allocation's requested_size %d", *a.RequestedSize)
			}
		}
		// The report: the note, and the tooltips' "?".
		if page == nil {
			var err error
			if page, err = buildHTML(s, html.Options{Title: name, Top: 5, Devices: []int{dev}}); err != nil {
				errorf("report: %v", err)
				return
			}
		}
		i := slices.IndexFunc(page.Devices, func(d html.DeviceView) bool { return d.Device == dev })
		if i < 0 {
			errorf("not in the report")
			return
		}
		if d := page.Devices[i]; !slices.Contains(d.Notes, note) || !d.RequestedUnknown || d.Summary != torch.String() {
			errorf("requested unknown, but the report's notes are %q (RequestedUnknown %v)", d.Notes, d.RequestedUnknown)
		}
		return
	}
	// Exact: the figures as before, and no mark of the rule.
	for v, out := range texts {
		if strings.Contains(out, "Requested: unknown") {
			errorf("requested exact, but %s says it is unknown:\n%s", v, out)
		}
	}
	if k.Current != stats.Unknown && strings.Contains(torchReq[0][:12], "?") {
		errorf("requested exact, but the torch table's Requested memory is %q", torchReq[0])
	}
	if strings.Contains(text.String(), "| Requested") && !strings.Contains(text.String(), figure) {
		errorf("requested exact, but the summary does not print the requested total %s:\n%s", figure, text.String())
	}
	if p := sj.Devices[0].Total.RequestedBytes; p == nil || *p != total {
		errorf("requested exact, but summary --json gives total requested_bytes %v, want %d", p, total)
	}
	if p := sj.Devices[0].MemoryStats["requested_bytes.all.current"].Value; k.Current != stats.Unknown && (p == nil || *p != st.RequestedBytes[stats.PoolAll].Current) {
		errorf("requested exact, but summary --json gives requested_bytes.all.current %v", p)
	}
}

// statsFor is the summary's memory_stats() figures of device dev of s.
func statsFor(s *snapshot.Snapshot, dev int) (*stats.MemoryStats, []string) {
	return analysis.New(s, analysis.Options{Mode: replay.StatsOnly}).Stats(dev)
}

// buildHTML is the report of s, analysed as the report command does.
func buildHTML(s *snapshot.Snapshot, opt html.Options) (*html.Report, error) {
	return html.Build(analysis.New(s, opt.Analysis()), opt)
}

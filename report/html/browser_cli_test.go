package html

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/snapshot"
)

// browserCLIData is what TestBrowserDiffFromCLI reads of the page's data
// island: the stack table and each device section's groups.
type browserCLIData struct {
	Stacks  [][]string `json:"stacks"`
	Devices []struct {
		Device           int               `json:"device"`
		RequestedUnknown bool              `json:"requestedUnknown"`
		Groups           []browserCLIGroup `json:"groups"`
	} `json:"devices"`
}

// browserCLIGroup is a group of a device's timeline in the data island.
type browserCLIGroup struct {
	Label string `json:"label"`
	Stack int    `json:"stack"`
}

// buildSnapview builds cmd/snapview into dir with go build (the command a
// user runs) and returns its path.
func buildSnapview(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "snapview")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/snapview")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/snapview: %v\n%s", err, out)
	}
	return bin
}

// TestBrowserDiffFromCLI runs `snapview report -o FILE --base BASE NEW`
// from the command line, as a user does (the command built with go
// build), and drives the diff page it writes in headless Chromium as
// TestBrowserMultiFile drives a page built in-process: the Diff section
// on top is `snapview diff --width 240 BASE NEW`'s text; on each file's
// device a click in the middle of the timeline shows the state the replay
// of that file has after the entry the page names (what `snapview state
// --at entry:N` prints: segments, reserved and allocated bytes, each
// block); hovering the largest group shows its label and stack, and
// hovering a single allocation drawn on its own shows its size and the
// frames of the replay's allocation at that address and entry. It fails
// when the page's click handler shows another entry's state (checked by
// breaking report.js's click on purpose).
func TestBrowserDiffFromCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	chrome := findChromium()
	if chrome == "" {
		t.Skip("chromium not found (apt-get install chromium, or set SNAPVIEW_CHROMIUM): skipping the browser test")
	}
	dir := t.TempDir()
	bin := buildSnapview(t, dir)
	snaps := filepath.Join("..", "..", "testdata", "snapshots")
	base, neu := filepath.Join(snaps, "mlp_train.pickle"), filepath.Join(snaps, "leak_cycle.pickle")
	page := filepath.Join(dir, "diff.html")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "report", "-o", page, "--base", base, neu)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("snapview report --base: %v\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(stderr.String(), "wrote "+page+" (") {
		t.Errorf("snapview report --base wrote on stderr %q, want the file it wrote", stderr.String())
	}
	diff, err := exec.Command(bin, "diff", "--width", "240", base, neu).Output()
	if err != nil {
		t.Fatalf("snapview diff: %v", err)
	}
	loaded := map[string]*snapshot.Snapshot{}
	for _, p := range []string{base, neu} {
		if loaded[p], err = snapshot.Load(p); err != nil {
			t.Fatal(err)
		}
	}

	ctx := browserContext(t, chrome)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitReady(chromedp.CSS(`html[data-charts]`))); err != nil {
		t.Fatal(err)
	}
	browserWaitSettled(t, ctx)
	if got := browserEval[string](t, ctx, `document.getElementById("compare") ? document.querySelector("#compare h2").textContent + "\n" + document.querySelector("#compare pre").textContent : ""`); got != "Diff\n"+string(diff) {
		t.Errorf("the page's Diff section reads\n%s\nwant snapview diff's\n%s", got, diff)
	}
	data := browserEval[browserCLIData](t, ctx, `JSON.parse(document.getElementById("snapview-data").textContent)`)
	devs := browserEval[[]browserDevice](t, ctx, browserDevicesJS)
	var clicks, hovers, singles int
	files := map[string]bool{}
	for k, pd := range devs {
		dd := data.Devices[k]
		heading := browserEval[string](t, ctx, fmt.Sprintf(`document.querySelector("#%s h2").textContent`, pd.Section))
		file, _, _ := strings.Cut(heading, ": Device ")
		s := loaded[file]
		if s == nil || heading != fmt.Sprintf("%s: Device %d", file, dd.Device) {
			t.Fatalf("section %s is headed %q: not a device of %s or %s", pd.Section, heading, base, neu)
		}
		files[file] = true
		if pd.Timeline == "" {
			continue
		}
		res, err := replay.Run(s, dd.Device, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Hovering first (a click on a single allocation pins it, and
		// the panel then stays): the largest group with a stack shows its
		// label and its stack.
		gi := slices.IndexFunc(dd.Groups, func(g browserCLIGroup) bool { return g.Stack >= 0 })
		if hpt := browserEval[[]float64](t, ctx, fmt.Sprintf(browserHoverJS, pd.Timeline, gi)); gi >= 0 && len(hpt) == 2 {
			browserMoveTo(t, ctx, hpt)
			shown := browserEval[[]string](t, ctx, fmt.Sprintf(`Array.prototype.map.call(document.getElementById(%q).querySelectorAll(".tt-head, .tt-frame"), function (e) { return e.textContent; })`, pd.Section+"-hover"))
			g := dd.Groups[gi]
			if want := append([]string{g.Label}, data.Stacks[g.Stack]...); !slices.Equal(shown, want[:min(len(want), 41)]) {
				t.Errorf("%s: hovering group %d shows\n%s\nwant\n%s", heading, gi, strings.Join(shown, "\n"), strings.Join(want, "\n"))
			}
			hovers++
		}
		singles += browserCheckCLISingle(t, ctx, s, res, pd, len(dd.Groups), dd.RequestedUnknown, heading)
		// A click in the middle of the timeline shows the replay's state
		// after the entry the page names.
		nRows := browserEval[int](t, ctx, fmt.Sprintf(`echarts.getInstanceByDom(document.getElementById(%q)).getOption().dataset[0].source.length`, pd.Timeline))
		for _, row := range []int{nRows / 3, nRows / 2} {
			pt := browserEval[[]float64](t, ctx, fmt.Sprintf(browserClickJS, pd.Timeline, row, pd.ByIndex))
			if err := chromedp.Do(ctx, chromedp.MouseClickXY(pt[0], pt[1])); err != nil {
				t.Fatal(err)
			}
			got, err := chromedp.Run(ctx, chromedp.Evaluate[string](browserInspectedJS, chromedp.EvalAwaitPromise))
			if err != nil || got == "" {
				t.Fatalf("%s: clicking row %d showed no state (%v)", heading, row, err)
			}
			i := 0
			fmt.Sscan(got, &i)
			if lo, hi := int(pt[2]), int(pt[3]); i < lo || i > hi {
				t.Errorf("%s: clicking row %d (entries %d to %d under the pointer) shows entry %d", heading, row, lo, hi, i)
			}
			st, err := res.StateAt(i)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range browserCompare(browserEval[browserPanel](t, ctx, fmt.Sprintf(browserPanelJS, pd.Section, pd.Segments)), st, i) {
				t.Errorf("%s, after clicking row %d: %s", heading, row, e)
			}
			clicks++
		}
	}
	if len(files) != 2 || clicks == 0 || hovers == 0 || singles == 0 {
		t.Errorf("nothing checked: %d files' sections, %d clicks, %d group hovers, %d single allocations hovered", len(files), clicks, hovers, singles)
	}
}

// browserMoveTo moves the mouse to pt through a point just left of it
// (the chart reads a move, not a jump).
func browserMoveTo(t *testing.T, ctx context.Context, pt []float64) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 1, 1),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pt[0]-3, pt[1]),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pt[0], pt[1])); err != nil {
		t.Fatal(err)
	}
}

// browserCheckCLISingle hovers the first single allocation the timeline
// of pd draws on its own (the series after its groups' nGroups) and checks
// the panel against the replay res of s: the allocation at that address
// allocated at that entry, its size, requested size and the lines of its
// stack (report/stacks, as every view writes a stack). It returns 1 when
// it hovered one, else 0.
func browserCheckCLISingle(t *testing.T, ctx context.Context, s *snapshot.Snapshot, res *replay.Result, pd browserDevice, nGroups int, requestedUnknown bool, heading string) int {
	t.Helper()
	shown := browserEval[[]browserSingle](t, ctx, fmt.Sprintf(`snapviewShownSingles(%q)`, pd.Section))
	for k, sg := range shown {
		var a *replay.Allocation
		for j := range res.Allocs {
			if x := &res.Allocs[j]; x.AllocIndex == sg.Start && uint64(x.Addr) == sg.Addr {
				a = x
			}
		}
		if a == nil {
			t.Errorf("%s: single %d (%s at %#x, alloc entry %d) is not an allocation of the replay", heading, k, units.Bytes(sg.Size), sg.Addr, sg.Start)
			continue
		}
		pt := browserEval[[]float64](t, ctx, fmt.Sprintf(browserHoverJS, pd.Timeline, nGroups+k))
		if len(pt) != 2 {
			continue
		}
		browserEval[string](t, ctx, fmt.Sprintf(`document.getElementById(%q).innerHTML = ""; ""`, pd.Section+"-hover"))
		browserMoveTo(t, ctx, pt)
		text := browserEval[[]string](t, ctx, fmt.Sprintf(`Array.prototype.map.call(document.getElementById(%q).querySelectorAll(".tt-head, .tt-row, .tt-frame"), function (e) { return e.textContent; })`, pd.Section+"-hover"))
		want := []string{fmt.Sprintf("allocation of %s at %#x", units.Bytes(a.Size), uint64(a.Addr)), "size" + units.Bytes(a.Size)}
		if !requestedUnknown {
			want = append(want, "requested"+units.Bytes(a.Requested))
		}
		frames := stacks.LinesOf(s, a.Stack, stacks.LineOptions{})
		if len(frames) == 0 {
			frames = []string{"<no stack recorded>"}
		}
		if len(text) < len(want) || strings.Join(text[:len(want)], "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: hovering single %d shows\n%s\nwant it to start with\n%s", heading, k, strings.Join(text, "\n"), strings.Join(want, "\n"))
		} else if got := strings.Join(text[len(text)-min(len(frames), len(text)):], "\n"); len(frames) <= 40 && got != strings.Join(frames, "\n") {
			t.Errorf("%s: hovering single %d shows the frames\n%s\nwant the replay's allocation's\n%s", heading, k, got, strings.Join(frames, "\n"))
		}
		return 1
	}
	return 0
}

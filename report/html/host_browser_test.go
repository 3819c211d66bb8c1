package html

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// TestHostInChromium renders the pages of host_pinned.pickle (device and
// pinned host memory) and host_memory.pickle (host memory only: no device
// section) in headless Chromium: the script runs without error, draws the
// device's charts (none on the host-only page), and the host section shows
// its figures and its live pinned memory by stack.
func TestHostInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := findChromium()
	if bin == "" {
		t.Skip("chromium not found (apt-get install chromium, or set SNAPVIEW_CHROMIUM): skipping the browser test")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		devices []int
		charts  int
		want    []string
	}{
		{"host_pinned", nil, 2, []string{"6.0 MiB pinned in 4 blocks", "pin_batch", "collate"}},
		{"host_memory", []int{}, 0, []string{"2.0 MiB pinned in 3 blocks", "pin_memory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", tc.name+".pickle"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := buildHTML(s, Options{Title: tc.name, Devices: tc.devices})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, tc.name+".html")
			if err := os.WriteFile(file, []byte(writeHTMLString(t, r)), 0o644); err != nil {
				t.Fatal(err)
			}
			dom, console := runChromium(t, bin, file, "--dump-dom", "--window-size=1400,1800")
			for _, line := range console {
				t.Errorf("console: %s", line)
			}
			m := chartsAttrRE.FindStringSubmatch(dom)
			if m == nil {
				t.Fatal("report.js did not finish (no data-charts attribute): a script error stopped it")
			}
			if got, _ := strconv.Atoi(m[1]); got != tc.charts {
				t.Errorf("report.js drew %d charts, want %d", got, tc.charts)
			}
			k := strings.Index(dom, `id="host"`)
			if k < 0 {
				t.Fatal("no host section in the rendered page")
			}
			sec := dom[k : k+strings.Index(dom[k:], "</section>")]
			for _, want := range append(tc.want[:len(tc.want):len(tc.want)], "Pinned host memory</h2>", "Handed out at the end, by stack</h3>") {
				if !strings.Contains(sec, want) {
					t.Errorf("rendered host section lacks %q:\n%s", want, sec)
				}
			}
			if got := strings.Count(dom, "<h2>Device "); got != len(s.Devices()) {
				t.Errorf("%d device sections, want %d", got, len(s.Devices()))
			}
		})
	}
}

package html

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// TestHTMLLiveStateJS runs the page's own liveState (report.js, in Node)
// on the lives a report embeds and checks, at several entries of real
// files, that the segments and blocks it shows are those `snapview state`
// shows (replay.Result.StateAt): expandable segments, whose mapped
// ranges the allocator joins, included. It skips without node.
func TestHTMLLiveStateJS(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the page's liveState is not run")
	}
	js, err := os.ReadFile(filepath.Join("assets", "report.js"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(js)
	start, end := strings.Index(src, "  function hex("), strings.Index(src, "  // nearestState")
	if start < 0 || end < start {
		t.Fatal("report.js: hex and liveState not found where the test looks for them")
	}
	script := src[start:end] + `
const data = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = data.at.map(i => liveState(data.inspect, i).map(s => ({a: s.a, size: s.size, blocks: s.blocks.map(b => [b[0], b[1]]), states: s.states})));
console.log(JSON.stringify(out));
`
	paths := []string{filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle")}
	if dir := corpus.Find(t); dir != "" {
		for _, rel := range []string{"torch2.11/expandable/snapshot.pickle", "public/p32-3dev-expandable-oom.pickle", "torch2.11/multistream/snapshot.pickle", "torch2.11/oom/snapshot.pickle"} {
			paths = append(paths, filepath.Join(dir, rel))
		}
	}
	checked := 0
	for _, path := range paths {
		s, err := snapshot.Load(path)
		if err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		r, err := buildHTML(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range r.Devices {
			if d.Inspect == nil || !d.Inspect.Live {
				continue
			}
			res, err := replay.Run(s, d.Device, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n := len(res.Allocated)
			at := []int{0, n / 4, n / 2, 3 * n / 4, n - 1, res.PeakIndex}
			at = append(at, res.OOMs...)
			in, err := json.Marshal(map[string]any{"inspect": map[string]any{"segments": d.Inspect.Segments, "allocs": d.Inspect.Allocs}, "at": at})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(node, "-e", script)
			cmd.Stdin = strings.NewReader(string(in))
			outb, err := cmd.Output()
			if err != nil {
				t.Fatalf("node: %v", err)
			}
			type jsSeg struct {
				A      int64      `json:"a"`
				Size   int64      `json:"size"`
				Blocks [][2]int64 `json:"blocks"`
				States []string   `json:"states"`
			}
			var got [][]jsSeg
			if err := json.Unmarshal(outb, &got); err != nil {
				t.Fatalf("node's output: %v", err)
			}
			for k, i := range at {
				st, err := res.StateAt(i)
				if err != nil {
					t.Fatal(err)
				}
				if i == n-1 && !res.Check.Equal {
					continue // the file's state, not the replay's
				}
				var want []jsSeg
				for _, sg := range st.Segments {
					w := jsSeg{A: int64(sg.Addr), Size: sg.Size}
					for _, b := range sg.Blocks {
						w.Blocks = append(w.Blocks, [2]int64{int64(b.Addr - sg.Addr), b.Size})
						w.States = append(w.States, htmlStateName(b.State))
					}
					want = append(want, w)
				}
				if len(got[k]) != len(want) {
					t.Errorf("%s device %d after entry %d: the page shows %d segments, state %d", filepath.Base(path), d.Device, i, len(got[k]), len(want))
					continue
				}
				for j := range want {
					g, w := got[k][j], want[j]
					if g.A != w.A || g.Size != w.Size || len(g.Blocks) != len(w.Blocks) {
						t.Errorf("%s device %d after entry %d, segment %d: page %#x (%d bytes, %d blocks), state %#x (%d bytes, %d blocks)",
							filepath.Base(path), d.Device, i, j, g.A, g.Size, len(g.Blocks), w.A, w.Size, len(w.Blocks))
						break
					}
					for b := range w.Blocks {
						if g.Blocks[b] != w.Blocks[b] || g.States[b] != w.States[b] {
							t.Errorf("%s device %d after entry %d, segment %#x block %d: page %v %s, state %v %s",
								filepath.Base(path), d.Device, i, w.A, b, g.Blocks[b], g.States[b], w.Blocks[b], w.States[b])
							break
						}
					}
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no state checked")
	}
	t.Logf("%d states checked", checked)
}

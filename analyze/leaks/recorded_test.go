package leaks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// TestLeaksRecorded ranks the leaks of the two real recordings made on an
// H200 by testdata/gen/gpugen.py (testdata/snapshots/README.md): the planted
// leak (file and line in each .meta.json) must be the top group, with a
// leak verdict, and the groups of model parameters must rank below it with
// score 0.
func TestLeaksRecorded(t *testing.T) {
	for _, tt := range []struct {
		name string
		want VerdictKind
	}{
		{"leak_cache", VerdictLeak},
		{"leak_cycle", VerdictSawtooth},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "snapshots")
			var meta struct {
				Leak struct {
					Line     int64  `json:"line"`
					Function string `json:"function"`
				} `json:"leak"`
			}
			b, err := os.ReadFile(filepath.Join(dir, tt.name+".meta.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &meta); err != nil {
				t.Fatal(err)
			}
			s, err := snapshot.Load(filepath.Join(dir, tt.name+".pickle"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := replay.Run(s, 0, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Leaks(s, res, DefaultLeakOptions(res))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Groups) < 2 {
				t.Fatalf("%d groups, want the leak and the parameters", len(rep.Groups))
			}
			isLeak := func(g LeakGroup) bool {
				st := s.Stack(g.Stack)
				if len(st) == 0 {
					return false
				}
				f := s.Frames[st[0]]
				return f.Name == meta.Leak.Function && f.Line == meta.Leak.Line && strings.HasSuffix(f.Filename, "gpugen.py")
			}
			top := rep.Groups[0]
			if !isLeak(top) {
				f := s.Frames[s.Stack(top.Stack)[0]]
				t.Fatalf("top group allocated at %s:%d %s, want the planted leak at line %d %s", f.Filename, f.Line, f.Name, meta.Leak.Line, meta.Leak.Function)
			}
			if top.Verdict.Kind != tt.want {
				t.Errorf("top verdict %v, want %v", top.Verdict.Kind, tt.want)
			}
			for _, g := range rep.Groups {
				if !isLeak(g) && g.Score > 0 {
					t.Errorf("group %d (not the leak) has score %v > 0: %v", g.Rank, g.Score, g.Verdict.Kind)
				}
			}
		})
	}
}

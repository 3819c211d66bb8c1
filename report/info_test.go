package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// infoFixtures are the bundled snapshots the info view is golden-tested
// on: a real trace recorded from the start in three pickle flavours and
// gzip, a 9-byte LONG1 stream, fields from after 2.11, and JSON.
var infoFixtures = []string{
	"mlp_train.pickle",
	"mlp_train.proto2.pickle",
	"mlp_train.proto5.pickle",
	"mlp_train.pickle.gz",
	"long1-9byte-stream.pickle",
	"newer-fields.pickle",
	"tiny.json",
}

func loadInfo(t *testing.T, path string) *Info {
	t.Helper()
	s, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return NewInfo(filepath.ToSlash(path), st.Size(), s.Format, info.Inspect(s, nil, nil))
}

func TestWriteInfoGolden(t *testing.T) {
	for _, name := range infoFixtures {
		t.Run(name, func(t *testing.T) {
			v := loadInfo(t, filepath.Join("..", "testdata", "snapshots", name))
			var text, js bytes.Buffer
			if err := WriteInfo(&text, v); err != nil {
				t.Fatal(err)
			}
			if err := WriteInfoJSON(&js, v); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", name+".info.txt"), text.String())
			checkGolden(t, filepath.Join("testdata", name+".info.json"), js.String())
		})
	}
}

// TestInfoJSONLists: every list in the JSON is [] rather than null, on
// every kind of file (style.md 2.2), and the text view names each
// section.
func TestInfoJSONLists(t *testing.T) {
	files := []string{filepath.Join("..", "testdata", "snapshots", "newer-fields.pickle")}
	if dir := sharedSnapshotsOrEmpty(t); dir != "" {
		for _, rel := range []string{"public/p01-empty.pickle", "public/p14-legacy-list-dev1.pickle", "public/p12-torch2.0-history-layout-oom.pickle"} {
			files = append(files, filepath.Join(dir, rel))
		}
	}
	for _, f := range files {
		v := loadInfo(t, f)
		var js, text bytes.Buffer
		if err := WriteInfoJSON(&js, v); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(js.Bytes(), []byte("null")) {
			t.Errorf("%s: JSON holds a null: %s", f, js.String())
		}
		var anyJSON map[string]any
		if err := json.Unmarshal(js.Bytes(), &anyJSON); err != nil {
			t.Errorf("%s: invalid JSON: %v", f, err)
		}
		if err := WriteInfo(&text, v); err != nil {
			t.Fatal(err)
		}
		for _, section := range []string{"File\n", "\nLayout\n", "\nPyTorch version", "\nDevices\n", "\nRecording", "\nAllocator settings\n", "\nUnknown fields", "\nWarnings\n"} {
			if !strings.Contains(text.String(), section) {
				t.Errorf("%s: text has no %q section", f, strings.TrimSpace(section))
			}
		}
	}
}

// sharedSnapshotsOrEmpty returns the shared corpus's snapshots directory,
// or "" when it is absent and not required (corpus.Find).
func sharedSnapshotsOrEmpty(t testing.TB) string { return corpus.Find(t) }

func TestWrapIndented(t *testing.T) {
	long := strings.Repeat("word ", 30)
	got := kit.WrapIndented("  - ", long)
	for i, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if n := len(line); n > kit.InfoWidth {
			t.Errorf("line %d is %d columns, want at most %d: %q", i, n, kit.InfoWidth, line)
		}
		if i > 0 && !strings.HasPrefix(line, "    word") {
			t.Errorf("continuation line %d not indented under the text: %q", i, line)
		}
	}
	if got := kit.WrapIndented("  x: ", ""); got != "  x:\n" {
		t.Errorf("kit.WrapIndented of empty text = %q, want %q", got, "  x:\n")
	}
}

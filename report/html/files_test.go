package html

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// loadOpen is an analysis.Open over snapshot.Load, completing the file as
// cmd's loader does and naming it in errors.
func loadOpen(ctx context.Context, path string, use func(*snapshot.Snapshot, analysis.Source) error) error {
	s, err := snapshot.Load(path)
	if err != nil {
		return err
	}
	s, _ = replay.Complete(s)
	if err := use(s, analysis.Source{Name: path}); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// TestBuildFiles: the page of several files: the ranks of the ddp pair
// (each file's used device, none of the other rank's lone entries), the
// diff of two files with --base, and --align step's usage error for a
// file without steps.
func TestBuildFiles(t *testing.T) {
	td := func(n string) string { return filepath.Join("..", "..", "testdata", "snapshots", n) }
	ctx := context.Background()
	m, notes, err := BuildFiles(ctx, loadOpen, []string{td("ddp_rank0.pickle"), td("ddp_rank1.pickle")}, FileOptions{Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	if m.CompareTitle != "Ranks" || len(m.Devices) != 2 || m.Devices[0].Device != 0 || m.Devices[1].Device != 1 || len(notes) != 0 ||
		!strings.Contains(m.Compare, "ddp_rank1.pickle") {
		t.Errorf("ranks page: %q, %d devices, notes %+v", m.CompareTitle, len(m.Devices), notes)
	}
	m, _, err = BuildFiles(ctx, loadOpen, []string{td("mlp_train.pickle"), td("leak_cycle.pickle")}, FileOptions{Top: 10, Base: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.CompareTitle != "Diff" || !strings.HasPrefix(m.Compare, "base: "+td("mlp_train.pickle")) || m.Title != td("leak_cycle.pickle")+" against "+td("mlp_train.pickle") {
		t.Errorf("diff page: %q %q:\n%.300s", m.CompareTitle, m.Title, m.Compare)
	}
	_, _, err = BuildFiles(ctx, loadOpen, []string{td("mlp_train.pickle"), td("annotate.pickle")}, FileOptions{Top: 10, Align: analysis.AlignStep})
	var ue *analysis.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--align step: "+td("annotate.pickle")+" device 0: no steps") {
		t.Errorf("--align step with a file without steps: %v", err)
	}
}

package export

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// openTestdata is an Open over testdata/snapshots that keeps the notes.
func openTestdata(t *testing.T, notes *[]analysis.Note) Open {
	return func(path string, f func(*analysis.File, string) ([]analysis.Note, error)) error {
		raw, err := snapshot.Load(filepath.Join("..", "testdata", "snapshots", path))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := replay.Complete(raw)
		ns, err := f(analysis.New(s, analysis.Options{}), path)
		*notes = append(*notes, ns...)
		return err
	}
}

// TestJobRun: each format makes its output from the files open reads; a
// --base-at moment the file lacks is an error naming --base-at.
func TestJobRun(t *testing.T) {
	peak := steps.Moment{Kind: steps.MomentPeak}
	for _, j := range []*Job{
		{Format: "pprof", Files: []string{"mlp_train.pickle", "ddp_rank0.pickle"}, At: peak, AtText: "peak"},
		{Format: "pprof", Files: []string{"mlp_train.pickle"}, At: peak, AtText: "peak", Diff: true, Base: []string{"ddp_rank0.pickle"}},
		{Format: "folded", Files: []string{"mlp_train.pickle", "mlp_train.pickle"}},
		{Format: "chrome-trace", Files: []string{"mlp_train.pickle"}},
		{Format: "parquet", Files: []string{"mlp_train.pickle"}},
	} {
		var notes []analysis.Note
		out, err := j.Run(context.Background(), openTestdata(t, &notes))
		if err != nil {
			t.Fatalf("%s: %v", j.Format, err)
		}
		if j.Format == "parquet" {
			if len(out.Tables) == 0 {
				t.Errorf("parquet: no tables")
			}
			continue
		}
		var b bytes.Buffer
		if err := out.Write(&b); err != nil || b.Len() == 0 {
			t.Errorf("%s: wrote %d bytes, %v", j.Format, b.Len(), err)
		}
	}

	j := &Job{Format: "pprof", Files: []string{"mlp_train.pickle"}, At: peak, AtText: "peak", Diff: true,
		BaseAt: steps.Moment{Kind: steps.MomentOOM}, BaseAtText: "oom"}
	var notes []analysis.Note
	_, err := j.Run(context.Background(), openTestdata(t, &notes))
	var fe *steps.FlagError
	var a *analysis.AbsentError
	if !errors.As(err, &fe) || fe.Flag != "--base-at" || !errors.As(err, &a) {
		t.Errorf("--base-at oom on a file without one: %v; want an AbsentError under --base-at", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Job{Format: "folded", Files: []string{"mlp_train.pickle"}}).Run(ctx, openTestdata(t, &notes)); !errors.Is(err, context.Canceled) {
		t.Errorf("Run on a cancelled context = %v", err)
	}
}

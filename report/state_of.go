package report

import (
	"context"
	"fmt"
	"io"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/explain"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/verdictview"
	"github.com/snapview/snapview/snapshot"
)

// StateRequest says which state [StateOf] shows.
type StateRequest struct {
	Device int
	// At is the moment; Label how the user wrote it ("peak", "oom:2").
	At    steps.Moment
	Label string
	// AtSet is true when the user gave the moment: a device without trace
	// entries then has no default peak to fall back from (see StateOf).
	AtSet   bool
	Options StateOptions
}

// StateOf is `snapview state`'s view of req.Device of the file f analyses
// at req.At: the replay's state there (NewStateView), the device's private
// pools, the file's pinned host memory and, at an oom entry, explain's
// findings (from the same analysis) with the what-if verdict they used
// (the cap inferred from the OOM, as whatif does without --limit) under
// the OOM.
//
// A device without trace entries has no peak: unless req.AtSet, it is
// shown at the state the file holds (--at end), with a note saying so.
// A replay that ends in a state other than the file's segments gets
// analysis.EndStateNote ("the state"). Errors: ctx's, the replay's, a
// moment the device lacks (*analysis.AbsentError) or one that does not
// apply (*steps.MomentError), and explain's; the notes come back with
// them.
func StateOf(ctx context.Context, f *analysis.File, req StateRequest) (*StateView, []analysis.Note, error) {
	s, dev, at, label := f.Snap, req.Device, req.At, req.Label
	var notes []analysis.Note
	if !req.AtSet && !f.HasTrace(dev) {
		notes = append(notes, analysis.Note{Kind: analysis.Info,
			Text: fmt.Sprintf("device %d has no trace entries, so no peak: showing the state the file holds (--at end)", dev)})
		at, label = steps.Moment{Kind: steps.MomentEnd}, "end"
	}
	r, err := f.Replay(dev)
	if err != nil {
		return nil, notes, err
	}
	if !r.Check.Equal {
		notes = append(notes, analysis.EndStateNote("", []int{dev}, "the state", r.Check.Differences))
	}
	i, err := at.Resolve(s, r)
	if err != nil {
		return nil, notes, analysis.MomentErr(s, dev, at, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, notes, err
	}
	st, err := r.StateAt(i)
	if err != nil {
		return nil, notes, err
	}
	v := NewStateView(s, r, st, label, req.Options)
	v.PrivatePools = f.Pools(dev)
	v.Host = hostview.NewJSON(f.Host())
	if st.Entry != nil && st.Entry.Action == snapshot.ActionOOM {
		es, err := f.Explain([]int{dev}, explain.Options{})
		if err != nil {
			return nil, notes, err
		}
		e := es[0]
		v.Whatif = e.Whatif
		v.Explain = &verdictview.NewExplainView(s, []*explain.Device{e}).Devices[0]
	}
	return v, notes, nil
}

// WriteNothing writes the line the views of one device's memory (state,
// leaks, segments, explain, trace) print when what ("the snapshot",
// "device 3") holds nothing: not an error. A file that holds pinned host
// memory only (record_cuda=False) shows that memory instead. Errors are
// w's.
func WriteNothing(w io.Writer, f *analysis.File, what string) error {
	if what == "the snapshot" && hostview.Has(f.Snap) {
		if _, err := fmt.Fprintf(w, "no device memory to show: the file holds pinned host memory only (_record_memory_history(record_pinned_host_memory=True, record_cuda=False))\n\n"); err != nil {
			return err
		}
		return hostview.Write(w, f.Host())
	}
	_, err := fmt.Fprintf(w, "nothing to show: %s holds no segments and no trace entries (recording was off, or nothing was allocated)\n", what)
	return err
}

// WriteNoState writes what state shows for device dev (-1: the file has
// no device) when the file holds nothing for it: as JSON the file's
// pinned host memory when it has no device, else {}; as text
// WriteNothing's line. Errors are w's.
func WriteNoState(w io.Writer, f *analysis.File, dev int, json bool) error {
	if json {
		if dev < 0 && f.Host().Present {
			return kit.WriteJSON(w, struct {
				Host *hostview.JSON `json:"host"`
			}{hostview.NewJSON(f.Host())})
		}
		_, err := io.WriteString(w, "{}\n")
		return err
	}
	what := "the snapshot"
	if dev >= 0 {
		what = fmt.Sprintf("device %d", dev)
	}
	return WriteNothing(w, f, what)
}

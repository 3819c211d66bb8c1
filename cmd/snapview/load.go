package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/snapview/snapview/internal/progress"
	"github.com/snapview/snapview/snapshot"
)

// loadSnapshot is snapshot.Load with a progress bar on errOut while the
// file is read, when errOut is a terminal and the load takes more than a
// second (see progress.Env). Errors are Load's: one line naming the file.
func loadSnapshot(ctx context.Context, errOut io.Writer, path string, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	bar, always := progress.Wanted(errOut)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		// Directories, pipes and devices: Load says what is wrong, and a
		// bar needs a size.
		return snapshot.LoadLimits(path, lim)
	}
	if !bar {
		return decodeFile(path, &ctxReader{ctx: ctx, r: f}, lim)
	}
	pb := progress.NewBar(errOut, path, st.Size(), always)
	// TODO(snapshot): Decode does not get the file size that Load hands
	// its decoder to size the trace up front (the 2M-entry file then peaks
	// at 250 MB instead of 160 MB); progressReader has the file's Stat for
	// a Decode that looks for it.
	s, err := decodeFile(path, &ctxReader{ctx: ctx, r: &progress.Reader{F: f, Bar: pb}}, lim)
	pb.Finish()
	return s, err
}

// decodeFile decodes the snapshot r reads from the file at path; errors
// name the file. A load stopped by a signal returns ctx's error as it is.
func decodeFile(path string, r io.Reader, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	s, err := snapshot.DecodeLimits(r, lim)
	if errors.Is(err, context.Canceled) {
		return nil, context.Canceled
	}
	if err != nil {
		var de *snapshot.DecodeError
		if errors.As(err, &de) {
			de.Path = path
			return nil, de
		}
		return nil, &snapshot.DecodeError{Path: path, Err: err}
	}
	return s, nil
}

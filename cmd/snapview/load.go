package main

import (
	"context"
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
		s, _, err := snapshot.DecodeNamed(ctx, path, f, lim)
		return s, err
	}
	pb := progress.NewBar(errOut, path, st.Size(), always)
	// TODO(snapshot): Decode does not get the file size that Load hands
	// its decoder to size the trace up front (the 2M-entry file then peaks
	// at 250 MB instead of 160 MB); progressReader has the file's Stat for
	// a Decode that looks for it.
	s, _, err := snapshot.DecodeNamed(ctx, path, &progress.Reader{F: f, Bar: pb}, lim)
	pb.Finish()
	return s, err
}

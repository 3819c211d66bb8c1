package analysis

import (
	"context"

	"github.com/snapview/snapview/snapshot"
)

// Source is where a loaded snapshot came from.
type Source struct {
	// Name is the file as messages and reports name it: the path as
	// given, or "<stdin>".
	Name string
	// Size is the number of bytes read (the size on disk, compressed if
	// the file is); 0 when unknown.
	Size int64
}

// Open loads the snapshot at path and calls use with it, as the command
// loads every file (its limits, --rounding, standard input). The views of
// several files read them through it one at a time, so that one model is
// held at once. Its errors, and use's, name the file.
type Open func(ctx context.Context, path string, use func(s *snapshot.Snapshot, src Source) error) error

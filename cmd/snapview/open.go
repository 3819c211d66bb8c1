package main

import (
	"context"
	"io"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/snapshot"
)

// openFile is withSnapshotCtx as an analysis.Open: how the views of
// several files below cmd load each of them (standard input from stdin,
// the load bar on errOut).
func openFile(stdin io.Reader, errOut io.Writer) analysis.Open {
	return func(ctx context.Context, path string, use func(*snapshot.Snapshot, analysis.Source) error) error {
		return withSnapshotCtx(ctx, stdin, errOut, path, func(s *snapshot.Snapshot, src source) error {
			return use(s, analysis.Source{Name: src.name, Size: src.size})
		})
	}
}

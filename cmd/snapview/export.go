package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/export"
	"github.com/snapview/snapview/internal/atomicfile"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// exportFormats are the values of export --format.
var exportFormats = []string{"pprof", "folded", "chrome-trace", "parquet"}

// exportOptions are the flags of `snapview export`.
type exportOptions struct {
	files      []string
	format     string
	out        string
	at         string
	atSet      bool
	base       string
	baseAt     string
	labels     []string
	pathLabels []string
	view       string
	userFrames bool
	labelSet   export.Labels // labels and pathLabels, parsed by check
}

func newExportCmd() *cobra.Command {
	opts := &exportOptions{}
	cmd := &cobra.Command{
		Use:     "export FILE... --format FORMAT -o PATH",
		Short:   "write snapshots for pprof, flame graphs, Perfetto or DuckDB/Spark (Parquet)",
		Long:    helpText("export"),
		Example: helpText("export.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("export needs at least one FILE")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.files = args
			opts.atSet = cmd.Flags().Changed("at")
			if !opts.atSet {
				opts.at = "peak" // pprof's default; folded without --at reads the file's segments
			}
			if err := opts.check(cmd); err != nil {
				return err
			}
			return runExport(cmd.Context(), opts, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.format, "format", "", "pprof, folded, chrome-trace or parquet (required)")
	f.StringVarP(&opts.out, "output", "o", "", "the file to write (- for standard output), a directory for parquet (required)")
	f.StringVar(&opts.at, "at", "", "pprof, folded: the moment: peak, oom, oom:K, end, entry:N or time:T (default: pprof the peak of each device; folded the segments the file holds, its end state)")
	f.StringVar(&opts.base, "base", "", "pprof: subtract this snapshot's profile (at --base-at, else at --at)")
	f.StringVar(&opts.baseAt, "base-at", "", "pprof: subtract the profile at this moment (of --base, else of FILE)")
	f.StringArrayVar(&opts.labels, "label", nil, "key=value put on every sample or row (repeatable)")
	f.StringArrayVar(&opts.pathLabels, "path-label", nil, "pprof, parquet: key=REGEX, a label whose value is taken from each FILE's path: REGEX's first group, else its match (repeatable)")
	f.StringVar(&opts.view, "view", "memory", "folded: memory (stream;state;frames) or segments (stream;segment;state;frames)")
	f.BoolVar(&opts.userFrames, "user-frames", false, "folded: keep only the program's own frames")
	return cmd
}

// check validates the flags; every error is a usage error.
func (o *exportOptions) check(cmd *cobra.Command) error {
	if !slices.Contains(exportFormats, o.format) {
		if o.format == "" {
			return usageErrorf("--format is required: %s", strings.Join(exportFormats, ", "))
		}
		return usageErrorf("--format %q: want %s", o.format, strings.Join(exportFormats, ", "))
	}
	if o.out == "" {
		return usageErrorf("-o PATH is required")
	}
	if o.format == "parquet" && o.out == stdinPath {
		return usageErrorf("--format parquet writes a directory: -o DIR, not -")
	}
	changed := cmd.Flags().Changed
	only := map[string][]string{
		"pprof":  {"base", "base-at"},
		"folded": {"view", "user-frames"},
	}
	if len(o.pathLabels) > 0 && o.format != "pprof" && o.format != "parquet" {
		return usageErrorf("--path-label is for --format pprof and parquet")
	}
	if o.format == "folded" && len(o.labels) > 0 {
		return usageErrorf("--label: folded stacks have no place for labels (pprof, chrome-trace and parquet do)")
	}
	for format, flags := range only {
		for _, fl := range flags {
			if changed(fl) && o.format != format {
				return usageErrorf("--%s is for --format %s", fl, format)
			}
		}
	}
	if o.atSet && (o.format == "chrome-trace" || o.format == "parquet") {
		return usageErrorf("--at is for --format pprof and folded: %s covers the whole trace", o.format)
	}
	if _, err := parseMoment(o.at); err != nil {
		return err
	}
	if o.baseAt != "" {
		if _, err := parseMomentFlag("--base-at", o.baseAt); err != nil {
			return err
		}
	}
	if o.view != "memory" && o.view != "segments" {
		return usageErrorf("--view %q: want memory or segments", o.view)
	}
	var err error
	if o.labelSet, err = export.ParseLabels(o.labels, o.pathLabels); err != nil {
		return &usageError{err}
	}
	return nil
}

// job is the export the flags ask for (export.Job), its moments parsed.
func (o *exportOptions) job() *export.Job {
	j := &export.Job{Format: o.format, Files: o.files, AtText: o.at, AtSet: o.atSet, BaseAtText: o.baseAt,
		Diff: o.base != "" || o.baseAt != "", Labels: o.labelSet, Folded: export.FoldedOptions{UserFrames: o.userFrames}}
	j.At, _ = parseMoment(o.at)
	j.BaseAt, _ = parseMoment(o.baseAt)
	if o.base != "" {
		j.Base = []string{o.base}
	}
	if o.view == "segments" {
		j.Folded.View = export.FoldedSegments
	}
	return j
}

// runExport runs the export (export.Job.Run), reading each file with
// withSnapshotCtx, its warnings and notes on stderr, and writes its
// output: the Parquet tables into the folder opts.out as one set
// (atomicfile.WriteSet: an export that fails or is stopped partway
// leaves the folder as it was), else one file (writeOutput).
func runExport(ctx context.Context, opts *exportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	out, err := opts.job().Run(ctx, func(path string, f func(*analysis.File, string) ([]analysis.Note, error)) error {
		return withSnapshotCtx(ctx, stdin, stderr, path, func(s *snapshot.Snapshot, src source) error {
			for _, w := range s.Warnings {
				fmt.Fprintf(stderr, "warning: %s: %s\n", src.name, w)
			}
			notes, err := f(analysis.New(s, analysis.Options{}), src.name)
			kit.WriteNotes(stderr, notes)
			return momentUsage(err)
		})
	})
	if err != nil {
		return err
	}
	if opts.format != "parquet" {
		return writeOutput(ctx, opts.out, stdout, out.Write)
	}
	return atomicfile.WriteSet(ctx, opts.out, out.SetFiles())
}

// writeOutput writes what write produces to path, or to stdout when path
// is "-", through atomicfile.Write (a temporary file renamed over path).
// Every file export writes goes through here.
func writeOutput(ctx context.Context, path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == stdinPath {
		return write(stdout)
	}
	if err := atomicfile.Write(ctx, path, write); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/export"
	"github.com/snapview/snapview/internal/atomicfile"
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
	seen := map[string]bool{}
	for _, fl := range []struct {
		name string
		vals []string
	}{{"label", o.labels}, {"path-label", o.pathLabels}} {
		for _, l := range fl.vals {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return usageErrorf("--%s %q: want key=%s", fl.name, l, map[bool]string{true: "REGEX", false: "value"}[fl.name == "path-label"])
			}
			if err := export.CheckLabel(k); err != nil {
				return usageErrorf("--%s %q: %v", fl.name, l, err)
			}
			if seen[strings.ToLower(k)] {
				return usageErrorf("label %s given twice", k)
			}
			seen[strings.ToLower(k)] = true
			if fl.name == "path-label" {
				if _, err := regexp.Compile(v); err != nil {
					return usageErrorf("--path-label %q: %v", l, err)
				}
			}
		}
	}
	return nil
}

// labelKeys returns the keys of --label and --path-label, in order.
func (o *exportOptions) labelKeys() []string {
	var keys []string
	for _, l := range append(append([]string{}, o.labels...), o.pathLabels...) {
		k, _, _ := strings.Cut(l, "=")
		keys = append(keys, k)
	}
	return keys
}

// fileLabels returns the labels of the file at path: every --label, then
// every --path-label with the value its REGEX finds in path (its first
// group, else the whole match; "" when it does not match).
func (o *exportOptions) fileLabels(path string) []export.Label {
	out := o.parsedLabels()
	for _, l := range o.pathLabels {
		k, expr, _ := strings.Cut(l, "=")
		m := regexp.MustCompile(expr).FindStringSubmatch(path)
		v := ""
		switch {
		case len(m) > 1:
			v = m[1]
		case len(m) == 1:
			v = m[0]
		}
		out = append(out, export.Label{Key: k, Value: v})
	}
	return out
}

func (o *exportOptions) parsedLabels() []export.Label {
	var out []export.Label
	for _, l := range o.labels {
		k, v, _ := strings.Cut(l, "=")
		out = append(out, export.Label{Key: k, Value: v})
	}
	return out
}

func runExport(ctx context.Context, opts *exportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	switch opts.format {
	case "pprof":
		return exportPprof(ctx, opts, stdin, stdout, stderr)
	case "folded":
		return exportFolded(ctx, opts, stdin, stdout, stderr)
	case "chrome-trace":
		return exportChrome(ctx, opts, stdin, stdout, stderr)
	}
	return exportParquet(ctx, opts, stdin, stderr)
}

// eachSnapshot loads every file in turn and calls f with it.
func eachSnapshot(ctx context.Context, files []string, stdin io.Reader, stderr io.Writer, f func(i int, s *snapshot.Snapshot, src source) error) error {
	for i, file := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := withSnapshotCtx(ctx, stdin, stderr, file, func(s *snapshot.Snapshot, src source) error {
			for _, w := range s.Warnings {
				fmt.Fprintf(stderr, "warning: %s: %s\n", src.name, w)
			}
			return f(i, s, src)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// statesAt is export.StatesAt with its notes and warnings on stderr: a
// device that lacks the moment (no oom entry) is left out with a note;
// when every device lacks it, the first one's error is returned, with no
// note.
func statesAt(s *snapshot.Snapshot, at steps.Moment, label string, name string, stderr io.Writer) ([]export.DeviceState, error) {
	devs, err := export.StatesAt(analysis.New(s, analysis.Options{}), at, label)
	var out []export.DeviceState
	var firstErr error
	var notes []string // devices left out, printed when another is kept
	for _, da := range devs {
		switch {
		case da.Idle:
			fmt.Fprintf(stderr, "note: %s: device %d left out: the allocator was never used on it (a lone snapshot entry)\n", name, da.Device)
			continue
		case da.Result != nil:
			warnCheck(stderr, name, da.Result)
		}
		if da.Absent != nil {
			aerr := momentError(s, da.Device, at, da.Absent)
			if firstErr == nil {
				firstErr = aerr
			}
			var a *analysis.AbsentError
			errors.As(aerr, &a)
			notes = append(notes, fmt.Sprintf("note: %s: device %d left out: %v\n", name, da.Device, a))
		}
		if da.State != nil {
			out = append(out, *da.State)
		}
	}
	if err != nil {
		// No absent moment (those are in devs): the device does not
		// matter to momentError.
		return nil, momentError(s, -1, at, err)
	}
	if len(out) == 0 && firstErr != nil {
		return nil, firstErr // the error says it: no note besides
	}
	for _, n := range notes {
		io.WriteString(stderr, n)
	}
	return out, nil
}

// warnCheck warns when the replay of a device disagrees with the file.
func warnCheck(stderr io.Writer, name string, r *replay.Result) {
	if !r.Check.Equal {
		warnEndState(stderr, name, []int{r.Device}, "figures", nil)
	}
}

func exportPprof(ctx context.Context, opts *exportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	at, _ := parseMoment(opts.at)
	var profs []*profile.Profile
	err := eachSnapshot(ctx, opts.files, stdin, stderr, func(_ int, s *snapshot.Snapshot, src source) error {
		states, err := statesAt(s, at, opts.at, src.name, stderr)
		if err != nil {
			return err
		}
		p, err := export.Profile(s, states, export.ProfileOptions{Source: src.name, FileLabel: len(opts.files) > 1, Labels: opts.fileLabels(src.name)})
		if err != nil {
			return err
		}
		profs = append(profs, p)
		return nil
	})
	if err != nil {
		return err
	}
	p, err := profile.Merge(profs)
	if err != nil {
		return fmt.Errorf("merging the profiles of %d files: %w", len(profs), err)
	}
	if opts.base != "" || opts.baseAt != "" {
		baseAtText := opts.baseAt
		if baseAtText == "" {
			baseAtText = opts.at
		}
		baseAt, _ := parseMoment(baseAtText)
		files := opts.files
		if opts.base != "" {
			files = []string{opts.base}
		}
		var bases []*profile.Profile
		err := eachSnapshot(ctx, files, stdin, stderr, func(_ int, s *snapshot.Snapshot, src source) error {
			states, err := statesAt(s, baseAt, baseAtText, src.name, stderr)
			if err != nil {
				if opts.baseAt != "" {
					return renameFlag(err, "--base-at")
				}
				return err
			}
			bp, err := export.Profile(s, states, export.ProfileOptions{Source: src.name, FileLabel: len(files) > 1, Labels: opts.fileLabels(src.name)})
			if err != nil {
				return err
			}
			bases = append(bases, bp)
			return nil
		})
		if err != nil {
			return err
		}
		base, err := profile.Merge(bases)
		if err != nil {
			return err
		}
		if p, err = export.DiffProfile(p, base); err != nil {
			return err
		}
	}
	return writeOutput(ctx, opts.out, stdout, p.Write)
}

func exportFolded(ctx context.Context, opts *exportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	at, _ := parseMoment(opts.at)
	o := export.FoldedOptions{UserFrames: opts.userFrames}
	if opts.view == "segments" {
		o.View = export.FoldedSegments
	}
	type part struct {
		s    *snapshot.Snapshot
		segs []export.FoldedSegment
		root string
	}
	// With several files each line starts with a frame naming its file,
	// so that the flame graph keeps the programs apart.
	// A file given twice gets "#2" on its second frame: the same frame
	// would add its bytes up as one program's.
	seen := map[string]int{}
	root := func(src source) string {
		if len(opts.files) < 2 {
			return ""
		}
		seen[src.name]++
		if k := seen[src.name]; k > 1 {
			return fmt.Sprintf("%s#%d", src.name, k)
		}
		return src.name
	}
	var parts []part
	err := eachSnapshot(ctx, opts.files, stdin, stderr, func(_ int, s *snapshot.Snapshot, src source) error {
		root := root(src)
		if !opts.atSet {
			parts = append(parts, part{s, export.FileSegments(s), root})
			return nil
		}
		states, err := statesAt(s, at, opts.at, src.name, stderr)
		if err != nil {
			return err
		}
		for _, ds := range states {
			parts = append(parts, part{s, export.StateSegments(ds.State), root})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeOutput(ctx, opts.out, stdout, func(w io.Writer) error {
		for _, p := range parts {
			o.Root = p.root
			if err := export.WriteFolded(w, p.s, p.segs, o); err != nil {
				return err
			}
		}
		return nil
	})
}

func exportChrome(ctx context.Context, opts *exportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	var inputs []export.ChromeInput
	err := eachSnapshot(ctx, opts.files, stdin, stderr, func(_ int, s *snapshot.Snapshot, src source) error {
		in := export.ChromeInput{Snapshot: s, Name: src.name}
		an := analysis.New(s, analysis.Options{})
		for d := range s.Traces {
			if len(s.Traces[d]) == 0 {
				continue
			}
			r, err := an.Replay(d)
			if err != nil {
				return err
			}
			warnCheck(stderr, src.name, r)
			in.Results = append(in.Results, r)
		}
		inputs = append(inputs, in)
		return nil
	})
	if err != nil {
		return err
	}
	return writeOutput(ctx, opts.out, stdout, func(w io.Writer) error {
		return export.WriteChromeTrace(w, inputs, opts.parsedLabels())
	})
}

// exportParquet writes the Parquet tables of opts.files into the folder
// opts.out as one set (atomicfile.WriteSet): an export that fails or is
// stopped partway leaves the folder as it was, never tables of two runs.
func exportParquet(ctx context.Context, opts *exportOptions, stdin io.Reader, stderr io.Writer) error {
	tables, err := parquetTables(ctx, opts, stdin, stderr)
	if err != nil {
		return err
	}
	files := make([]atomicfile.SetFile, len(tables))
	for i, t := range tables {
		files[i] = atomicfile.SetFile{Name: t.Name + ".parquet", Write: t.Write}
	}
	return atomicfile.WriteSet(ctx, opts.out, files)
}

// parquetTables decodes opts.files and returns their Parquet tables.
func parquetTables(ctx context.Context, opts *exportOptions, stdin io.Reader, stderr io.Writer) ([]export.Table, error) {
	ds := export.NewDataset(opts.labelKeys())
	err := eachSnapshot(ctx, opts.files, stdin, stderr, func(_ int, s *snapshot.Snapshot, src source) error {
		var results []*replay.Result
		an := analysis.New(s, analysis.Options{})
		for _, d := range s.Devices() {
			r, err := an.Replay(d)
			if err != nil {
				return err
			}
			warnCheck(stderr, src.name, r)
			results = append(results, r)
		}
		return ds.Add(s, src.name, opts.fileLabels(src.name), results)
	})
	if err != nil {
		return nil, err
	}
	return ds.Tables()
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

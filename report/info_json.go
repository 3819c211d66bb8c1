package report

import (
	"io"

	"github.com/snapview/snapview/analyze/allocator"

	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
)

// infoJSON and the types below are the schema of `snapview info --json`:
// the facts of the text view, unrounded, every list present ([] when
// empty).
type infoJSON struct {
	File      infoFileJSON      `json:"file"`
	Layout    infoLayoutJSON    `json:"layout"`
	Version   infoVersionJSON   `json:"version_hint"`
	Devices   []infoDeviceJSON  `json:"devices"`
	Recording infoRecordingJSON `json:"recording"`
	Settings  []settingJSON     `json:"allocator_settings"`
	Rounding  roundingJSON      `json:"rounding"`
	Host      *hostview.JSON    `json:"host,omitempty"`
	Unknown   []kit.CountJSON   `json:"unknown"`
	Warnings  []string          `json:"warnings"`
}

type infoFileJSON struct {
	Path           string `json:"path"`
	SizeBytes      int64  `json:"size_bytes"`
	Format         string `json:"format"`
	Encoding       string `json:"encoding"`
	PickleProtocol int    `json:"pickle_protocol,omitempty"`
	Compression    string `json:"compression"`
	DecodedBytes   int64  `json:"decoded_bytes"`
}

type infoLayoutJSON struct {
	Legacy       bool     `json:"legacy_segment_list"`
	TopLevelKeys []string `json:"top_level_keys"`
	Segments     int      `json:"segments"`
	// SegmentsFromTrace: the file had none; they were rebuilt from the
	// trace, and the end state is not checked.
	SegmentsFromTrace bool  `json:"segments_from_trace"`
	DevicesRecorded   int   `json:"devices_recorded"`
	IdleDevices       []int `json:"idle_devices"`
}

type infoVersionJSON struct {
	Text     string         `json:"text"`
	Min      string         `json:"min"`
	Before   string         `json:"before"`
	Conflict bool           `json:"conflict"`
	Clues    []infoClueJSON `json:"clues"`
}

type infoClueJSON struct {
	Clue string `json:"clue"`
	// Bound is "≥2.3", "<2.2" or ""; AtLeast and Before say the same as
	// plain versions ("" when unset).
	Bound   string `json:"bound"`
	AtLeast string `json:"at_least"`
	Before  string `json:"before"`
	Source  string `json:"source"`
}

type infoDeviceJSON struct {
	Device               int             `json:"device"`
	Segments             int             `json:"segments"`
	Blocks               int             `json:"blocks"`
	ReservedBytes        int64           `json:"reserved_bytes"`
	AllocatedBytes       int64           `json:"allocated_bytes"`
	LiveBlocks           int             `json:"live_blocks"`
	LiveBlocksWithStacks int             `json:"live_blocks_with_stacks"`
	TraceEntries         int             `json:"trace_entries"`
	FirstTimeUS          int64           `json:"first_time_us"`
	LastTimeUS           int64           `json:"last_time_us"`
	Actions              []kit.CountJSON `json:"actions"`
	OOMs                 int             `json:"oom_entries"`
	Coverage             string          `json:"coverage"`
	OrphanFrees          int             `json:"orphan_frees"`
	UntracedBlocks       int             `json:"untraced_live_blocks"`
	Replay               infoReplayJSON  `json:"replay"`
}

type infoReplayJSON struct {
	Replayed      bool     `json:"replayed"`
	Error         string   `json:"error"`
	Seeded        bool     `json:"seeded"`
	EndStateEqual bool     `json:"end_state_equal"`
	Segments      int      `json:"segments_checked"`
	Blocks        int      `json:"blocks_checked"`
	Differences   []string `json:"differences"`
	// History is the trust of the history figures (replay.DecideTrust):
	// "exact", "lower_bound" or "unknown", and why.
	History kit.HistoryJSON `json:"history"`
	// Requested is the trust of the file's requested sizes
	// (stats.Known.Requested): "exact" or "unknown", and why.
	Requested kit.HistoryJSON `json:"requested"`
}

// roundingJSON is the inferred rounding rule and its evidence.
type roundingJSON struct {
	Rule     string `json:"rule"`
	Assumed  bool   `json:"assumed"`
	Evidence string `json:"evidence"`
	// FromTrace: the rule was read from the trace's block gaps (no
	// active block told the rules apart); Forced: the rule --rounding gave.
	FromTrace bool   `json:"from_trace,omitempty"`
	Forced    string `json:"forced,omitempty"`
}

func newRoundingJSON(r allocator.InferredRounding) roundingJSON {
	return roundingJSON{Rule: r.Rule.String(), Assumed: r.Assumed, Evidence: r.Evidence(), FromTrace: r.FromTrace, Forced: r.Forced}
}

// settingJSON is one allocator setting as PyTorch's repr prints it.
type settingJSON struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type inferredJSON struct {
	Value string `json:"value"`
	Why   string `json:"why"`
}

type maxEntriesJSON struct {
	// Value is 0 when unknown; AtLeast says whether it is a lower bound
	// or the likely value.
	Value   int    `json:"value"`
	AtLeast bool   `json:"at_least"`
	Why     string `json:"why"`
}

type infoRecordingJSON struct {
	Enabled              inferredJSON    `json:"enabled"`
	Stacks               inferredJSON    `json:"stacks"`
	Context              inferredJSON    `json:"context"`
	MaxEntries           maxEntriesJSON  `json:"max_entries"`
	SkipActions          []string        `json:"skip_actions,omitempty"`
	Frames               int             `json:"distinct_frames"`
	CppFrames            int             `json:"distinct_cpp_frames"`
	TraceEntries         int             `json:"trace_entries"`
	EntriesWithFramesKey int             `json:"entries_with_frames_key"`
	EntriesWithStacks    int             `json:"entries_with_stacks"`
	EmptyStacks          []kit.CountJSON `json:"entries_with_empty_stack"`
	NoFramesKey          []kit.CountJSON `json:"entries_without_frames_key"`
	LiveBlocks           int             `json:"live_blocks"`
	LiveBlocksWithStacks int             `json:"live_blocks_with_stacks"`
	SegmentsWithStacks   int             `json:"segments_with_stacks"`
	FreesCompared        int             `json:"frees_compared_with_alloc"`
	FreesSameStack       int             `json:"frees_with_alloc_stack"`
}

// WriteInfoJSON writes v as indented JSON.
func WriteInfoJSON(w io.Writer, v *Info) error {
	out := infoJSON{
		File: infoFileJSON{
			Path:           v.Path,
			SizeBytes:      v.SizeOnDisk,
			Format:         v.Format.String(),
			Encoding:       v.Format.Encoding,
			PickleProtocol: v.Format.PickleProtocol,
			Compression:    v.Format.Compression,
			DecodedBytes:   v.Format.Bytes,
		},
		Layout: infoLayoutJSON{
			Legacy:            v.Legacy,
			TopLevelKeys:      append([]string{}, v.TopLevelKeys...),
			Segments:          v.NumSegments,
			SegmentsFromTrace: v.SegmentsFromTrace,
			DevicesRecorded:   v.RecordedDevices,
			IdleDevices:       append([]int{}, v.IdleDevices...),
		},
		Version: infoVersionJSON{
			Text:     v.Version.String(),
			Min:      v.Version.Min.String(),
			Before:   v.Version.Max.String(),
			Conflict: v.Version.Conflict(),
			Clues:    []infoClueJSON{},
		},
		Devices:  []infoDeviceJSON{},
		Settings: []settingJSON{},
		Host:     hostview.NewJSON(&v.Host),
		Rounding: newRoundingJSON(v.Rounding),
		Unknown:  kit.CountsJSON(v.Unknown),
		Warnings: append([]string{}, v.Warnings...),
	}
	for _, kv := range v.Settings {
		out.Settings = append(out.Settings, settingJSON{Key: kv.Key, Value: kv.Value})
	}
	for _, c := range v.Version.Clues {
		out.Version.Clues = append(out.Version.Clues, infoClueJSON{
			Clue: c.Clue, Bound: c.Bound(), AtLeast: c.AtLeast.String(), Before: c.Before.String(), Source: c.Source,
		})
	}
	for i := range v.Devices {
		out.Devices = append(out.Devices, newInfoDeviceJSON(&v.Devices[i]))
	}
	r := &v.Recording
	out.Recording = infoRecordingJSON{
		Enabled:              inferredJSON{string(r.Enabled), r.EnabledWhy},
		Stacks:               inferredJSON{string(r.Stacks), r.StacksWhy},
		Context:              inferredJSON{string(r.Context), r.ContextWhy},
		MaxEntries:           maxEntriesJSON{r.MaxEntries, r.MaxEntriesAtLeast, r.MaxEntriesWhy},
		SkipActions:          r.SkipActions,
		Frames:               r.Frames,
		CppFrames:            r.CppFrames,
		TraceEntries:         r.Entries,
		EntriesWithFramesKey: r.EntriesWithFrames,
		EntriesWithStacks:    r.EntriesWithStacks,
		EmptyStacks:          kit.CountsJSON(r.EmptyStacks),
		NoFramesKey:          kit.CountsJSON(r.NoFramesKey),
		LiveBlocks:           r.LiveBlocks,
		LiveBlocksWithStacks: r.LiveBlockStacks,
		SegmentsWithStacks:   r.SegmentStacks,
		FreesCompared:        r.FreesCompared,
		FreesSameStack:       r.FreesSameStack,
	}
	return kit.WriteJSON(w, out)
}

func newInfoDeviceJSON(d *info.DeviceInfo) infoDeviceJSON {
	return infoDeviceJSON{
		Device:               d.Device,
		Segments:             d.Segments,
		Blocks:               d.Blocks,
		ReservedBytes:        d.ReservedBytes,
		AllocatedBytes:       d.AllocatedBytes,
		LiveBlocks:           d.LiveBlocks,
		LiveBlocksWithStacks: d.LiveBlockStacks,
		TraceEntries:         d.Entries,
		FirstTimeUS:          d.FirstUS,
		LastTimeUS:           d.LastUS,
		Actions:              kit.CountsJSON(d.Actions),
		OOMs:                 d.OOMs,
		Coverage:             string(d.Coverage),
		OrphanFrees:          d.OrphanFrees,
		UntracedBlocks:       d.UntracedBlocks,
		Replay: infoReplayJSON{
			Replayed:      d.Replayed,
			Error:         d.ReplayError,
			Seeded:        d.Seeded,
			EndStateEqual: d.Replayed && d.Check.Equal,
			Segments:      d.Check.Segments,
			Blocks:        d.Check.Blocks,
			Differences:   append([]string{}, d.Check.Differences...),
			History:       kit.HistoryJSON{Exactness: d.Trust.History.String(), Why: d.Trust.Why},
			Requested:     kit.RequestedVerdictJSON(d.Trust),
		},
	}
}

// WriteInfoAs writes v as JSON (WriteInfoJSON) or text (WriteInfo).
// Errors are w's.
func WriteInfoAs(w io.Writer, v *Info, json bool) error {
	if json {
		return WriteInfoJSON(w, v)
	}
	return WriteInfo(w, v)
}

package monitor

import (
	"encoding/csv"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/snapview/snapview/analyze/stats"
)

// StopKind is what a [StopRule] watches for.
type StopKind int

const (
	// StopClimb: allocated or reserved memory (memory_stats()), or
	// nvidia-smi's used memory, keeps climbing (see [FindClimb]).
	StopClimb StopKind = iota
	// StopRetries: num_alloc_retries above 0 (the allocator had to free
	// its cache and retry a cudaMalloc: the run is near an OOM).
	StopRetries
	// StopOOM: num_ooms above 0.
	StopOOM
	// StopLimit: reserved_bytes.all.current (memory_stats()) or
	// memory.used (nvidia-smi) above Limit bytes.
	StopLimit
)

// StopRule is one rule of `snapview watch --stop-on`.
type StopRule struct {
	Kind StopKind
	// Limit is StopLimit's bound in bytes.
	Limit int64
}

// Trigger is the first time a rule held: which rule, on which log and
// device, at which record.
type Trigger struct {
	Rule StopRule
	// SMI is true when the nvidia-smi log triggered it (Device is then
	// the nvidia-smi GPU index), false for the memory_stats() log.
	SMI    bool
	Device int
	// Record is the memory_stats() record (Records index of the device)
	// or the nvidia-smi sample (Samples index) at which the rule first
	// held.
	Record int
	// Value is the figure that crossed StopLimit, or the retries or OOMs
	// counted (bytes or a count); Climb the climb found (StopClimb).
	Value int64
	// What names the figure: "allocated", "reserved", "used".
	What  string
	Climb Climb
}

// Watch is the state of a watched run: the records read so far from a
// memory_stats() log and an nvidia-smi log, and the first rule that held.
// It reads lines as a [Follower] delivers them; it does no I/O itself.
type Watch struct {
	Rules []StopRule
	// Stats are the memory_stats() records read, in order; SMI the
	// nvidia-smi samples.
	Stats StatsLog
	SMI   SMILog
	// Loc is the zone the nvidia-smi timestamps were written in (UTC
	// when nil).
	Loc *time.Location
	// Triggered is the first rule that held, nil while none has.
	Triggered *Trigger
	// WarmupUS is the start-up time (microseconds) in which nvidia-smi's
	// used memory may climb: a climb must start at least this long after
	// the log's first sample, while processes create their CUDA context,
	// load their model and run their first steps. (A memory_stats() log
	// has one record per step: its climb needs new highs over three
	// steps after the warm-up's jumps, see FindClimb.)
	WarmupUS int64

	// StatsRejected and SMIRejected count the lines left out as
	// unreadable.
	StatsRejected, SMIRejected int
	// StatsSetAside and SMISetAside count the records and samples set
	// aside when their log was truncated: a new run (see [Watch.Poll]).
	StatsSetAside, SMISetAside int

	statsLines, smiLines int
	smiCol               map[string]int
	smiHeaderLine        string
}

// AddStatsLines reads memory_stats() log lines (as [ParseStatsLog] reads
// them). A line that does not parse is left out with a warning, and
// reading goes on. With each, the rules are judged after every record
// (the step named is the first at which one held); otherwise once, after
// the last (a backlog read at start-up).
func (w *Watch) AddStatsLines(lines [][]byte, each bool) (warnings []string) {
	added := false
	for _, l := range lines {
		w.statsLines++
		t := strings.TrimSpace(string(Text(l)))
		if t == "" {
			continue
		}
		rec, err := parseStatsRecord([]byte(t))
		if err != nil {
			w.StatsRejected++
			warnings = append(warnings, fmt.Sprintf("line %d: %v: left out", w.statsLines, err))
			continue
		}
		rec.Line = w.statsLines
		w.Stats.Records = append(w.Stats.Records, rec)
		added = true
		if each {
			w.judgeStats()
		}
	}
	if added && !each {
		w.judgeStats()
	}
	return warnings
}

// AddSMILines reads nvidia-smi CSV lines (as [ParseSMI] reads them: a
// header line first or the default column order; repeated headers and
// "[N/A]" rows skipped). A row that does not parse is left out with a
// warning. each is as for [Watch.AddStatsLines].
func (w *Watch) AddSMILines(lines [][]byte, each bool) (warnings []string) {
	loc := w.Loc
	if loc == nil {
		loc = time.UTC
	}
	if w.smiCol == nil {
		w.smiCol = map[string]int{"timestamp": 0, "index": 1, "memory.used": 2, "memory.total": 3}
	}
	added := false
	for _, l := range lines {
		w.smiLines++
		t := strings.TrimSpace(string(Text(l)))
		if t == "" {
			continue
		}
		cr := csv.NewReader(strings.NewReader(t))
		cr.FieldsPerRecord, cr.TrimLeadingSpace, cr.LazyQuotes = -1, true, true
		rec, err := cr.Read()
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("line %d: %v: left out", w.smiLines, err))
			continue
		}
		if len(w.SMI.Samples) == 0 && !w.SMI.Header && isSMIHeader(rec) {
			m, err := smiHeader(rec)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("line %d: %v", w.smiLines, err))
				continue
			}
			w.smiCol, w.SMI.Header, w.smiHeaderLine = m, true, strings.Join(rec, ",")
			continue
		}
		if w.SMI.Header && strings.Join(rec, ",") == w.smiHeaderLine {
			continue
		}
		s, na, err := smiRow(rec, w.smiCol, loc)
		if err != nil {
			w.SMIRejected++
			warnings = append(warnings, fmt.Sprintf("line %d: %v: left out", w.smiLines, err))
			continue
		}
		if na {
			continue
		}
		s.Line = w.smiLines
		w.SMI.Samples = append(w.SMI.Samples, s)
		added = true
		if each {
			w.judgeSMI()
		}
	}
	if added && !each {
		w.judgeSMI()
	}
	return warnings
}

// judgeStats applies the rules to the memory_stats() records so far.
func (w *Watch) judgeStats() {
	if w.Triggered != nil {
		return
	}
	for _, d := range AnalyzeSteps(&w.Stats) {
		last := len(d.Records) - 1
		st := d.Records[last].Stats
		for _, r := range w.Rules {
			t := Trigger{Rule: r, Device: d.Device, Record: last}
			switch r.Kind {
			case StopClimb:
				switch {
				case d.Allocated.Climbing:
					t.What, t.Climb, t.Value = "allocated", d.Allocated, d.Allocated.End
				case d.Reserved.Climbing:
					t.What, t.Climb, t.Value = "reserved", d.Reserved, d.Reserved.End
				default:
					continue
				}
			case StopRetries:
				if st.NumAllocRetries == 0 {
					continue
				}
				t.What, t.Value, t.Record = "retries", st.NumAllocRetries, d.FirstRetry
			case StopOOM:
				if st.NumOOMs == 0 {
					continue
				}
				t.What, t.Value, t.Record = "OOMs", st.NumOOMs, d.FirstOOM
			case StopLimit:
				first := slices.IndexFunc(d.Records, func(rec StatsRecord) bool {
					return rec.Stats.ReservedBytes[stats.PoolAll].Current > r.Limit
				})
				if first < 0 {
					continue
				}
				t.What, t.Value, t.Record = "reserved", d.Records[first].Stats.ReservedBytes[stats.PoolAll].Current, first
			}
			w.Triggered = &t
			return
		}
	}
}

// judgeSMI applies the climb and limit rules to the nvidia-smi samples so
// far, GPU by GPU.
func (w *Watch) judgeSMI() {
	if w.Triggered != nil {
		return
	}
	for _, gpu := range w.SMI.GPUs() {
		var x []float64
		var y []int64
		var idx []int
		for i, s := range w.SMI.Samples {
			if s.GPU == gpu {
				x, y, idx = append(x, float64(s.TimeUS)), append(y, s.Used), append(idx, i)
			}
		}
		last := idx[len(idx)-1]
		for _, r := range w.Rules {
			t := Trigger{Rule: r, SMI: true, Device: gpu, Record: last, What: "used", Value: y[len(y)-1]}
			switch r.Kind {
			case StopClimb:
				// A climb from where the log started is the process
				// starting (the CUDA context, the model loaded), not
				// memory that keeps growing: smi judges the whole log so.
				c := FindClimb(x, y)
				if !c.Climbing || c.Base <= y[0] || int64(x[c.Start]-x[0]) < w.WarmupUS {
					continue
				}
				t.Climb = c
			case StopLimit:
				if t.Value <= r.Limit {
					continue
				}
			default:
				continue
			}
			w.Triggered = &t
			return
		}
	}
}

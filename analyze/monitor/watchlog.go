package monitor

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/snapview/snapview/internal/units"
)

// WatchGiveUp is how many unreadable lines, before any readable one, make
// a followed log the wrong kind of file rather than a log with a bad line.
const WatchGiveUp = 20

// WatchLog is one log a [Watch] follows: a memory_stats() log, or an
// nvidia-smi log (SMI), as a file that may grow, be rotated or truncated,
// or as a pipe.
type WatchLog struct {
	// Name is the log as messages name it (the path, or "<stdin>").
	Name string
	SMI  bool
	fl   *Follower
}

// OpenWatchLog opens the log at path ("-": stdin) to follow: a
// memory_stats() log, or an nvidia-smi log when smi. A file of another
// kind (a snapshot given as --stats) is a WrongKind error at once; a pipe
// can only be judged by its lines. A pipe or other file that is not a
// regular file is read in the background ([FollowReader]), a regular file
// followed by its path ([FollowFile]). The other errors are os's.
func OpenWatchLog(path string, smi bool, stdin io.Reader) (*WatchLog, error) {
	l := &WatchLog{Name: path, SMI: smi}
	if path == StdinPath {
		l.Name, l.fl = StdinName, FollowReader(stdin)
		return l, nil
	}
	kind := SniffFile(path)
	want, ok := "a JSON Lines log of memory_stats()", kind == KindStatsLog || kind == KindStats
	if smi {
		want, ok = "an nvidia-smi CSV log", kind == KindSMI
	}
	if !ok && kind != KindUnknown {
		return nil, WrongKind(path, kind, want)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		l.fl = FollowReader(f)
		return l, nil
	}
	l.fl, err = FollowFile(path)
	return l, err
}

// Close closes the file followed.
func (l *WatchLog) Close() error { return l.fl.Close() }

// IsPipe reports whether l reads a pipe (or standard input).
func (l *WatchLog) IsPipe() bool { return l.fl.IsPipe() }

// WatchWarning is a warning about one log.
type WatchWarning struct {
	Log, Text string
}

// WatchPoll is what one read of the logs brought.
type WatchPoll struct {
	// Grew says lines arrived.
	Grew bool
	// Ended says every log is at its end: pipes closed, and files too
	// when read once.
	Ended bool
	// Warnings are the logs' warnings, in the order they came.
	Warnings []WatchWarning
}

// Poll reads the lines that arrived in logs and adds them to w. The lines
// already in a file at the first poll (first) are judged as a whole, as
// smi and stats judge a log; later lines, and a pipe's (it holds no
// history: its first read is whatever the writer got to, more on a loaded
// machine), one by one as they arrive, unless once reads the pipe to its
// end. A log that starts again is restarted in w ([Watch.RestartStats]).
//
// The error is a failure to read a log, or a log whose first WatchGiveUp
// lines are all unreadable (not the log asked for: a snapshot, a CSV
// given as --stats), prefixed with the log's name; the warnings returned
// with it come before it.
func (w *Watch) Poll(logs []*WatchLog, first, once bool) (WatchPoll, error) {
	p := WatchPoll{Ended: true}
	for _, l := range logs {
		b, err := l.fl.Poll()
		if err != nil {
			return p, fmt.Errorf("%s: %w", l.Name, err)
		}
		each := !first || l.fl.IsPipe() && !once
		warns := b.Warnings
		if b.Restart >= 0 {
			warns = append(warns, w.add(l.SMI, b.Lines[:b.Restart], each)...)
			warns = append(warns, w.restart(l.SMI, b.Rotated))
			warns = append(warns, w.add(l.SMI, b.Lines[b.Restart:], each)...)
		} else {
			warns = append(warns, w.add(l.SMI, b.Lines, each)...)
		}
		for _, m := range warns {
			p.Warnings = append(p.Warnings, WatchWarning{Log: l.Name, Text: m})
		}
		if n := len(w.Stats.Records); !l.SMI && n == 0 && w.StatsRejected >= WatchGiveUp {
			return p, fmt.Errorf("%s: not a JSON Lines log of memory_stats(): its first %d lines do not read as records", l.Name, w.StatsRejected)
		}
		if n := len(w.SMI.Samples); l.SMI && n == 0 && w.SMIRejected >= WatchGiveUp {
			return p, fmt.Errorf("%s: not an nvidia-smi CSV log: its first %d rows do not read as samples", l.Name, w.SMIRejected)
		}
		p.Grew = p.Grew || len(b.Lines) > 0
		p.Ended = p.Ended && (l.fl.Done() || (once && !l.fl.IsPipe()))
	}
	return p, nil
}

// add adds lines to the memory_stats() records or, with smi, the
// nvidia-smi samples.
func (w *Watch) add(smi bool, lines [][]byte, each bool) []string {
	if smi {
		return w.AddSMILines(lines, each)
	}
	return w.AddStatsLines(lines, each)
}

// restart starts the numbering of a log's lines again from 1, as the log
// (smi: the nvidia-smi log) was read again from its start, and returns
// the warning that says what that does to the records. A truncated log is
// a run started again (the run truncates its log when it starts): the
// records read so far are set aside and the rules are judged on the new
// run alone, its records and lines numbered from 1. A rotated log is the
// same run going on in a new file: the records are kept, and lines are
// numbered in the new file.
func (w *Watch) restart(smi, rotated bool) string {
	what, n := "records", len(w.Stats.Records)
	if smi {
		what, n = "samples", len(w.SMI.Samples)
	}
	if rotated {
		if smi {
			w.smiLines = 0
		} else {
			w.statsLines = 0
		}
		return fmt.Sprintf("the %s read so far are kept (the run goes on in the new file); lines are numbered in the new file", units.Plural(n, what[:len(what)-1]))
	}
	if smi {
		w.SMISetAside += n
		w.SMI, w.smiLines, w.smiCol, w.smiHeaderLine = SMILog{}, 0, nil, ""
	} else {
		w.StatsSetAside += n
		w.Stats, w.statsLines = StatsLog{}, 0
	}
	return fmt.Sprintf("a new run: the %s read before are set aside, and %s and lines are numbered from 1 again", units.Plural(n, what[:len(what)-1]), what)
}

// ParseStopRules reads --stop-on values: climb, retries, oom or a byte
// limit ("70GiB"), each repeated or comma-separated. The error names the
// value that is none of these.
func ParseStopRules(vals []string) ([]StopRule, error) {
	var rules []StopRule
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			switch strings.ToLower(s) {
			case "climb":
				rules = append(rules, StopRule{Kind: StopClimb})
			case "retries", "retry":
				rules = append(rules, StopRule{Kind: StopRetries})
			case "oom", "ooms":
				rules = append(rules, StopRule{Kind: StopOOM})
			default:
				n, err := units.ParseBytes(s)
				if err != nil || n == 0 {
					return nil, fmt.Errorf("%q: want climb, retries, oom or a byte limit such as 70GiB", s)
				}
				rules = append(rules, StopRule{Kind: StopLimit, Limit: n})
			}
		}
	}
	return rules, nil
}

// OpenWatchLogs opens the memory_stats() log at statsPath and the
// nvidia-smi log at smiPath ("": none; "-": stdin) with OpenWatchLog, in
// that order. The logs opened before an error are returned too, for the
// caller to close.
func OpenWatchLogs(statsPath, smiPath string, stdin io.Reader) ([]*WatchLog, error) {
	var logs []*WatchLog
	for i, path := range []string{statsPath, smiPath} {
		if path == "" {
			continue
		}
		l, err := OpenWatchLog(path, i == 1, stdin)
		if err != nil {
			return logs, err
		}
		logs = append(logs, l)
	}
	return logs, nil
}

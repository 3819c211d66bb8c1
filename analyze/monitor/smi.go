package monitor

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SMISample is one row of an nvidia-smi log: one GPU at one moment.
type SMISample struct {
	// Line is the row's line number in the file, from 1.
	Line int
	// GPU is the "index" column (nvidia-smi's ordinal, which is not the
	// CUDA ordinal under CUDA_VISIBLE_DEVICES); 0 when the log has none.
	GPU int
	// TimeUS is the "timestamp" column in microseconds since the Unix
	// epoch, read in the log's time zone.
	TimeUS int64
	// Used and Total are memory.used and memory.total in bytes; Total is
	// 0 when the log does not have it.
	Used, Total int64
}

// SMILog is an nvidia-smi --query-gpu CSV log.
type SMILog struct {
	// Samples are the rows in file order.
	Samples []SMISample
	// Header says whether the log has its header line (--format=csv
	// rather than csv,noheader).
	Header bool
	// Columns are the columns read, by their query names.
	Columns []string
	// Warnings are faults tolerated: rows with "[N/A]", an incomplete
	// last row.
	Warnings []string
}

// GPUs returns the GPU indexes of the log, ascending.
func (l *SMILog) GPUs() []int {
	seen := map[int]bool{}
	var out []int
	for _, s := range l.Samples {
		if !seen[s.GPU] {
			seen[s.GPU] = true
			out = append(out, s.GPU)
		}
	}
	slices.Sort(out)
	return out
}

// smiTimeLayouts are the timestamp layouts nvidia-smi writes
// ("2026/11/30 15:31:02.123"), with and without the milliseconds.
var smiTimeLayouts = []string{"2006/01/02 15:04:05.000", "2006/01/02 15:04:05", "2006-01-02 15:04:05.000", "2006-01-02T15:04:05.000"}

// parseSMITime reads an nvidia-smi timestamp in loc (UTC when nil).
func parseSMITime(s string, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	for _, l := range smiTimeLayouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// ParseSMI reads the CSV nvidia-smi writes with
//
//	nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv -l 1
//
// (or -lms 100; more columns are allowed). With a header line ("timestamp,
// index, memory.used [MiB], …") the columns are found by name and may come
// in any order; timestamp and memory.used are required, index (without it
// every row is GPU 0) and memory.total are optional. Without a header
// (--format=csv,noheader) the columns must come in the order above. Sizes
// may carry their unit ("1234 MiB", --format=csv) or not (nounits: MiB).
// nvidia-smi writes its timestamps in the local time of the machine it ran
// on: loc says which zone that was.
//
// A row that cannot be read is an error "line N: fault". Rows whose memory
// is "[N/A]" are skipped with a warning, as is an incomplete last row
// (nvidia-smi was stopped while writing it); repeated header lines are
// skipped. UTF-16 and byte order marks are read (see [Text]).
func ParseSMI(r io.Reader, loc *time.Location) (*SMILog, error) {
	if loc == nil {
		loc = time.UTC
	}
	b, err := ReadLog(r)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(bytes.NewReader(Text(b)))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	log := &SMILog{}
	col := map[string]int{"timestamp": 0, "index": 1, "memory.used": 2, "memory.total": 3}
	var headerLine string
	var skippedNA int
	var pending error // an error on the previous row, reported unless it was the last
	for row := 0; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("line %d: %v", pe.Line, pe.Err)
			}
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if pending != nil {
			return nil, pending
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if row == 0 || len(log.Samples) == 0 && !log.Header {
			if isSMIHeader(rec) {
				m, err := smiHeader(rec)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", line, err)
				}
				col, log.Header = m, true
				headerLine = strings.Join(rec, ",")
				continue
			}
		}
		if log.Header && strings.Join(rec, ",") == headerLine {
			continue
		}
		s, na, err := smiRow(rec, col, loc)
		if err != nil {
			// Held back: the last row of a log nvidia-smi was writing may
			// be cut short, and is only left out if nothing follows.
			if !log.Header {
				err = fmt.Errorf("%w (without a header line the columns must be timestamp, index, memory.used[, memory.total])", err)
			}
			pending = fmt.Errorf("line %d: %w", line, err)
			continue
		}
		if na {
			skippedNA++
			continue
		}
		s.Line = line
		log.Samples = append(log.Samples, s)
	}
	if pending != nil {
		if len(log.Samples) == 0 {
			return nil, pending
		}
		log.Warnings = append(log.Warnings, fmt.Sprintf("%s; the last row left out (the log may have been cut short)", pending))
	}
	if skippedNA > 0 {
		log.Warnings = append(log.Warnings, fmt.Sprintf("%d rows with memory \"[N/A]\" left out", skippedNA))
	}
	if len(log.Samples) == 0 {
		return nil, errors.New("no nvidia-smi rows")
	}
	names := make([]string, 0, len(col))
	for k := range col {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int { return col[a] - col[b] })
	log.Columns = names
	return log, nil
}

// isSMIHeader reports whether rec is a header line: its first field is
// not a timestamp and it names timestamp or memory.used.
func isSMIHeader(rec []string) bool {
	if _, ok := parseSMITime(strings.TrimSpace(rec[0]), nil); ok {
		return false
	}
	for _, f := range rec {
		if n := smiColumnName(f); n == "timestamp" || n == "memory.used" {
			return true
		}
	}
	return false
}

// smiColumnName is a header field without its unit: "memory.used [MiB]"
// → "memory.used".
func smiColumnName(f string) string {
	f = strings.TrimSpace(f)
	if i := strings.Index(f, " ["); i >= 0 {
		f = f[:i]
	}
	return strings.ToLower(f)
}

// smiHeader maps the columns snapview reads to their positions.
func smiHeader(rec []string) (map[string]int, error) {
	m := map[string]int{}
	for i, f := range rec {
		switch n := smiColumnName(f); n {
		case "timestamp", "index", "memory.used", "memory.total":
			if _, dup := m[n]; dup {
				return nil, fmt.Errorf("column %q given twice", n)
			}
			m[n] = i
		}
	}
	for _, need := range []string{"timestamp", "memory.used"} {
		if _, ok := m[need]; !ok {
			return nil, fmt.Errorf("the header has no %s column (query --query-gpu=timestamp,index,memory.used,memory.total)", need)
		}
	}
	return m, nil
}

// smiRow reads one data row; na is true when its memory is "[N/A]".
func smiRow(rec []string, col map[string]int, loc *time.Location) (s SMISample, na bool, err error) {
	field := func(name string) (string, bool) {
		i, ok := col[name]
		if !ok {
			return "", false
		}
		if i >= len(rec) {
			return "", true
		}
		return strings.TrimSpace(rec[i]), true
	}
	for name, i := range col {
		if i >= len(rec) && (name == "timestamp" || name == "memory.used" || name == "index") {
			return s, false, fmt.Errorf("%d fields, no %s (want %d or more)", len(rec), name, i+1)
		}
	}
	ts, _ := field("timestamp")
	t, ok := parseSMITime(ts, loc)
	if !ok {
		return s, false, fmt.Errorf("timestamp %q: want nvidia-smi's YYYY/MM/DD HH:MM:SS.mmm", ts)
	}
	s.TimeUS = t.UnixMicro()
	if v, ok := field("index"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s, false, fmt.Errorf("index %q: want a GPU index", v)
		}
		s.GPU = n
	}
	used, _ := field("memory.used")
	if isNA(used) {
		return s, true, nil
	}
	if s.Used, err = parseMiB(used); err != nil {
		return s, false, fmt.Errorf("memory.used: %w", err)
	}
	if v, ok := field("memory.total"); ok && v != "" && !isNA(v) {
		if s.Total, err = parseMiB(v); err != nil {
			return s, false, fmt.Errorf("memory.total: %w", err)
		}
	}
	return s, false, nil
}

// isNA reports whether an nvidia-smi value is a placeholder ("[N/A]",
// "[Not Supported]").
func isNA(v string) bool {
	return strings.HasPrefix(v, "[") || v == "N/A"
}

// parseMiB reads an nvidia-smi memory figure ("1234 MiB" or "1234", which
// is MiB) and returns bytes.
func parseMiB(v string) (int64, error) {
	num, unit, _ := strings.Cut(v, " ")
	mult := int64(1 << 20)
	switch strings.TrimSpace(unit) {
	case "", "MiB":
	case "KiB":
		mult = 1 << 10
	case "GiB":
		mult = 1 << 30
	case "B":
		mult = 1
	default:
		return 0, fmt.Errorf("%q: unknown unit %q", v, unit)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: want a size in MiB", v)
	}
	return n * mult, nil
}

// Package monitor reads and explains the figures people log around a
// memory snapshot: a json.dump(torch.cuda.memory_stats()) file, a JSON
// Lines log of memory_stats() dumps (one per training step), and an
// nvidia-smi --query-gpu CSV log. It finds where memory keeps climbing
// ([FindClimb]), sums up each GPU's nvidia-smi samples ([SummarizeSMI]) and
// measures the memory nvidia-smi counts that PyTorch's caching allocator
// did not reserve ([FindGap]). It never prints and never does I/O beyond
// the readers it is given.
package monitor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
)

// Kind is what a file holds, as [Sniff] recognises it by content.
type Kind int

const (
	// KindUnknown: none of the others; a snapshot decoder says why.
	KindUnknown Kind = iota
	// KindSnapshot: a pickle (or gzip/xz data), a JSON list, or a JSON
	// object with "segments" or "device_traces".
	KindSnapshot
	// KindStats: one JSON document holding torch.cuda.memory_stats()
	// figures (the flat dict, a dict keyed by device, or a dict with a
	// "memory_stats" key).
	KindStats
	// KindStatsLog: JSON Lines, one memory_stats() dict per line.
	KindStatsLog
	// KindSMI: an nvidia-smi --query-gpu=... --format=csv log.
	KindSMI
)

// String names the kind in messages.
func (k Kind) String() string {
	switch k {
	case KindSnapshot:
		return "memory snapshot"
	case KindStats:
		return "memory_stats() dump"
	case KindStatsLog:
		return "JSON Lines log of memory_stats() dumps"
	case KindSMI:
		return "nvidia-smi CSV log"
	}
	return "unknown"
}

// SniffLen is how many leading bytes of a file [Sniff] wants.
const SniffLen = 64 << 10

// Sniff says what a file holds from its first bytes (up to [SniffLen]):
// pickles and compressed data are snapshots; a JSON list is a snapshot
// (torch.cuda.memory_snapshot()); a JSON object is a snapshot when it names
// "segments" or "device_traces", memory_stats() figures when it names their
// keys, and a JSON Lines log when its first line is a whole object and
// another object follows; text whose first line names "timestamp" and
// "memory.used", or starts with an nvidia-smi timestamp, is an nvidia-smi
// log. Text logs may be UTF-16 or start with a byte order mark (see
// [Text]).
func Sniff(head []byte) Kind {
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b,
		len(head) >= 6 && bytes.Equal(head[:6], []byte{0xfd, '7', 'z', 'X', 'Z', 0}),
		len(head) >= 1 && head[0] == 0x80:
		return KindSnapshot
	}
	trimmed := bytes.TrimLeft(Text(head), " \t\r\n")
	if len(trimmed) == 0 {
		return KindUnknown
	}
	switch trimmed[0] {
	case '[':
		return KindSnapshot
	case '{':
		return sniffJSON(trimmed)
	}
	first, _, _ := bytes.Cut(trimmed, []byte("\n"))
	first = bytes.TrimSpace(first)
	if bytes.Contains(first, []byte("timestamp")) && bytes.Contains(first, []byte("memory.used")) {
		return KindSMI
	}
	if f, _, _ := bytes.Cut(first, []byte(",")); len(f) > 0 {
		if _, ok := parseSMITime(string(bytes.TrimSpace(f)), nil); ok {
			return KindSMI
		}
	}
	return KindUnknown
}

// sniffJSON tells the JSON kinds apart; b starts with '{'.
func sniffJSON(b []byte) Kind {
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	if json.Valid(bytes.TrimSpace(first)) {
		if rest = bytes.TrimSpace(rest); len(rest) > 0 && rest[0] == '{' {
			return KindStatsLog
		}
	}
	for _, k := range []string{`"segments"`, `"device_traces"`} {
		if bytes.Contains(b, []byte(k)) {
			return KindSnapshot
		}
	}
	for _, k := range []string{`"memory_stats"`, `"num_alloc_retries"`, `.all.current"`} {
		if bytes.Contains(b, []byte(k)) {
			return KindStats
		}
	}
	return KindUnknown
}

// SniffFile is Sniff of the first SniffLen bytes of the file at path;
// KindUnknown for a file that cannot be opened or is not a regular file
// (a pipe, which reading would consume).
func SniffFile(path string) Kind {
	f, err := os.Open(path)
	if err != nil {
		return KindUnknown
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return KindUnknown
	}
	head := make([]byte, SniffLen)
	n, _ := io.ReadFull(f, head)
	return Sniff(head[:n])
}

// SniffReader is Sniff of the first SniffLen bytes of r, peeked: the
// caller reads the returned reader instead of r.
func SniffReader(r io.Reader) (Kind, io.Reader) {
	br := bufio.NewReaderSize(r, SniffLen)
	head, _ := br.Peek(SniffLen)
	return Sniff(head), br
}

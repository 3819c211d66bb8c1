package monitor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseZone: zone names, UTC, Local and fixed offsets in the forms
// --tz takes; a bad zone is an error that says what is wanted.
func TestParseZone(t *testing.T) {
	for _, tt := range []struct {
		in     string
		offset int // seconds east of UTC, at the Unix epoch
	}{
		{"UTC", 0}, {"Z", 0}, {"+02:00", 7200}, {"-0530", -19800}, {"UTC+2", 7200}, {"GMT-3", -10800}, {"Europe/Berlin", 3600},
	} {
		loc, err := ParseZone(tt.in)
		if err != nil {
			t.Errorf("ParseZone(%q): %v", tt.in, err)
			continue
		}
		if _, off := (timeAtEpoch()).In(loc).Zone(); off != tt.offset {
			t.Errorf("ParseZone(%q): offset %d, want %d", tt.in, off, tt.offset)
		}
	}
	if _, err := ParseZone("Mars/Olympus"); err == nil || !strings.Contains(err.Error(), "want a zone name") {
		t.Errorf("ParseZone(Mars/Olympus): %v, want an error that says what is wanted", err)
	}
}

// TestLoadWrongKind: LoadStatsLog and LoadSMI refuse each other's files
// with an error that names the file, what it is and which command reads it.
func TestLoadWrongKind(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "stats.json")
	if err := os.WriteFile(dump, []byte(`{"allocated_bytes.all.current": 512}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadSMI(dump, nil, nil)
	if err == nil || !strings.HasPrefix(err.Error(), dump+": a ") || !strings.Contains(err.Error(), "not an nvidia-smi CSV log: snapview summary reads it") {
		t.Errorf("LoadSMI(stats dump): %v", err)
	}
	if _, _, _, err := LoadStatsLog(dump, nil); err == nil || !strings.HasPrefix(err.Error(), dump+": memory_stats of device 0: missing") {
		t.Errorf("LoadStatsLog(incomplete dump): %v, want an error naming the file and the fault", err)
	}
	if _, _, err := ReadInput(filepath.Join(dir, "absent"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadInput(absent): %v", err)
	}
}

func timeAtEpoch() time.Time { return time.Unix(0, 0) }

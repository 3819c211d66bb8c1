package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	_ "time/tzdata" // --tz zone names on machines without a zoneinfo database

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/progress"
)

// sniffInput says what the file at path holds (monitor.Sniff). For "-" it
// peeks at stdin and returns the reader to use instead of it. A file that
// cannot be opened is KindUnknown: the snapshot loader then says why.
func sniffInput(path string, stdin io.Reader) (monitor.Kind, io.Reader) {
	if path == stdinPath {
		if f, ok := stdin.(*os.File); ok && progress.IsTerminal(f) {
			return monitor.KindUnknown, stdin
		}
		return monitor.SniffReader(stdin)
	}
	return monitor.SniffFile(path), stdin
}

// pickDevices keeps the items of the device --device names (all without
// it); a device the file does not have is a usage error.
func pickDevices[T any](f deviceFlag, name string, items []T, device func(T) int) ([]T, error) {
	if !f.set {
		return items, nil
	}
	var keep []T
	var have []int
	for _, it := range items {
		have = append(have, device(it))
		if device(it) == f.n {
			keep = append(keep, it)
		}
	}
	if keep == nil {
		return nil, usageErrorf("--device %d: %s has no device %d (devices: %s)", f.n, name, f.n, joinInts(have))
	}
	return keep, nil
}

// snapshotHint improves a load error of a snapshot command when the file
// is one of the monitoring files: it names what the file is and which
// command reads it.
func snapshotHint(path string, err error) error {
	var fe *fileError
	if err == nil || path == stdinPath || errors.As(err, &fe) {
		return err
	}
	if werr := monitor.NotSnapshot(path); werr != nil {
		return werr
	}
	return err
}

// parseZone reads --tz (monitor.ParseZone); a bad zone is a usage error.
func parseZone(s string) (*time.Location, error) {
	loc, err := monitor.ParseZone(s)
	if err != nil {
		return nil, usageErrorf("--tz %v", err)
	}
	return loc, nil
}

// loadStatsDump reads a memory_stats() dump (monitor.LoadStatsDump): a
// flat dump, which does not say its device, is taken as --device's
// (device 0 without it); named is false then, and --device is no filter.
func loadStatsDump(path string, r io.Reader, device deviceFlag) (name string, st []*stats.MemoryStats, named bool, err error) {
	return monitor.LoadStatsDump(path, r, device.n) // n is 0 when unset
}

// loadStatsLog reads a memory_stats() log (monitor.LoadStatsLog); its
// warnings go to errOut.
func loadStatsLog(path string, r io.Reader, errOut io.Writer) (string, *monitor.StatsLog, error) {
	name, l, warns, err := monitor.LoadStatsLog(path, r)
	for _, w := range warns {
		fmt.Fprintf(errOut, "warning: %s: %s\n", name, w)
	}
	return name, l, err
}

// loadSMI reads an nvidia-smi CSV log written in zone loc
// (monitor.LoadSMI); its warnings go to errOut.
func loadSMI(path string, r io.Reader, loc *time.Location, errOut io.Writer) (string, *monitor.SMILog, error) {
	name, l, err := monitor.LoadSMI(path, r, loc)
	if err != nil {
		return name, nil, err
	}
	for _, w := range l.Warnings {
		fmt.Fprintf(errOut, "warning: %s: %s\n", name, w)
	}
	return name, l, nil
}

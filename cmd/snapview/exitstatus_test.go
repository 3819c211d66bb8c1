package main

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/snapview/snapview/analysis"
)

// TestExitStatusHelp: the top-level help lists every exit status the
// commands use, as exitCode and signalCode give them (0; 1 for a plain
// error; 2 for either usage error; watch's 3; 130 and 143 for SIGINT and
// SIGTERM), and no other.
func TestExitStatusHelp(t *testing.T) {
	used := []int{0,
		exitCode(errors.New("unreadable")),
		exitCode(usageErrorf("bad flag")),
		exitCode(analysis.UsageErrorf("no such device")),
		exitCode(&exitStatus{code: watchTriggered, msg: "stopped"}),
		signalCode(syscall.SIGINT),
		signalCode(syscall.SIGTERM),
	}
	help := helpText("snapview")
	start, end := strings.Index(help, "Exit status:"), strings.Index(help, "Any command stops")
	if start < 0 || end < start {
		t.Fatalf("no exit status list in the top-level help:\n%s", help)
	}
	block := help[start:end]
	var listed []int
	for _, m := range regexp.MustCompile(`(?m)^  (\d+) |; (\d+) after SIG`).FindAllStringSubmatch(block, -1) {
		n, _ := strconv.Atoi(m[1] + m[2])
		listed = append(listed, n)
	}
	slices.Sort(used)
	used = slices.Compact(used)
	slices.Sort(listed)
	if !slices.Equal(used, listed) {
		t.Errorf("help lists exit statuses %v, the commands use %v:\n%s", listed, used, block)
	}
}

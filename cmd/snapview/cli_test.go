package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deviceCommands are the commands with a -d/--device flag.
var deviceCommands = []string{"summary", "segments", "state", "leaks", "report", "info", "whatif", "stats"}

// emptySnapshots writes two valid snapshots with nothing in them: no
// device at all, and four devices with empty traces.
func emptySnapshots(t *testing.T) (none, four string) {
	t.Helper()
	dir := t.TempDir()
	none = filepath.Join(dir, "empty.json")
	four = filepath.Join(dir, "empty-4dev.json")
	for p, doc := range map[string]string{
		none: `{"segments": [], "device_traces": []}`,
		four: `{"segments": [], "device_traces": [[], [], [], []]}`,
	} {
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return none, four
}

// TestStateOOMDevice: without --device, --at oom shows the device that has
// one; naming a device without one says which devices have one.
func TestStateOOMDevice(t *testing.T) {
	file := sharedSnapshot(t, "public/p32-3dev-expandable-oom.pickle")
	tests := []struct {
		name     string
		args     []string
		wantOut  string // prefix of stdout
		wantNote string // substring of stderr
		wantErr  string // the error after "FILE: "
	}{
		{"oom picks device 1", []string{"--at", "oom"},
			"Device 1 at oom: after entry 421 of 596", "showing device 1, the first with an oom entry", ""},
		{"oom:1 picks device 1", []string{"--at", "oom:1", "--json"},
			"{\n  \"device\": 1,", "showing device 1", ""},
		{"peak keeps the first device with a trace", nil,
			"Device 0 at the allocated peak:", "showing device 0, the first with a trace (the file has devices 0, 1, 2)", ""},
		{"named device without an oom", []string{"--at", "oom", "-d", "0"},
			"", "", "device 0 has no oom entry; devices with one: 1 (use --device 1)"},
		{"named device with it", []string{"--at", "oom", "--device", "1"},
			"Device 1 at oom:", "", ""},
		{"oom:2 of a device with one", []string{"--at", "oom:2", "-d", "1"},
			"", "", "--at oom:2: device 1 has 1 oom entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := runSnapview(t, append(append([]string{"state"}, tt.args...), file)...)
			if tt.wantErr != "" {
				if err == nil || err.Error() != file+": "+tt.wantErr || exitCode(err) != 2 {
					t.Fatalf("error %v (exit %d), want %q with exit code 2", err, exitCode(err), file+": "+tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// At an OOM explain's findings come first, then a blank line.
			if !strings.HasPrefix(out, tt.wantOut) && !(strings.HasPrefix(out, "Explain (snapview explain):\n") && strings.Contains(out, "\n\n"+tt.wantOut)) {
				t.Errorf("stdout starts %q, want %q", out[:min(len(out), 80)], tt.wantOut)
			}
			if tt.wantNote == "" && errOut != "" || !strings.Contains(errOut, tt.wantNote) {
				t.Errorf("stderr %q, want %q", errOut, tt.wantNote)
			}
		})
	}
}

// TestErrorsNameTheFile: errors met after a successful load name the file
// on one line, with the exit code of their kind.
func TestErrorsNameTheFile(t *testing.T) {
	oom := bundled("leak_gc_oom.pickle")
	mlp := bundled("mlp_train.pickle")
	none, four := emptySnapshots(t)
	tests := []struct {
		name string
		args []string
		file string
		want string // the error after "FILE: "
		code int
	}{
		{"no oom", []string{"state", "--at", "oom"}, mlp, "device 0 has no oom entry", 2},
		{"no such device", []string{"summary", "-d", "3"}, mlp, "--device 3: the snapshot has no device 3 (devices: 0)", 2},
		{"no such device, state", []string{"state", "-d", "3"}, mlp, "--device 3: the snapshot has no device 3 (devices: 0)", 2},
		{"no such device, leaks", []string{"leaks", "--device", "3"}, oom, "--device 3: the snapshot has no device 3 (devices: 0)", 2},
		{"no such device, segments", []string{"segments", "-d", "1"}, oom, "--device 1: the snapshot has no device 1 (devices: 0)", 2},
		{"no such device, info", []string{"info", "-d", "1"}, oom, "--device 1: the snapshot has no device 1 (devices: 0)", 2},
		{"no such device, report", []string{"report", "-o", "-", "-d", "1"}, oom, "--device 1: the snapshot has no device 1 (devices: 0)", 2},
		{"no device at all", []string{"summary", "-d", "0"}, none, "--device 0: the snapshot has no device 0 (it holds no device)", 2},
		{"idle devices count", []string{"state", "-d", "4"}, four, "--device 4: the snapshot has no device 4 (devices: 0, 1, 2, 3)", 2},
		{"entry out of range", []string{"leaks", "--at", "entry:9999"}, oom, "--at entry:9999: device 0 has 289 trace entries (0 to 288)", 2},
		{"leaks at an oom no device has", []string{"leaks", "--at", "oom"}, mlp, "device 0 has no oom entry", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runSnapview(t, append(tt.args, tt.file)...)
			if err == nil {
				t.Fatal("no error")
			}
			if want := tt.file + ": " + tt.want; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			if got := exitCode(err); got != tt.code {
				t.Errorf("exit code %d, want %d", got, tt.code)
			}
		})
	}
}

// TestNoTimestampsIsUsage: time:T on a trace without time_us is a usage
// error naming the file.
func TestNoTimestampsIsUsage(t *testing.T) {
	file := sharedSnapshot(t, "public/p25-no-timestamps-4dev.pickle")
	for _, cmd := range []string{"state", "leaks"} {
		_, _, err := runSnapview(t, cmd, "--at", "time:1s", file)
		want := file + ": the trace of device 0 has no timestamps (PyTorch before 2.2): use --at entry:N"
		if err == nil || err.Error() != want || exitCode(err) != 2 {
			t.Errorf("%s: error %v (exit %d), want %q with exit code 2", cmd, err, exitCode(err), want)
		}
	}
}

// TestEmptySnapshot: a valid snapshot with nothing in it is not an error.
func TestEmptySnapshot(t *testing.T) {
	none, four := emptySnapshots(t)
	const nothing = "nothing to show: the snapshot holds no segments and no trace entries (recording was off, or nothing was allocated)\n"
	tests := []struct {
		name string
		args []string
		want string // stdout; "" for any
		json bool   // stdout must be JSON
	}{
		{"state", []string{"state", none}, nothing, false},
		{"state 4 devices", []string{"state", four}, nothing, false},
		{"state --json", []string{"state", "--json", none}, "{}\n", true},
		{"state an idle device", []string{"state", "-d", "2", four}, strings.Replace(nothing, "the snapshot", "device 2", 1), false},
		{"state --at oom", []string{"state", "--at", "oom", four}, nothing, false},
		{"leaks", []string{"leaks", none}, nothing, false},
		{"leaks 4 devices", []string{"leaks", four}, nothing, false},
		{"leaks an idle device", []string{"leaks", "-d", "3", four}, strings.Replace(nothing, "the snapshot", "device 3", 1), false},
		{"leaks --json", []string{"leaks", "--json", four}, "", true},
		{"summary --json", []string{"summary", "--json", four}, "", true},
		{"segments --json", []string{"segments", "--json", none}, "", true},
		{"info --json", []string{"info", "--json", none}, "", true},
		{"report", []string{"report", "-o", "-", four}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runSnapview(t, tt.args...)
			if err != nil {
				t.Fatalf("error %v (exit %d), want none", err, exitCode(err))
			}
			if tt.want != "" && out != tt.want {
				t.Errorf("stdout %q, want %q", out, tt.want)
			}
			if tt.json && !json.Valid([]byte(out)) {
				t.Errorf("stdout is not JSON: %q", out)
			}
		})
	}
}

// TestDeviceFlagEverywhere: every command with devices has -d/--device,
// shows its default once, and refuses a negative ordinal the same way.
func TestDeviceFlagEverywhere(t *testing.T) {
	for _, cmd := range deviceCommands {
		t.Run(cmd, func(t *testing.T) {
			out, _, err := runSnapview(t, cmd, "--help")
			if err != nil {
				t.Fatal(err)
			}
			var line string
			for l := range strings.SplitSeq(out, "\n") {
				if strings.Contains(l, "--device") {
					line = l
				}
			}
			if !strings.Contains(line, "-d, --device N") || strings.Count(line, "(default") != 1 || strings.Contains(line, "-1") {
				t.Errorf("--device help line %q, want '-d, --device N' and one '(default: ...)'", line)
			}
			for _, v := range []string{"-1", "x"} {
				_, _, err := runSnapview(t, cmd, "-d", v, "x.pickle")
				want := `invalid argument "` + v + `" for "-d, --device" flag: want a device ordinal (0, 1, …), got "` + v + `"`
				if err == nil || err.Error() != want || exitCode(err) != 2 {
					t.Errorf("-d %s: error %v (exit %d), want %q with exit code 2", v, err, exitCode(err), want)
				}
			}
		})
	}
}

// TestInfoDevice: info --device keeps only that device's section.
func TestInfoDevice(t *testing.T) {
	file := sharedSnapshot(t, "torch2.11/two_devices/snapshot.pickle")
	out, _, err := runSnapview(t, "info", "-d", "1", "--json", file)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Devices []struct {
			Device int `json:"device"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Devices) != 1 || v.Devices[0].Device != 1 {
		t.Errorf("devices %+v, want device 1 only", v.Devices)
	}
	text, _, err := runSnapview(t, "info", "--device", "0", file)
	if err != nil || !strings.Contains(text, "\n  device 0\n") || strings.Contains(text, "\n  device 1\n") {
		t.Errorf("info --device 0: %v, want device 0's section only:\n%s", err, text)
	}
}

// TestFlagConsistency: the same flag means the same on every command.
func TestFlagConsistency(t *testing.T) {
	file := bundled("mlp_train.pickle")
	tests := []struct {
		name string
		args []string
		want string // substring of the error; "" for success
	}{
		{"summary --json", []string{"summary", "--json", file}, ""},
		{"summary --json --format json", []string{"summary", "--json", "--format", "json", file}, ""},
		{"summary --json --format text", []string{"summary", "--json", "-f", "text", file}, "--json and --format text: give one of them"},
		{"leaks --top 0", []string{"leaks", "--top", "0", file}, "--top must be at least 1, got 0"},
		{"state --top 0", []string{"state", "--top", "0", file}, "--top must be at least 1, got 0"},
		{"report --top 0", []string{"report", "--top", "0", file}, "--top must be at least 1, got 0"},
		{"unknown command", []string{"sumary", file}, `unknown command "sumary" for "snapview" (did you mean summary?)`},
		{"unknown command, two close", []string{"stat", file}, `unknown command "stat" for "snapview" (did you mean state or stats?)`},
		{"min-bytes bare M", []string{"leaks", "--min-bytes", "10M", file}, `--min-bytes "10M": M is ambiguous: say 10MB (powers of 1000) or 10MiB (powers of 1024)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runSnapview(t, tt.args...)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err) != 2 || strings.ContainsAny(err.Error(), "\n\t") {
				t.Errorf("error %v (exit %d), want one containing %q with exit code 2", err, exitCode(err), tt.want)
			}
		})
	}
	a, _, err := runSnapview(t, "summary", "--json", file)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := runSnapview(t, "summary", "--format", "json", file)
	if err != nil || a != b {
		t.Errorf("summary --json differs from --format json (%v)", err)
	}
}

// TestStdin: "-" reads the snapshot from standard input, and errors then
// name <stdin>.
func TestStdin(t *testing.T) {
	file := bundled("mlp_train.pickle.gz")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		stdin   []byte
		wantErr string
		code    int
	}{
		{"summary torch", []string{"summary", "-f", "torch"}, data, "", 0},
		{"segments", []string{"segments"}, data, "", 0},
		{"state", []string{"state", "--at", "end"}, data, "", 0},
		{"leaks", []string{"leaks", "--json"}, data, "", 0},
		{"garbage", []string{"summary"}, []byte("not a snapshot"), "<stdin>: not a pickle or JSON", 1},
		{"nothing", []string{"info"}, nil, "<stdin>: ", 1},
		{"after the load", []string{"state", "--at", "oom"}, data, "<stdin>: device 0 has no oom entry", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runSnapviewIn(t, bytes.NewReader(tt.stdin), append(tt.args, "-")...)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || exitCode(err) != tt.code {
					t.Fatalf("error %v (exit %d), want one starting %q with exit code %d", err, exitCode(err), tt.wantErr, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := runSnapview(t, append(tt.args, file)...)
			if err != nil {
				t.Fatal(err)
			}
			if out != want {
				t.Errorf("stdout from stdin differs from the file's")
			}
		})
	}
	// info names <stdin> and counts the bytes read.
	out, _, err := runSnapviewIn(t, bytes.NewReader(data), "info", "-")
	if err != nil || !strings.Contains(out, "path:          <stdin>\n") || !strings.Contains(out, "size on disk:") {
		t.Errorf("info -: %v\n%s", err, out)
	}
	root, _, _ := runSnapview(t, "--help")
	if !strings.Contains(root, "or - to read it from standard input") {
		t.Errorf("root --help does not document -")
	}
}

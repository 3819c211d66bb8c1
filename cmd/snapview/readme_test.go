package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeExample is one "$ snapview ..." command of README.md with the
// output lines the README shows under it.
type readmeExample struct {
	line int // of the command in README.md, from 1
	args []string
	want []string
}

// readmeExamples reads README.md's code blocks: a line "$ L=VALUE" sets
// $L for the lines after it, a line ending in "\" goes on on the next,
// and the output lines after a command are its own; an example whose
// command is not snapview's (go tool pprof) is left out.
func readmeExamples(t *testing.T, readme string) []readmeExample {
	t.Helper()
	var out []readmeExample
	vars := map[string]string{}
	var cur *readmeExample
	in := false
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "```") {
			in, cur = !in, nil
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(l, "$ ") {
			if cur != nil {
				cur.want = append(cur.want, l)
			}
			continue
		}
		cmd, n := l, i
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
		}
		cmd, _, _ = strings.Cut(strings.TrimPrefix(cmd, "$ "), " #")
		fields := strings.Fields(cmd)
		if len(fields) == 1 && strings.Contains(fields[0], "=") {
			k, v, _ := strings.Cut(fields[0], "=")
			vars[k] = v
			cur = nil
			continue
		}
		if fields[0] != "snapview" {
			cur = nil
			continue
		}
		for k, v := range vars {
			for j := range fields {
				fields[j] = strings.ReplaceAll(fields[j], "$"+k, v)
			}
		}
		out = append(out, readmeExample{line: n + 1, args: fields[1:]})
		cur = &out[len(out)-1]
	}
	return out
}

// TestReadmeExamples runs every snapview command README.md shows and
// checks each output line it shows against what the command prints: the
// line's text, spaces folded, found in the output in order (so a line
// the README cuts with "...", leaves out or wraps elsewhere still
// matches, and a figure or word that changed does not).
func TestReadmeExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples := readmeExamples(t, string(readme))
	if len(examples) < 15 {
		t.Fatalf("found %d examples in README.md, want one per command", len(examples))
	}
	// The README's paths are from the repository root; its -o files go
	// to a directory of the test's own.
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "testdata"), filepath.Join(dir, "testdata")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	fold := regexp.MustCompile(`\s+`)
	for _, ex := range examples {
		// check and watch end in an error by design; the lines a command
		// writes on stderr ("wrote report.html") are the README's too.
		stdout, stderr, _ := runSnapview(t, ex.args...)
		outs := []string{fold.ReplaceAllString(stdout, " "), fold.ReplaceAllString(stderr, " ")}
		at := []int{0, 0}
	lines:
		for _, w := range ex.want {
			for _, frag := range strings.Split(w, "...") {
				frag = strings.TrimSpace(fold.ReplaceAllString(frag, " "))
				if frag == "" {
					continue
				}
				found := false
				for i, got := range outs {
					if k := strings.Index(got[at[i]:], frag); k >= 0 {
						at[i] += k + len(frag)
						found = true
						break
					}
				}
				if !found {
					t.Errorf("README.md:%d: snapview %s: the output lacks %q (after what matched before it)",
						ex.line, strings.Join(ex.args, " "), frag)
					break lines
				}
			}
		}
	}
}

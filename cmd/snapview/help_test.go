package main

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHelpTexts checks the files of help/: each is some command's Long or
// Example (or a shared paragraph), ends with one newline, takes in only
// the paragraphs helpText knows, and has no line over the 80 columns of
// the help (TestHelpWidth checks the help as cobra prints it); every
// command has its Long from one.
func TestHelpTexts(t *testing.T) {
	used := map[string]bool{"moment": true, "pools": true, "host": true}
	root := newRootCmd()
	cmds := append(root.Commands(), root)
	for _, c := range cmds {
		if !c.IsAvailableCommand() && c != root || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		name := c.Name()
		if c.Long != helpText(name) {
			t.Errorf("%s: Long is not help/%s.txt", name, name)
		}
		used[name] = true
		if c.Example != "" {
			if c.Example != helpText(name+".examples") {
				t.Errorf("%s: Example is not help/%s.examples.txt", name, name)
			}
			used[name+".examples"] = true
		}
	}
	if len(used) < 20 {
		t.Fatalf("only %d help texts in use", len(used))
	}
	files, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`\{\{[^}]*\}\}`)
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "help/"), ".txt")
		if !used[name] {
			t.Errorf("%s is no command's help", f)
		}
		b, err := helpFiles.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.HasSuffix(s, "\n") || strings.HasSuffix(s, "\n\n") {
			t.Errorf("%s: want one final newline", f)
		}
		for _, m := range marker.FindAllString(s, -1) {
			if m != "{{moment}}" && m != "{{pools}}" && m != "{{host}}" {
				t.Errorf("%s: unknown paragraph %s", f, m)
			}
		}
		for i, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Errorf("%s:%d: line of %d columns: %q", f, i+1, n, line)
			}
		}
	}
}

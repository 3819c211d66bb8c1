package main

import (
	"embed"
	"strings"
)

// helpFiles holds the commands' help texts: help/NAME.txt is cobra's Long
// for command NAME (snapview.txt the root's), help/NAME.examples.txt its
// Example. help/moment.txt (MOMENT, for state --at, leaks --at, slice and
// diff --at and --base-at), help/pools.txt (what summary, segments and
// state print about private pools) and help/host.txt (what summary, state
// and leaks print about pinned host memory) are paragraphs several texts
// take in where they say {{moment}}, {{pools}} and {{host}}. Each file ends with one
// newline the text does not have.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText returns the help text NAME (help/NAME.txt without its final
// newline, its {{moment}}, {{pools}} and {{host}} filled in). A missing file is a
// mistake in the build, found by TestHelpTexts: it panics.
func helpText(name string) string {
	s := readHelp(name)
	s = strings.ReplaceAll(s, "{{moment}}", readHelp("moment"))
	s = strings.ReplaceAll(s, "{{pools}}", readHelp("pools"))
	return strings.ReplaceAll(s, "{{host}}", readHelp("host"))
}

// readHelp returns help/NAME.txt without its final newline.
func readHelp(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("snapview: no help text " + name + ": " + err.Error())
	}
	return strings.TrimSuffix(string(b), "\n")
}

package main

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
	"github.com/snapview/snapview/report/kit"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// addWidthFlag adds --width to root, for every command.
func addWidthFlag(root *cobra.Command) {
	root.PersistentFlags().Int("width", 0, "columns the text views fit, a positive number (under 60 counts as 60; default: $COLUMNS, else the terminal's width, else 120)")
}

// outputWidth returns the width the text views fit: --width, else
// $COLUMNS, else the width of the terminal stdout is, else
// kit.DefaultWidth (120: a pipe or a file).
func outputWidth(flag int, stdout io.Writer, getenv func(string) string) (int, error) {
	if flag < 0 {
		return 0, usageErrorf("--width must be positive, got %d", flag)
	}
	if flag > 0 {
		return flag, nil
	}
	if c, err := strconv.Atoi(getenv("COLUMNS")); err == nil && c > 0 {
		return c, nil
	}
	if f, ok := stdout.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col), nil
		}
	}
	return kit.DefaultWidth, nil
}

// textOutput returns the writer a text view writes to (stdout wrapped to
// the width) and the function that flushes it; with text false (JSON,
// HTML) stdout itself.
func textOutput(cmd *cobra.Command, text bool) (io.Writer, func(error) error, error) {
	stdout := cmd.OutOrStdout()
	if !text {
		return stdout, func(err error) error { return err }, nil
	}
	flag := 0
	if f := cmd.Flag("width"); f != nil {
		flag, _ = strconv.Atoi(f.Value.String())
		if f.Changed && flag == 0 {
			// 0 is the flag's unset value, not a width.
			return nil, nil, usageErrorf("--width must be positive, got 0 (leave it out for $COLUMNS or the terminal's width)")
		}
	}
	width, err := outputWidth(flag, stdout, os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	tw := kit.NewWriter(stdout, width)
	return tw, func(err error) error { return errors.Join(err, tw.Flush()) }, nil
}

// withTextOutput runs run with the writer textOutput returns (the width
// writer for a text view; stdout when text is false) and flushes it.
func withTextOutput(cmd *cobra.Command, text bool, run func(out io.Writer) error) error {
	out, done, err := textOutput(cmd, text)
	if err != nil {
		return err
	}
	return done(run(out))
}

// helpWidth returns the width --help fits, as the text views find
// theirs (--width, $COLUMNS, the terminal's, else 120), MinWidth at least.
func helpWidth(root *cobra.Command) int {
	flag := 0
	if f := root.PersistentFlags().Lookup("width"); f != nil {
		flag, _ = strconv.Atoi(f.Value.String())
	}
	w, err := outputWidth(max(flag, 0), root.OutOrStdout(), os.Getenv)
	if err != nil {
		return kit.DefaultWidth
	}
	return max(w, kit.MinWidth)
}

// wrapShort wraps a command's Short line in --help's list of commands to
// the help's width, continuation lines under its first (pad is the width
// of the names' column, which starts at column 2).
func wrapShort(short string, pad int, root *cobra.Command) string {
	indent := 2 + pad + 1
	avail := max(helpWidth(root)-indent, 20)
	var lines []string
	line := ""
	for _, word := range strings.Fields(short) {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > avail {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return strings.Join(append(lines, line), "\n"+strings.Repeat(" ", indent))
}

// setHelpWidth makes root's --help (and its commands') wrap the list of
// commands and the flags to the width (cobra's template otherwise writes
// each on one line, however long).
func setHelpWidth(root *cobra.Command) {
	cobra.AddTemplateFunc("wrapShort", wrapShort)
	cobra.AddTemplateFunc("wrapFlags", func(fs *pflag.FlagSet, root *cobra.Command) string { return fs.FlagUsagesWrapped(helpWidth(root)) })
	root.SetUsageTemplate(strings.NewReplacer(
		"{{rpad .Name .NamePadding }} {{.Short}}", "{{rpad .Name .NamePadding }} {{wrapShort .Short .NamePadding .Root}}",
		"{{.LocalFlags.FlagUsages", "{{wrapFlags .LocalFlags .Root",
		"{{.InheritedFlags.FlagUsages", "{{wrapFlags .InheritedFlags .Root",
	).Replace(root.UsageTemplate()))
}

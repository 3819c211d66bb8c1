package analysis

import "fmt"

// UsageError is a builder's error for what the command line asks of its
// files that they cannot give: a device or an nvidia-smi GPU a file does
// not have, two files whose devices cannot be paired, a rule a figure
// cannot be judged by. cmd gives it the exit status of a usage error (2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// UsageErrorf returns a *UsageError of the formatted message.
func UsageErrorf(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

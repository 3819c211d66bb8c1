package analysis

import (
	"errors"
	"strings"

	"github.com/snapview/snapview/analyze/steps"
)

// RenameFlag returns err, a moment's error as a view returns it
// (MomentErr: an *AbsentError, a *steps.MomentError, a *UsageError), with
// "--at" in its message replaced by flag ("--base-at"), of the same kind;
// another error becomes a plain one with the message renamed.
func RenameFlag(err error, flag string) error {
	if err == nil || flag == "--at" || !strings.Contains(err.Error(), "--at") {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), "--at", flag)
	var (
		ae *AbsentError
		me *steps.MomentError
		ue *UsageError
	)
	switch {
	case errors.As(err, &ae):
		return &AbsentError{Msg: strings.ReplaceAll(ae.Msg, "--at", flag), Hint: ae.Hint}
	case errors.As(err, &me) && err.Error() == me.Msg:
		c := *me
		c.Msg = strings.ReplaceAll(me.Msg, "--at", flag)
		return &c
	case errors.As(err, &ue):
		return UsageErrorf("%s", msg)
	}
	return errors.New(msg)
}

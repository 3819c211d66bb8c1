package main

import (
	"fmt"
	"os"
)

// errInterrupted is the cause of a command stopped by a signal.
type errInterrupted struct{ sig os.Signal }

func (e errInterrupted) Error() string { return fmt.Sprintf("interrupted (%v)", e.sig) }

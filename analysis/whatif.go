package analysis

import (
	"errors"
	"fmt"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/whatif"
)

// WhatIfChosen is `snapview whatif`'s view: [File.WhatIf] for each device
// dc picks (DeviceChoice.Pick, at most MaxShownDevices) that has trace
// entries, in order. progress, when not nil, is called as each device's
// simulation advances (whatif.Options.Progress, with the device). Its
// notes are the file's warnings, Shown's, and a warning per device whose
// --oom-message reads as another run's (whatif.Result.MessageNote).
// Errors: Pick's; an *UsageError when no device picked has a trace (the
// file holding pinned host memory only, or no trace) or a setting does not
// parse (allocator.ParseError); else WhatIf's.
func (f *File) WhatIfChosen(dc DeviceChoice, opts whatif.Options, progress func(device, done, total int)) ([]*whatif.Result, []Note, error) {
	s := f.Snap
	notes := fileWarnings(s)
	devices, err := dc.Pick(s)
	if err != nil {
		return nil, notes, err
	}
	devices, shown := dc.Shown(devices, "whatif")
	notes = append(notes, shown...)
	var withTrace []int
	for _, d := range devices {
		if f.HasTrace(d) {
			withTrace = append(withTrace, d)
		}
	}
	if len(withTrace) == 0 && f.HasHost() && len(s.Devices()) == 0 {
		return nil, notes, UsageErrorf("no device trace entries to simulate: the file holds pinned host memory only (record_cuda=False), and whatif simulates the CUDA caching allocator's device memory (snapview summary shows the host memory)")
	}
	if len(withTrace) == 0 {
		return nil, notes, UsageErrorf("no trace entries to simulate (record with torch.cuda.memory._record_memory_history() before the first allocation)")
	}
	var out []*whatif.Result
	for _, d := range withTrace {
		o := opts
		if progress != nil {
			o.Progress = func(done, total int) { progress(d, done, total) }
		}
		r, err := f.WhatIf(d, o)
		if err != nil {
			var pe *allocator.ParseError
			if errors.As(err, &pe) {
				return nil, notes, &UsageError{Msg: err.Error()}
			}
			return nil, notes, err
		}
		out = append(out, r)
	}
	for _, r := range out {
		if r.MessageNote != "" {
			// Most likely the message of another run: say so where a
			// script sees it, not only inside the report.
			notes = append(notes, Note{Kind: Warning, Devices: []int{r.Device}, Text: fmt.Sprintf("--oom-message: %s", r.MessageNote)})
		}
	}
	return out, notes, nil
}

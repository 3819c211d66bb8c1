package stacks

import "github.com/snapview/snapview/snapshot"

// FrameJSON is one frame of a stack in the --json views: its file, line
// and function name as the snapshot recorded them.
type FrameJSON struct {
	Filename string `json:"filename"`
	Line     int64  `json:"line"`
	Name     string `json:"name"`
}

// FramesJSON returns the frames of a stack, innermost first, never nil.
func FramesJSON(s *snapshot.Snapshot, id snapshot.StackID) []FrameJSON {
	frames := s.Stack(id)
	out := make([]FrameJSON, 0, len(frames))
	for _, f := range frames {
		fr := s.Frames[f]
		out = append(out, FrameJSON{Filename: fr.Filename, Line: fr.Line, Name: fr.Name})
	}
	return out
}

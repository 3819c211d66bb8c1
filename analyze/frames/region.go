package frames

import (
	"strings"

	"github.com/snapview/snapview/snapshot"
)

// RegionPrefix begins the compile_context of an entry made inside code
// torch.compile generated ("Torch-Compiled Region: 0/1": frame 0, its
// second compilation), as torch/_dynamo names it for
// _record_memory_history(compile_context=True); entries outside any
// region read "N/A".
const RegionPrefix = "Torch-Compiled Region: "

// CompiledRegion returns the compiled region trace entry e was recorded
// in (its compile_context, e.g. "Torch-Compiled Region: 0/1"), or "" when
// it was made outside torch.compile's code or the file has no
// compile_context.
func CompiledRegion(s *snapshot.Snapshot, e *snapshot.TraceEntry) string {
	if int(e.CompileContext) >= len(s.Strings) {
		return ""
	}
	if ctx := s.Strings[e.CompileContext]; strings.HasPrefix(ctx, RegionPrefix) {
		return ctx
	}
	return ""
}

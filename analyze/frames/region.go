package frames

import (
	"path"
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

// InductorFile reports whether fn is a file inductor generated: a .py
// under a torchinductor_* cache directory
// (/tmp/torchinductor_<user>/<xx>/<hash>.py), a temporary path that means
// nothing to a reader.
func InductorFile(fn string) bool {
	return strings.HasSuffix(fn, ".py") && strings.Contains(fn, "torchinductor_")
}

// InductorRegions maps each file inductor generated for s to the compiled
// region its code ran in: the CompiledRegion of the first trace entry
// whose stack has it. nil when no entry carries a region (a file recorded
// without compile_context=True, or before PyTorch 2.6).
func InductorRegions(s *snapshot.Snapshot) map[string]string {
	has := false
	for _, str := range s.Strings {
		if strings.HasPrefix(str, RegionPrefix) {
			has = true
			break
		}
	}
	if !has {
		return nil
	}
	regions := map[string]string{}
	for _, tr := range s.Traces {
		for i := range tr {
			e := &tr[i]
			ctx := CompiledRegion(s, e)
			if ctx == "" {
				continue
			}
			for _, f := range s.Stack(e.Stack) {
				fn := s.Frames[f].Filename
				if _, ok := regions[fn]; !ok && InductorFile(fn) {
					regions[fn] = ctx
				}
			}
		}
	}
	return regions
}

// InductorName is how the stack views name fn, a file inductor generated
// (InductorFile), in place of its temporary path: by the compiled region
// its code ran in (InductorRegions), "Torch-Compiled Region 0/1 (inductor
// cfypgnls….py)"; when no entry ties it to a region ("" region: code run
// outside any compiled region's record_function, such as the backward
// graph autograd calls, or a file recorded without compile_context) by
// what the path tells, "inductor-generated code (ctyg4u6q….py)". The
// start of the file's hash tells two generated files apart.
func InductorName(fn, region string) string {
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(fn, `\`, "/")), ".py")
	if len(base) > 8 {
		base = strings.ToValidUTF8(base[:8], "") + "…"
	}
	if region == "" {
		return "inductor-generated code (" + base + ".py)"
	}
	return strings.Replace(region, ": ", " ", 1) + " (inductor " + base + ".py)"
}

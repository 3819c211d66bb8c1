package stacks

import (
	"path"
	"strings"

	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/snapshot"
)

// regionPrefix is frames.RegionPrefix, the one rule of what names a
// compiled region.
const regionPrefix = frames.RegionPrefix

// inductorRegions maps each file inductor generated for s
// (.../torchinductor_<user>/<xx>/<hash>.py, a temporary path that means
// nothing to a reader) to the compiled region its code ran in: the
// compile_context of the first trace entry whose stack has it. nil when
// no entry carries a region.
func inductorRegions(s *snapshot.Snapshot) map[string]string {
	has := false
	for _, str := range s.Strings {
		if strings.HasPrefix(str, regionPrefix) {
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
			ctx := frames.CompiledRegion(s, e)
			if ctx == "" {
				continue
			}
			for _, f := range s.Stack(e.Stack) {
				fn := s.Frames[f].Filename
				if isInductorFile(fn) {
					if _, ok := regions[fn]; !ok {
						regions[fn] = ctx
					}
				}
			}
		}
	}
	return regions
}

// isInductorFile reports whether fn is a file inductor generated: a .py
// under a torchinductor_* cache directory.
func isInductorFile(fn string) bool {
	return strings.HasSuffix(fn, ".py") && strings.Contains(fn, "torchinductor_")
}

// regionFilename is how a generated file is shown: its region and the
// start of its hash, "Torch-Compiled Region 0/1 (inductor cfypgnls…py)".
func regionFilename(fn, region string) string {
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(fn, `\`, "/")), ".py")
	if len(base) > 8 {
		base = base[:8] + "…"
	}
	return strings.Replace(region, ": ", " ", 1) + " (inductor " + base + ".py)"
}

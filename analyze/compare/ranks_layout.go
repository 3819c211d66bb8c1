package compare

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// RankPath is what a snapshot file's path says about its place in a
// distributed run, as the frameworks that dump one file per rank name them:
//
//   - torchtitan: memory_snapshot/iteration_{step}[_exit]/rank{rank}_memory_snapshot.pickle
//     (torchtitan/tools/profiling.py), and the newer
//     step_{step:012d}/{rank:06d}_step_{step}[_exit].pickle;
//   - Megatron-Bridge: memory_trace_{rank}.pickle;
//   - lmms-engine and hand-made names: rank{rank}, rank_{rank}, rank-{rank}
//     anywhere in the base name, with a pid or a timestamp beside it;
//   - a world size where the name gives one: rank3_of_8, rank3of8,
//     world8, world_size8, ws8.
type RankPath struct {
	Rank    int
	HasRank bool
	// Step is the training step (iteration) the file was dumped at; Exit
	// is true for a dump made when the run stopped (torchtitan's _exit
	// dumps, on an OOM).
	Step    int
	HasStep bool
	Exit    bool
	// World is the number of ranks the name gives, 0 when it gives none.
	World int
}

var (
	// the newer torchtitan base name: 000003_step_10.pickle
	titanRankRE = regexp.MustCompile(`^(\d{6})_step_(\d+)(_exit)?\.`)
	// Megatron-Bridge: memory_trace_3.pickle
	megatronRankRE = regexp.MustCompile(`(?i)memory_trace_(\d+)\.`)
	// a step or iteration in a directory or base name: iteration_10,
	// step_000000000010, step10
	stepRE  = regexp.MustCompile(`(?i)(?:^|[^a-z])(?:iteration|iter|step)[-_]?(\d+)`)
	worldRE = regexp.MustCompile(`(?i)(?:rank[-_]?\d+[-_]?of[-_]?|world[-_]?(?:size)?[-_]?|(?:^|[^a-z])ws[-_]?)(\d+)`)
)

// ParseRankPath reads rank, step and world size from rel, a snapshot
// file's path relative to the directory given to ranks (its directories
// count: torchtitan puts the step there). A base name's rank wins over a
// directory's; the step is the last one named on the path.
func ParseRankPath(rel string) RankPath {
	var p RankPath
	rel = filepath.ToSlash(rel)
	base := rel[strings.LastIndex(rel, "/")+1:]
	if n, ok := RankNumber(base); ok {
		p.Rank, p.HasRank = n, true
	} else {
		// a rank in a directory's name: rank3/snapshot.pickle
		parts := strings.Split(rel, "/")
		for i := len(parts) - 2; i >= 0 && !p.HasRank; i-- {
			if m := rankNumberRE.FindAllStringSubmatch(parts[i], -1); m != nil {
				p.Rank, _ = strconv.Atoi(m[len(m)-1][1])
				p.HasRank = true
			}
		}
	}
	for _, part := range strings.Split(rel, "/") {
		if m := stepRE.FindAllStringSubmatch(part, -1); m != nil {
			if n, err := strconv.Atoi(m[len(m)-1][1]); err == nil {
				p.Step, p.HasStep = n, true
			}
		}
		if strings.Contains(strings.ToLower(part), "_exit") {
			p.Exit = true
		}
	}
	if m := worldRE.FindStringSubmatch(base); m != nil {
		p.World, _ = strconv.Atoi(m[1])
	}
	return p
}

// MissingRanks returns the ranks of 0..world-1 that have is not among
// (world > 0), or, when world is 0, those below the highest rank given:
// the ranks a directory's file names say should be there and are not.
func MissingRanks(have []int, world int) []int {
	top := world
	if top == 0 {
		for _, r := range have {
			top = max(top, r+1)
		}
	}
	seen := make(map[int]bool, len(have))
	for _, r := range have {
		seen[r] = true
	}
	var out []int
	for r := range top {
		if !seen[r] {
			out = append(out, r)
		}
	}
	return out
}

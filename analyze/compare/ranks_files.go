package compare

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/snapview/snapview/internal/units"
)

// ErrNoRankFiles is wrapped by RankFiles' error for a directory that holds
// no snapshot file: the command line named the wrong directory.
var ErrNoRankFiles = errors.New("no snapshot files in the directory or below it (.pickle, .pkl, .json, .gz, .xz)")

// RankFiles expands the arguments of `ranks`: a single directory is
// replaced by its snapshot files and those of its subdirectories
// (torchtitan writes one directory per step), in CompareNatural order; dir
// is that directory ("" for a list of files, returned as it is). The
// errors are filepath.WalkDir's, and "DIR: " ErrNoRankFiles for a
// directory without a snapshot file.
func RankFiles(args []string) (files []string, dir string, err error) {
	if len(args) != 1 {
		return args, "", nil
	}
	st, err := os.Stat(args[0])
	if err != nil || !st.IsDir() {
		return args, "", nil
	}
	err = filepath.WalkDir(args[0], func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := strings.ToLower(e.Name())
		if e.Type().IsRegular() && (strings.HasSuffix(name, ".pickle") || strings.HasSuffix(name, ".pkl") ||
			strings.HasSuffix(name, ".json") && !strings.HasSuffix(name, "meta.json") && !strings.HasSuffix(name, "stats.json") &&
				!strings.HasSuffix(name, "cap_probe.json") && !strings.HasSuffix(name, "launch.json") ||
			strings.HasSuffix(name, ".gz") || strings.HasSuffix(name, ".xz")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if len(files) == 0 {
		return nil, "", fmt.Errorf("%s: %w", args[0], ErrNoRankFiles)
	}
	slices.SortFunc(files, CompareNatural)
	return files, args[0], nil
}

// RankGroup is the files of one step of a directory laid out by step
// (torchtitan's iteration_N or step_N directories), or all the files.
type RankGroup struct {
	Step    int
	HasStep bool
	// Exit is true for the dumps made when the run stopped.
	Exit  bool
	Files []string
	// Paths are what ParseRankPath read from each of Files.
	Paths []RankPath
}

// RankStep is the ranks of one step (one RankGroup) compared among
// themselves.
type RankStep struct {
	Group RankGroup
	Ranks *Ranks
}

// GroupRankFiles reads each file's rank and step from its path below dir
// (ParseRankPath) and groups the files by step, in step order (an _exit
// dump after the regular one of its step). Files without a step share one
// group, after the others; so do all files when fewer than two steps are
// named.
func GroupRankFiles(dir string, files []string) []RankGroup {
	type key struct {
		step int
		has  bool
		exit bool
	}
	groups := map[key]*RankGroup{}
	var keys []key
	for _, f := range files {
		rel := f
		if dir != "" {
			if r, err := filepath.Rel(dir, f); err == nil {
				rel = r
			}
		}
		p := ParseRankPath(rel)
		k := key{p.Step, p.HasStep, p.Exit}
		g := groups[k]
		if g == nil {
			g = &RankGroup{Step: p.Step, HasStep: p.HasStep, Exit: p.Exit}
			groups[k] = g
			keys = append(keys, k)
		}
		g.Files = append(g.Files, f)
		g.Paths = append(g.Paths, p)
	}
	if len(keys) < 2 {
		all := RankGroup{Files: files}
		for _, k := range keys {
			all.Step, all.HasStep, all.Exit = k.step, k.has, k.exit
			all.Paths = append(all.Paths, groups[k].Paths...)
		}
		return []RankGroup{all}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(btoi(!a.has), btoi(!b.has)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.step, b.step); c != 0 {
			return c
		}
		return cmp.Compare(btoi(a.exit), btoi(b.exit))
	})
	out := make([]RankGroup, len(keys))
	for i, k := range keys {
		out[i] = *groups[k]
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Name is how notes and headers name the group: "step 10", "step 12
// (exit dump)", "files without a step".
func (g *RankGroup) Name() string {
	switch {
	case !g.HasStep:
		return "files without a step"
	case g.Exit:
		return fmt.Sprintf("step %d (exit dump)", g.Step)
	}
	return fmt.Sprintf("step %d", g.Step)
}

// MissingNote says which ranks of the group's world are not there: of the
// world size the names give, else below the highest rank named; or that
// only one rank's file is there. "" when nothing can be said.
func (g *RankGroup) MissingNote() string {
	var have []int
	world := 0
	for _, p := range g.Paths {
		if p.HasRank {
			have = append(have, p.Rank)
		}
		world = max(world, p.World)
	}
	if len(have) == 0 {
		return ""
	}
	slices.Sort(have)
	have = slices.Compact(have)
	missing := MissingRanks(have, world)
	switch {
	case len(missing) > 0 && world > 0:
		return fmt.Sprintf("%s of a world of %d (the file names give its size) missing: %s", units.Count(len(missing), "rank", "ranks"), world, units.IntList(missing))
	case len(missing) > 0:
		return fmt.Sprintf("%s below the highest rank named (%d) missing: %s", units.Count(len(missing), "rank", "ranks"), have[len(have)-1], units.IntList(missing))
	case len(have) == 1 && world == 0:
		return fmt.Sprintf("only rank %d's file is here; the names do not tell the world size, so the other ranks cannot be compared", have[0])
	}
	return ""
}

// CompareNatural orders file names as a person counts: runs of digits by
// their value, so that rank2 comes before rank10.
func CompareNatural(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitRun is the length of the run of ASCII digits s starts with.
func digitRun(s string) int {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	return n
}

// EstimateModel guesses the bytes a snapshot file of size n bytes on disk
// costs while loaded and replayed: about 1.5 times a pickle's size, 20
// times a compressed file's (which decompresses to several times its
// size). `ranks` loads files in parallel while their estimates fit in its
// memory budget.
func EstimateModel(path string, n int64) int64 {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".xz", ".gz":
		return 20 * n
	}
	return n + n/2
}

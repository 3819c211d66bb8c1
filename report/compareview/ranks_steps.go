package compareview

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/internal/units"
)

// WriteRankSteps writes `snapview ranks` of one step or several: one
// step's comparison as WriteRanks writes it; several (a directory of one
// directory per step) step after step, each under a "== step N: K files
// ==" line and its missing-rank note.
func WriteRankSteps(w io.Writer, steps []compare.RankStep, o RanksOptions) error {
	if len(steps) == 1 {
		return WriteRanks(w, steps[0].Ranks, o)
	}
	for i, st := range steps {
		g := st.Group
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(w, "== %s: %s ==\n", g.Name(), units.Count(len(g.Files), "file", "files")); err != nil {
			return err
		}
		if note := g.MissingNote(); note != "" {
			if _, err := fmt.Fprintf(w, "note: %s\n", note); err != nil {
				return err
			}
		}
		if err := WriteRanks(w, st.Ranks, o); err != nil {
			return err
		}
	}
	return nil
}

// WriteRankStepsJSON writes `snapview ranks --json` of one step or
// several: one step's comparison as WriteRanksJSON writes it; several as
// {"steps": [{"step", "exit", "files", "missing_note", "comparison"}]}.
func WriteRankStepsJSON(w io.Writer, steps []compare.RankStep, o RanksOptions) error {
	if len(steps) == 1 {
		return WriteRanksJSON(w, steps[0].Ranks, o)
	}
	var b strings.Builder
	b.WriteString("{\"steps\": [")
	for i, st := range steps {
		g := st.Group
		var one strings.Builder
		if err := WriteRanksJSON(&one, st.Ranks, o); err != nil {
			return err
		}
		step := "null"
		if g.HasStep {
			step = strconv.Itoa(g.Step)
		}
		fj, _ := json.Marshal(g.Files)
		nj, _ := json.Marshal(g.MissingNote())
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s\n {\"step\": %s, \"exit\": %t, \"files\": %s, \"missing_note\": %s, \"comparison\": %s}",
			sep, step, g.Exit, fj, nj, strings.TrimSpace(one.String()))
	}
	b.WriteString("\n]}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

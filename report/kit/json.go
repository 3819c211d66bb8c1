package kit

import (
	"encoding/json"
	"io"

	"github.com/snapview/snapview/snapshot"
)

// WriteJSON writes v as every --json view does: indented by two spaces,
// with <, > and & escaped, and a newline at the end.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// CountJSON is a count of one name (a trace action, a key) in JSON.
type CountJSON struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// CountsJSON returns cs as JSON, [] (not null) when empty.
func CountsJSON(cs []snapshot.Count) []CountJSON {
	out := make([]CountJSON, len(cs))
	for i, c := range cs {
		out[i] = CountJSON{Name: c.Name, Count: c.Count}
	}
	return out
}

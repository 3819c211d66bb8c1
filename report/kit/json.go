package kit

import (
	"encoding/json"
	"io"
)

// WriteJSON writes v as every --json view does: indented by two spaces,
// with <, > and & escaped, and a newline at the end.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

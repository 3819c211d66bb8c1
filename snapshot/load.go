package snapshot

import (
	"errors"
	"io"
)

// Load reads and decodes the snapshot file at path. See Decode.
func Load(path string) (*Snapshot, error) {
	return nil, errors.New("not implemented")
}

// Decode reads a snapshot from r.
func Decode(r io.Reader) (*Snapshot, error) {
	return nil, errors.New("not implemented")
}

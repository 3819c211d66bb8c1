package snapshot

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestDecodeNamed: a snapshot decodes with the bytes read counted; a bad
// one is a *DecodeError naming the name given; a cancelled context stops
// the decode with its own error.
func TestDecodeNamed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	s, n, err := DecodeNamed(context.Background(), "x", bytes.NewReader(b), Limits{})
	if err != nil || s == nil || n != int64(len(b)) {
		t.Errorf("DecodeNamed: %v, %d bytes read of %d", err, n, len(b))
	}
	_, _, err = DecodeNamed(context.Background(), "<stdin>", bytes.NewReader(b[:20]), Limits{})
	var de *DecodeError
	if !errors.As(err, &de) || de.Path != "<stdin>" {
		t.Errorf("truncated: %v, want a *DecodeError naming <stdin>", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := DecodeNamed(ctx, "x", bytes.NewReader(b), Limits{}); err != context.Canceled {
		t.Errorf("cancelled: %v, want context.Canceled as it is", err)
	}
}

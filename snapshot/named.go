package snapshot

import (
	"context"
	"errors"
	"io"
	"os"
)

// DecodeNamed decodes the snapshot r reads, within the limits lim, and
// returns it with the number of bytes read from r. name is the file as
// errors name it (a path, or "<stdin>"): a decoding error is a
// *DecodeError whose Path is name. The decode stops between two reads once
// ctx is cancelled (a signal), and a decode that fails once ctx is
// cancelled returns ctx's error as it is. r's
// Stat, where it has one (a file, also one redirected to stdin), is
// offered to the decoder to size its buffers from.
func DecodeNamed(ctx context.Context, name string, r io.Reader, lim Limits) (*Snapshot, int64, error) {
	cr := &ctxCounter{ctx: ctx, r: r}
	s, err := DecodeLimits(cr, lim)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// The decoder may say what a cut read looks like (an empty
			// file): the cause is the cancellation.
			return nil, cr.n, cerr
		}
		var de *DecodeError
		if !errors.As(err, &de) {
			de = &DecodeError{Err: err}
		}
		de.Path = name
		return nil, cr.n, de
	}
	return s, cr.n, nil
}

// ctxCounter reads r until ctx is cancelled, then fails with ctx's error,
// and counts the bytes read. It offers r's Stat.
type ctxCounter struct {
	ctx context.Context
	r   io.Reader
	n   int64
}

func (c *ctxCounter) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *ctxCounter) Stat() (os.FileInfo, error) {
	if f, ok := c.r.(interface{ Stat() (os.FileInfo, error) }); ok {
		return f.Stat()
	}
	return nil, errors.ErrUnsupported
}

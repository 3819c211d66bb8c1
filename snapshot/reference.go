package snapshot

import (
	"bufio"
	"fmt"
	"io"
	"math/big"

	gopickle "github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
	"github.com/snapview/snapview/snapshot/pickle"
)

// DecodeReference decodes an uncompressed pickle with
// github.com/nlpodyssey/gopickle, the generic reference decoder, and
// converts its object tree with the same rules as Decode. It is slower and
// needs several times the file's size in memory; it exists to check the
// fast path (differential tests and fuzzing) and for benchmarks.
func DecodeReference(r io.Reader) (s *Snapshot, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, &DecodeError{Err: fmt.Errorf("gopickle fault: %v", p)}
		}
	}()
	br := bufio.NewReaderSize(r, readBuffer)
	u := gopickle.NewUnpickler(br)
	u.FindClass = func(module, name string) (any, error) {
		return nil, fmt.Errorf("not a PyTorch memory snapshot: the pickle refers to the Python class %s.%s: %w", module, name, errNotSnapshot)
	}
	obj, err := u.Load()
	if err != nil {
		return nil, &DecodeError{Err: err}
	}
	c := newConverter()
	g := &fromGopickle{pool: c.pool, seen: map[any]pickle.Value{}}
	root, err := g.val(obj, 0)
	if err != nil {
		return nil, &DecodeError{Err: err}
	}
	c.root(root)
	if c.err != nil {
		return nil, &DecodeError{Err: c.err}
	}
	c.finish()
	if c.err != nil {
		return nil, &DecodeError{Err: c.err}
	}
	c.s.Format = Format{Encoding: "pickle"}
	return c.s, nil
}

// fromGopickle translates gopickle's values into this package's, keeping
// shared objects shared.
type fromGopickle struct {
	pool *pickle.Pool
	seen map[any]pickle.Value
}

func (g *fromGopickle) val(x any, depth int) (pickle.Value, error) {
	if depth > 10000 {
		return pickle.Value{}, fmt.Errorf("objects nested over 10000 deep: %w", errNotSnapshot)
	}
	switch t := x.(type) {
	case nil:
		return pickle.Value{X: pickle.None{}}, nil
	case bool:
		return pickle.Value{X: pickle.Bool(t)}, nil
	case int:
		return pickle.Value{N: int64(t)}, nil
	case *big.Int:
		if t.IsInt64() {
			return pickle.Value{N: t.Int64()}, nil
		}
		v, _ := pickle.ParseWideInt(t.String())
		return v, nil
	case float64:
		return pickle.Value{X: t}, nil
	case string:
		return pickle.Value{N: g.pool.Add(t), X: pickle.Str{}}, nil
	case []byte:
		return pickle.Value{X: t}, nil
	case *types.List:
		if v, ok := g.seen[t]; ok {
			return v, nil
		}
		l := pickle.NewList()
		v := pickle.Value{X: l}
		g.seen[t] = v
		for _, e := range *t {
			ev, err := g.val(e, depth+1)
			if err != nil {
				return pickle.Value{}, err
			}
			l.Items = append(l.Items, ev)
		}
		return v, nil
	case *types.Tuple:
		tp := &pickle.Tuple{}
		for _, e := range *t {
			ev, err := g.val(e, depth+1)
			if err != nil {
				return pickle.Value{}, err
			}
			tp.Items = append(tp.Items, ev)
		}
		return pickle.Value{X: tp}, nil
	case *types.Dict:
		if v, ok := g.seen[t]; ok {
			return v, nil
		}
		d := pickle.NewDict()
		v := pickle.Value{X: d}
		g.seen[t] = v
		for _, e := range *t {
			k, err := g.val(e.Key, depth+1)
			if err != nil {
				return pickle.Value{}, err
			}
			ev, err := g.val(e.Value, depth+1)
			if err != nil {
				return pickle.Value{}, err
			}
			d.KV = append(d.KV, k, ev)
		}
		return v, nil
	}
	return pickle.Value{}, fmt.Errorf("unexpected %T in the pickle: %w", x, errNotSnapshot)
}

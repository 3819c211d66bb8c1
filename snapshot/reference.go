package snapshot

import (
	"bufio"
	"fmt"
	"io"
	"math/big"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
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
	u := pickle.NewUnpickler(br)
	u.FindClass = func(module, name string) (any, error) {
		return nil, fmt.Errorf("not a PyTorch memory snapshot: the pickle refers to the Python class %s.%s: %w", module, name, errNotSnapshot)
	}
	obj, err := u.Load()
	if err != nil {
		return nil, &DecodeError{Err: err}
	}
	c := newConverter()
	g := &fromGopickle{pool: c.pool, seen: map[any]val{}}
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
	pool *strPool
	seen map[any]val
}

func (g *fromGopickle) val(x any, depth int) (val, error) {
	if depth > 10000 {
		return val{}, fmt.Errorf("objects nested over 10000 deep: %w", errNotSnapshot)
	}
	switch t := x.(type) {
	case nil:
		return val{x: noneT{}}, nil
	case bool:
		return val{x: boolT(t)}, nil
	case int:
		return val{n: int64(t)}, nil
	case *big.Int:
		if t.IsInt64() {
			return val{n: t.Int64()}, nil
		}
		v, _ := parseWideInt(t.String())
		return v, nil
	case float64:
		return val{x: t}, nil
	case string:
		return val{n: g.pool.addString(t), x: strRef{}}, nil
	case []byte:
		return val{x: t}, nil
	case *types.List:
		if v, ok := g.seen[t]; ok {
			return v, nil
		}
		l := &plist{memo: -1}
		v := val{x: l}
		g.seen[t] = v
		for _, e := range *t {
			ev, err := g.val(e, depth+1)
			if err != nil {
				return val{}, err
			}
			l.items = append(l.items, ev)
		}
		return v, nil
	case *types.Tuple:
		tp := &ptuple{}
		for _, e := range *t {
			ev, err := g.val(e, depth+1)
			if err != nil {
				return val{}, err
			}
			tp.items = append(tp.items, ev)
		}
		return val{x: tp}, nil
	case *types.Dict:
		if v, ok := g.seen[t]; ok {
			return v, nil
		}
		d := &pdict{memo: -1}
		v := val{x: d}
		g.seen[t] = v
		for _, e := range *t {
			k, err := g.val(e.Key, depth+1)
			if err != nil {
				return val{}, err
			}
			ev, err := g.val(e.Value, depth+1)
			if err != nil {
				return val{}, err
			}
			d.kv = append(d.kv, k, ev)
		}
		return v, nil
	}
	return val{}, fmt.Errorf("unexpected %T in the pickle: %w", x, errNotSnapshot)
}

package pickle

// Pool interns every string read from the file, so that a Str is an index
// and a string the file repeats (a frame's file name) costs one copy.
type Pool struct {
	// Strs are the strings by index (read only).
	Strs []string
	idx  map[string]int64
}

// NewPool returns an empty pool.
func NewPool() *Pool {
	return &Pool{idx: map[string]int64{}}
}

// AddBytes interns b and returns its Str value; it allocates only for a
// string not seen before.
func (p *Pool) AddBytes(b []byte) Value {
	if i, ok := p.idx[string(b)]; ok {
		return Value{N: i, X: Str{}}
	}
	return Value{N: p.Add(string(b)), X: Str{}}
}

// Add interns s and returns its index.
func (p *Pool) Add(s string) int64 {
	if i, ok := p.idx[s]; ok {
		return i
	}
	i := int64(len(p.Strs))
	p.Strs = append(p.Strs, s)
	p.idx[s] = i
	return i
}

// Text returns the string held by v, if v is a str.
func (p *Pool) Text(v Value) (string, bool) {
	if _, ok := v.X.(Str); ok {
		return p.Strs[v.N], true
	}
	return "", false
}

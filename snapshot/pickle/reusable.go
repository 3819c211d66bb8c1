package pickle

// reusable is a table whose released elements are reused, so that it stays
// as large as what is live at once: the memo's values (machine.objs) and
// its wide handles (machine.wide).
type reusable[T any] struct {
	items []T
	free  []uint32
}

// put stores v and returns its index; grew is true when the table grew
// (the element is new memory, not a released one).
func (r *reusable[T]) put(v T) (i uint32, grew bool) {
	if n := len(r.free); n > 0 {
		i = r.free[n-1]
		r.free = r.free[:n-1]
		r.items[i] = v
		return i, false
	}
	r.items = append(r.items, v)
	return uint32(len(r.items) - 1), true
}

// release clears element i and frees it for reuse.
func (r *reusable[T]) release(i uint32) {
	var zero T
	r.items[i] = zero
	r.free = append(r.free, i)
}

package pickle

// Records are the bulk of a file (a memory snapshot's trace entries:
// millions of small dicts). To keep memory in proportion to what the
// consumer keeps rather than to the pickle's object tree, a list whose
// first item is a record dict (it has Config.RecordKey) is a record list:
// each dict appended to it goes to the Converter at once, and the dict is
// recycled. The memo keeps an Item (the list and the record's index), so
// the pickle's semantics are kept even if a file refers to the same record
// twice.

// A Converter is the consumer of a Machine: it takes the records as they
// are appended, and converts dicts and lists to numbers of its own, which
// the memo then holds in their place (ReplaceMemo).
type Converter interface {
	// AppendDict converts record dict d, appended to record list l.
	AppendDict(l *List, d *Dict)
	// AppendRecord appends again record i of list from (a memo reference
	// to a record the Converter took) to record list l.
	AppendRecord(l, from *List, i int64)
	// Reject notes v, appended to record list l, which is not a record
	// dict; n is how many records l has.
	Reject(l *List, v Value, n int)
	// Reopen appends to l.Items the items of list l, which the Converter
	// converted (l.Ref > 0), as values of its own, when the file appends
	// more items to l: a list of over a thousand items comes in several
	// APPENDS.
	Reopen(l *List)
	// Forget drops what the Converter keeps by the pointer of d: d is
	// recycled.
	Forget(d *Dict)
	// BatchConverter is the part the batch reader (fast.go) calls.
	BatchConverter
}

// isRecord reports whether v is a dict with the record key, or a record.
func (m *Machine) isRecord(v Value) bool {
	switch x := v.X.(type) {
	case *Dict:
		for i := 0; i+1 < len(x.KV); i += 2 {
			if _, ok := x.KV[i].X.(Str); ok && x.KV[i].N == m.recordKey {
				return true
			}
		}
	case *Item:
		return true
	}
	return false
}

// Append appends items to list l as APPEND and APPENDS do, handing the
// records of a record list to the Converter. A consumer that builds values
// itself (from JSON) appends through it, so that its records are converted
// as they come.
func (m *Machine) Append(l *List, items []Value) {
	if len(items) > 0 && len(l.Items) == 0 && l.nrec == 0 && !l.records && m.conv != nil {
		l.records = m.isRecord(items[0])
	}
	if !l.records {
		if l.Ref > 0 {
			// More items after the list was converted: have them
			// back, as the Converter's references.
			m.conv.Reopen(l)
			l.Ref = 0
			m.ReplaceMemo(l.memo, Value{X: l})
		}
		c := cap(l.Items)
		l.Items = append(l.Items, items...)
		if cap(l.Items) != c {
			m.budget.Spend(int64(cap(l.Items)-c) * ValueBytes)
		}
		return
	}
	for _, it := range items {
		switch x := it.X.(type) {
		case *Dict:
			if m.isRecord(it) {
				m.conv.AppendDict(l, x)
				l.nrec++
				m.ReplaceMemo(x.memo, Value{N: int64(l.nrec - 1), X: (*Item)(l)})
				m.RecycleDict(x)
				continue
			}
		case *Item:
			m.conv.AppendRecord(l, (*List)(x), it.N)
			l.nrec++
			continue
		}
		m.conv.Reject(l, it, l.nrec)
	}
}

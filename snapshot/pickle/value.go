package pickle

// Value is one pickle value. Ints live in N with X == nil; every other
// value is in X: None, Bool, float64, Str (N indexes the Pool), []byte,
// *WideInt, *List, *Dict, *Tuple, *Item (N is the record's index in its
// list), DictRef or ListRef (N is the consumer's number), or the machine's
// own mark.
type Value struct {
	N int64
	X any
}

// None is Python's None.
type None struct{}

// Bool is a Python bool.
type Bool bool

// Str is a str value: Value.N indexes the Pool. Strings are pooled as they
// are read, so a string the file repeats costs one copy.
type Str struct{}

// markT is MARK on the stack.
type markT struct{}

// List is a Python list.
type List struct {
	// Items are the list's items; empty in a record list (see Converter)
	// and in a list the consumer converted (Ref > 0).
	Items []Value
	// Ref is 1 + the number the consumer converted this list to, its
	// ListRef (0: not converted); the consumer releases Items then.
	Ref int64
	// Tag is the consumer's own, for a record list: which of its tables
	// holds the records (0 until it says).
	Tag int32

	memo int64 // memo index of this list, or -1
	evID int32 // 1 + index in Machine.evLists, 0 when not yet listed
	// records is set when the first item appended was a record (a dict
	// with the record key): its dicts go to the Converter as appended;
	// nrec counts them.
	records bool
	nrec    int
	// refs and recycled: as for Dict.
	refs     int32
	recycled bool
}

// Records reports whether l is a record list: its first item was a record
// dict, and the Converter took each item as it was appended.
func (l *List) Records() bool { return l.records }

// Item is a List seen through one of its records: Value.N is the record's
// index among the list's records (a memo reference to a record dict the
// Converter took).
type Item List

// DictRef is the memo value of a dict the consumer converted
// (Machine.ReplaceMemo): Value.N holds the consumer's number for it, and
// the dict itself is let go.
type DictRef struct{}

// ListRef is DictRef for a list.
type ListRef struct{}

// Dict is a Python dict, its keys and values in the order they came.
type Dict struct {
	KV   []Value // key, value, key, value, ...
	memo int64   // memo index of this dict, or -1
	// refs counts the references made by BINGET and DUP beyond the one
	// that created the dict. A converted dict is released once per
	// reference and recycled at the last release; references that are
	// never released (from non-record containers) keep it alive.
	refs     int32
	recycled bool
}

// Memo is the memo index of d, or -1.
func (d *Dict) Memo() int64 { return d.memo }

// Memo is the memo index of l, or -1.
func (l *List) Memo() int64 { return l.memo }

// NewDict returns an empty dict that is in no memo (for a consumer that
// builds values itself, from JSON or another pickle decoder).
func NewDict() *Dict { return &Dict{memo: -1} }

// NewList is NewDict for a list.
func NewList() *List { return &List{memo: -1} }

// ValueBytes is the size of a Value, charged to the budget for each slot
// of a list, dict or tuple.
const ValueBytes = 24

// Tuple is a Python tuple.
type Tuple struct {
	Items []Value
}

// TypeName names a value's Python type for error messages.
func (v Value) TypeName() string {
	switch v.X.(type) {
	case nil, *WideInt:
		return "int"
	case None:
		return "None"
	case markT:
		return "mark"
	case Bool:
		return "bool"
	case float64:
		return "float"
	case Str:
		return "str"
	case []byte:
		return "bytes"
	case *List, ListRef:
		return "list"
	case *Dict, *Item, DictRef:
		return "dict"
	case *Tuple:
		return "tuple"
	}
	return "object"
}

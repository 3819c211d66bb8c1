package pickle

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// textConv is a Converter that keeps each record as text ("{a=alloc,
// f=[{x=foo}],n=7}", keys sorted), from the generic machine's dicts and
// from the batch reader's Records alike.
type textConv struct {
	pool         *Pool
	out, batch   []string
	dicts, lists []string
}

var testSchema = &Schema{
	Keys: []Key{1: {"a", KindStr}, 2: {"n", KindInt}, 3: {"f", KindList}},
	Sub:  []Key{1: {"x", KindStr}, 2: {"line", KindInt}, 3: {"skip", KindNone}},
}

func (c *textConv) text(v Value) string {
	switch x := v.X.(type) {
	case nil:
		return strconv.FormatInt(v.N, 10)
	case Str:
		return c.pool.Strs[v.N]
	case None:
		return "None"
	case DictRef:
		return c.dicts[v.N]
	case ListRef:
		return c.lists[v.N]
	case *Dict:
		var kv []string
		for i := 0; i+1 < len(x.KV); i += 2 {
			if k := c.text(x.KV[i]); k != "skip" {
				kv = append(kv, k+"="+c.text(x.KV[i+1]))
			}
		}
		slices.Sort(kv)
		return "{" + strings.Join(kv, ",") + "}"
	case *List:
		var items []string
		for _, it := range x.Items {
			items = append(items, c.text(it))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	return v.TypeName()
}

func (c *textConv) AppendDict(l *List, d *Dict)         { c.out = append(c.out, c.text(Value{X: d})) }
func (c *textConv) AppendRecord(l, from *List, i int64) { c.out = append(c.out, "again") }
func (c *textConv) Reject(l *List, v Value, n int)      { c.out = append(c.out, "reject "+v.TypeName()) }
func (c *textConv) Reopen(l *List)                      {}
func (c *textConv) Forget(d *Dict)                      {}
func (c *textConv) Old(d *Dict, l *List)                {}

func (c *textConv) Str(slot int, s int64) (int64, bool) { return s, c.pool.Strs[s] != "unknown" }

func (c *textConv) Dict(r Record) int64 {
	var kv []string
	for slot, k := range testSchema.Sub {
		if slot == 0 || r.Has&(1<<slot) == 0 {
			continue
		}
		v := strconv.FormatInt(r.V[slot], 10)
		if k.Kind == KindStr {
			v = "None"
			if r.V[slot] >= 0 {
				v = c.pool.Strs[r.V[slot]]
			}
		}
		kv = append(kv, k.Name+"="+v)
	}
	slices.Sort(kv)
	c.dicts = append(c.dicts, "{"+strings.Join(kv, ",")+"}")
	return int64(len(c.dicts) - 1)
}

func (c *textConv) List(refs []int64) int64 {
	var items []string
	for _, r := range refs {
		items = append(items, c.dicts[r])
	}
	c.lists = append(c.lists, "["+strings.Join(items, ",")+"]")
	return int64(len(c.lists) - 1)
}

func (c *textConv) Record(i int, r *Record) {
	kv := []string{"a=" + c.pool.Strs[r.V[1]]}
	if r.Has&(1<<3) != 0 {
		kv = append(kv, "f="+c.lists[r.V[3]])
	}
	if r.Has&(1<<2) != 0 {
		kv = append(kv, "n="+strconv.FormatInt(r.V[2], 10))
	}
	c.batch = append(c.batch[:i], "{"+strings.Join(kv, ",")+"}")
}

func (c *textConv) Batch(l *List, n int, counts *[MaxSlots]int) {
	c.out = append(c.out, c.batch[:n]...)
}

// runText runs data with and without the batch reader and returns the
// records each converted and the batches the reader took.
func runText(t *testing.T, data []byte, schema *Schema) ([]string, int) {
	t.Helper()
	c := &textConv{pool: NewPool()}
	m := New(bytes.NewReader(data), Config{MaxString: 1 << 20, MaxStack: 1 << 20,
		Budget: NewBudget(1<<20, func() int64 { return int64(len(data)) }), Pool: c.pool,
		RecordKey: "a", Converter: c, Schema: schema})
	if _, err := m.Run(); err != nil {
		t.Fatal(err)
	}
	return c.out, m.Stats().Batches
}

// TestRecords: a list of records (keys memoised and referenced, a nested
// dict referenced from a second list, a FRAME opcode between values) gives
// the same records read by the generic machine and by the batch reader,
// which reads it in one batch; a record of an unknown value leaves its
// batch to the generic machine.
func TestRecords(t *testing.T) {
	head := "\x80\x04]\x94("
	rec1 := "}\x94(\x8c\x01a\x94\x8c\x05alloc\x94\x8c\x01n\x94K\x07\x8c\x01f\x94]\x94(}\x94(\x8c\x01x\x94\x8c\x03foo\x94" +
		"\x8c\x04line\x94J\xff\xff\xff\xff\x8c\x04skip\x94Nue" + "u"
	rec2 := "}\x94(h\x02h\x03h\x04M\x00\x01h\x05]\x94(h\x07}\x94(h\x08N\x95\x00\x00\x00\x00\x00\x00\x00\x00h\x0aK\x02ueu"
	for _, tt := range []struct {
		name    string
		data    string
		want    []string
		batches int
	}{
		{"usual", head + rec1 + rec2 + "e.", []string{
			"{a=alloc,f=[{line=-1,x=foo}],n=7}",
			"{a=alloc,f=[{line=-1,x=foo},{line=2,x=None}],n=256}",
		}, 1},
		{"unknown value", head + rec1 + "}(h\x02\x8c\x07unknownu" + "e.", []string{
			"{a=alloc,f=[{line=-1,x=foo}],n=7}",
			"{a=unknown}",
		}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			generic, gb := runText(t, []byte(tt.data), nil)
			fast, fb := runText(t, []byte(tt.data), testSchema)
			if !slices.Equal(generic, tt.want) || !slices.Equal(fast, tt.want) {
				t.Errorf("records:\n generic %q\n batch   %q\n want    %q", generic, fast, tt.want)
			}
			if gb != 0 || fb != tt.batches {
				t.Errorf("batches read: generic %d, with the schema %d; want 0 and %d", gb, fb, tt.batches)
			}
		})
	}
}

// TestForeign: the opcodes that build objects fail with Config.Foreign's
// text and wrap it.
func TestForeign(t *testing.T) {
	foreign := errors.New("not my data")
	for _, tt := range []struct{ data, want string }{
		{"\x80\x04cos\nsystem\n", "not my data: the pickle refers to the Python class os.system at byte 13"},
		{"\x80\x04)R", "not my data: the pickle builds Python objects (opcode REDUCE) at byte 4"},
		{"\x80\x04\x8f", "not my data: the pickle holds a set at byte 3"},
	} {
		m := New(strings.NewReader(tt.data), Config{MaxString: 1 << 20, MaxStack: 1 << 20,
			Budget: NewBudget(1<<20, func() int64 { return 0 }), Foreign: foreign})
		_, err := m.Run()
		if err == nil || err.Error() != tt.want || !errors.Is(err, foreign) {
			t.Errorf("%q: err %v, want %q wrapping Foreign", tt.data, err, tt.want)
		}
	}
}

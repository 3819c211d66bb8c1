package export

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// The rows of the Parquet tables. Sizes are bytes, times microseconds since
// the Unix epoch, entries indexes into the device's trace (device_traces[d]),
// addresses and streams the integers PyTorch records. Every table has
// file_id, the input's index in the dataset; stack_id is per file (join
// stacks on file_id and stack_id).

// AllocationRow is one allocation's life: table allocations.
type AllocationRow struct {
	FileID int32 `parquet:"file_id"`
	Device int32 `parquet:"device"`
	// Address of the block; Size the block's bytes as memory_summary()
	// counts them (the rounded request, or the whole free block when the
	// allocator did not split it); RequestedSize the caller's bytes.
	Address       int64  `parquet:"address"`
	Size          int64  `parquet:"size,dict"`
	RequestedSize int64  `parquet:"requested_size,dict"`
	Stream        int64  `parquet:"stream,dict"`
	Pool          string `parquet:"pool,dict"`
	LargePool     bool   `parquet:"large_pool"`
	// AllocEntry and AllocUS are null for a block allocated before the
	// trace's first entry. FreeEntry is the free_requested entry (the
	// free_completed one where none was recorded) and FreeUS its time;
	// both null while the block is live at the end.
	AllocEntry         *int64 `parquet:"alloc_entry,optional"`
	FreeEntry          *int64 `parquet:"free_entry,optional"`
	FreeCompletedEntry *int64 `parquet:"free_completed_entry,optional"`
	AllocUS            *int64 `parquet:"alloc_us,optional"`
	FreeUS             *int64 `parquet:"free_us,optional"`
	StackID            int32  `parquet:"stack_id,dict"`
}

// EventRow is one trace entry with the replayed figures after it: table
// events.
type EventRow struct {
	FileID int32  `parquet:"file_id"`
	Device int32  `parquet:"device"`
	Entry  int64  `parquet:"entry,delta"`
	TimeUS *int64 `parquet:"time_us,optional"`
	Action string `parquet:"action,dict"`
	// Address is null for oom entries, whose DeviceFree is set.
	Address    *int64 `parquet:"address,optional"`
	Size       int64  `parquet:"size,dict"`
	Stream     int64  `parquet:"stream,dict"`
	DeviceFree *int64 `parquet:"device_free,optional"`
	StackID    int32  `parquet:"stack_id,dict"`
	// Allocated, Active, Reserved and Requested are allocated_bytes,
	// active_bytes, reserved_bytes and requested_bytes (all pools) after
	// the entry.
	Allocated int64 `parquet:"allocated,delta"`
	Active    int64 `parquet:"active,delta"`
	Reserved  int64 `parquet:"reserved,delta"`
	Requested int64 `parquet:"requested,delta"`
}

// SegmentRow is one segment the file holds (the end state): table segments.
type SegmentRow struct {
	FileID        int32  `parquet:"file_id"`
	Device        int32  `parquet:"device"`
	Address       int64  `parquet:"address"`
	TotalSize     int64  `parquet:"total_size"`
	AllocatedSize int64  `parquet:"allocated_size"`
	ActiveSize    int64  `parquet:"active_size"`
	RequestedSize int64  `parquet:"requested_size"`
	Stream        int64  `parquet:"stream"`
	SegmentType   string `parquet:"segment_type,dict"`
	Pool          string `parquet:"pool,dict"`
	Expandable    bool   `parquet:"expandable"`
	StackID       int32  `parquet:"stack_id"`
}

// BlockRow is one block of a segment the file holds: table blocks.
type BlockRow struct {
	FileID         int32  `parquet:"file_id"`
	Device         int32  `parquet:"device"`
	SegmentAddress int64  `parquet:"segment_address"`
	Address        int64  `parquet:"address"`
	Size           int64  `parquet:"size"`
	RequestedSize  int64  `parquet:"requested_size"`
	State          string `parquet:"state,dict"`
	StackID        int32  `parquet:"stack_id"`
}

// StackRow is one frame of a stack: table stacks. Depth 0 is the innermost
// frame (the allocator's call site); a stack without frames has no rows.
type StackRow struct {
	FileID   int32  `parquet:"file_id"`
	StackID  int32  `parquet:"stack_id"`
	Depth    int32  `parquet:"depth"`
	Filename string `parquet:"filename,dict"`
	Line     int64  `parquet:"line"`
	Name     string `parquet:"name,dict"`
	// Kind is frames.ClassifyFrame's: user, torch, stdlib, cpp, noise.
	Kind string `parquet:"kind,dict"`
}

// AnnotationRow is one annotation of a device: table annotations. Kind
// "range" is a record_function range (external_annotations START/END
// pairs, as Ranges pairs them): Name its name, StartUS and EndUS its
// times (Unterminated when the file has no END: EndUS is then the
// device's last entry). Kind "annotate" is a PyTorch 2.14 annotate entry
// (torch.cuda.memory._annotate_tensor): Name its user_metadata, Entry its
// trace entry, Address the live allocation's address (join allocations
// on address and alloc_entry <= entry < free_entry), StartUS its time.
type AnnotationRow struct {
	FileID       int32  `parquet:"file_id"`
	Device       int32  `parquet:"device"`
	Kind         string `parquet:"kind,dict"`
	Name         string `parquet:"name,dict"`
	StartUS      *int64 `parquet:"start_us,optional"`
	EndUS        *int64 `parquet:"end_us,optional"`
	Unterminated bool   `parquet:"unterminated"`
	Entry        *int64 `parquet:"entry,optional"`
	Address      *int64 `parquet:"address,optional"`
}

// SnapshotRow is one device of one input file: table snapshots, which
// also has a column per --label.
type SnapshotRow struct {
	FileID       int32  `parquet:"file_id"`
	Path         string `parquet:"path"`
	TorchVersion string `parquet:"torch_version_hint"`
	AllocConf    string `parquet:"alloc_conf"`
	Expandable   bool   `parquet:"expandable_segments"`
	// Device is -1 for a file with no device at all.
	Device       int32 `parquet:"device"`
	TraceEntries int64 `parquet:"trace_entries"`
	// PeakAllocated, PeakReserved are allocated_bytes.all.peak and
	// reserved_bytes.all.peak; PeakTrust says whether they are "exact",
	// a "lower_bound" (the trace started late) or "unknown" (no trace; then
	// they are null).
	PeakAllocated    *int64 `parquet:"peak_allocated,optional"`
	PeakReserved     *int64 `parquet:"peak_reserved,optional"`
	PeakTrust        string `parquet:"peak_trust"`
	PeakEntry        *int64 `parquet:"peak_entry,optional"`
	CurrentAllocated int64  `parquet:"current_allocated"`
	CurrentReserved  int64  `parquet:"current_reserved"`
	// ReplayMatchesFile is false when the replayed end state differs from
	// the file's segments (figures may then be off).
	ReplayMatchesFile bool `parquet:"replay_matches_file"`
	// RequestedTrust is "exact", or "unknown" when the device's requested
	// sizes cannot be right (stats.Known.Requested): then the
	// requested_size and requested columns of its rows in the other
	// tables are the file's wrong figures, not requests.
	RequestedTrust string `parquet:"requested_trust,dict"`
}

// Dataset gathers the Parquet tables of one or more snapshots. Rows are
// encoded and compressed (Snappy) as they are added, so memory grows with
// the compressed size.
type Dataset struct {
	keys   []string   // label columns of the snapshots table
	labels [][]string // per row of snaps, the label values in keys' order
	n      int32

	allocs   *table[AllocationRow]
	events   *table[EventRow]
	segments *table[SegmentRow]
	blocks   *table[BlockRow]
	stacks   *table[StackRow]
	annots   *table[AnnotationRow]
	snaps    []SnapshotRow
}

// table is one Parquet file being written to memory.
type table[T any] struct {
	buf   bytes.Buffer
	w     *parquet.GenericWriter[T]
	batch []T
}

const batchRows = 8192

// codec returns the compression of every column chunk: zstd at its
// fastest level. At the default level compression took a fifth of the
// export of a 2M-entry trace; Snappy is no faster once the repetitive
// columns are dictionary-encoded, and its files are 2.7 times larger.
func codec() parquet.WriterOption {
	return parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest})
}

func newTable[T any]() *table[T] {
	t := &table[T]{batch: make([]T, 0, batchRows)}
	t.w = parquet.NewGenericWriter[T](&t.buf, codec(), parquet.CreatedBy("snapview", "", ""))
	return t
}

func (t *table[T]) add(r T) error {
	t.batch = append(t.batch, r)
	if len(t.batch) == batchRows {
		return t.flush()
	}
	return nil
}

func (t *table[T]) flush() error {
	if _, err := t.w.Write(t.batch); err != nil {
		return err
	}
	t.batch = t.batch[:0]
	return nil
}

func (t *table[T]) close() ([]byte, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	if err := t.w.Close(); err != nil {
		return nil, err
	}
	return t.buf.Bytes(), nil
}

// CheckLabel returns an error when key cannot name a label column of the
// snapshots table: it must be letters, digits and '_', not start with a
// digit, and differ (in any case) from the table's own columns.
func CheckLabel(key string) error {
	if key == "" || strings.IndexFunc(key, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) >= 0 || key[0] >= '0' && key[0] <= '9' {
		return fmt.Errorf("label key %q: want letters, digits and _, not first a digit", key)
	}
	t := reflect.TypeOf(SnapshotRow{})
	for i := 0; i < t.NumField(); i++ {
		col, _, _ := strings.Cut(t.Field(i).Tag.Get("parquet"), ",")
		if strings.EqualFold(col, key) {
			return fmt.Errorf("label key %q is a column of the snapshots table already", key)
		}
	}
	return nil
}

// NewDataset returns an empty dataset whose snapshots table has a column
// per label key (each checked by CheckLabel by the caller).
func NewDataset(keys []string) *Dataset {
	return &Dataset{
		keys:     keys,
		allocs:   newTable[AllocationRow](),
		events:   newTable[EventRow](),
		segments: newTable[SegmentRow](),
		blocks:   newTable[BlockRow](),
		stacks:   newTable[StackRow](),
		annots:   newTable[AnnotationRow](),
	}
}

func ptr(v int64) *int64 { return &v }

// slab hands out *int64 for the optional columns of millions of rows
// without an allocation each.
type slab struct{ buf []int64 }

func (s *slab) ptr(v int64) *int64 {
	if len(s.buf) == cap(s.buf) {
		s.buf = make([]int64, 0, 4096)
	}
	s.buf = append(s.buf, v)
	return &s.buf[len(s.buf)-1]
}

// Add appends s, read from path, with the replays of its devices and its
// labels (a value per key of the dataset; a key without one is "").
func (d *Dataset) Add(s *snapshot.Snapshot, path string, labels []Label, results []*replay.Result) error {
	values := make([]string, len(d.keys))
	for _, l := range labels {
		for k, key := range d.keys {
			if key == l.Key {
				values[k] = l.Value
			}
		}
	}
	id := d.n
	d.n++
	row := SnapshotRow{FileID: id, Path: path, Device: -1, RequestedTrust: stats.Exact.String()}
	hint := info.InferVersion(s)
	row.TorchVersion = hint.String()
	if s.Settings != nil {
		row.AllocConf = s.Settings.Conf
		row.Expandable = s.Settings.ExpandableSegments
	}
	if len(results) == 0 {
		d.snaps = append(d.snaps, row)
		d.labels = append(d.labels, values)
	}
	for _, r := range results {
		if err := d.addDevice(s, id, r); err != nil {
			return err
		}
		dr := row
		dr.Device = int32(r.Device)
		dr.TraceEntries = int64(len(r.Allocated))
		dr.PeakTrust = r.Stats.Known.History.String()
		if r.Stats.Known.History != stats.Unknown {
			dr.PeakAllocated = ptr(r.Stats.AllocatedBytes[stats.PoolAll].Peak)
			dr.PeakReserved = ptr(r.Stats.ReservedBytes[stats.PoolAll].Peak)
		}
		if r.PeakIndex >= 0 {
			dr.PeakEntry = ptr(int64(r.PeakIndex))
		}
		dr.CurrentAllocated = r.Stats.AllocatedBytes[stats.PoolAll].Current
		dr.CurrentReserved = r.Stats.ReservedBytes[stats.PoolAll].Current
		dr.ReplayMatchesFile = r.Check.Equal
		dr.RequestedTrust = r.Stats.Known.Requested.String()
		d.snaps = append(d.snaps, dr)
		d.labels = append(d.labels, values)
	}
	for i := range s.Segments {
		sg := &s.Segments[i]
		err := d.segments.add(SegmentRow{
			FileID: id, Device: int32(sg.Device), Address: int64(sg.Address), TotalSize: sg.TotalSize,
			AllocatedSize: sg.AllocatedSize, ActiveSize: sg.ActiveSize, RequestedSize: sg.RequestedSize,
			Stream: int64(sg.Stream), SegmentType: sg.Type, Pool: sg.Pool.String(), Expandable: sg.Expandable,
			StackID: int32(sg.Stack),
		})
		if err != nil {
			return err
		}
		for _, b := range sg.Blocks {
			err := d.blocks.add(BlockRow{
				FileID: id, Device: int32(sg.Device), SegmentAddress: int64(sg.Address), Address: int64(b.Address),
				Size: b.Size, RequestedSize: b.RequestedSize, State: b.State.String(), StackID: int32(b.Stack),
			})
			if err != nil {
				return err
			}
		}
	}
	for sid := 1; sid < len(s.Stacks); sid++ {
		for depth, fid := range s.Stacks[sid] {
			f := s.Frames[fid]
			err := d.stacks.add(StackRow{
				FileID: id, StackID: int32(sid), Depth: int32(depth), Filename: f.Filename, Line: f.Line,
				Name: f.Name, Kind: frames.ClassifyFrame(f).String(),
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *Dataset) addDevice(s *snapshot.Snapshot, id int32, r *replay.Result) error {
	var trace []snapshot.TraceEntry
	if r.Device < len(s.Traces) {
		trace = s.Traces[r.Device]
	}
	timed := len(trace) > 0 && trace[0].Flags&snapshot.FlagTime != 0
	dev := int32(r.Device)
	var sl slab
	ptr := sl.ptr
	for i := range trace {
		e := &trace[i]
		row := EventRow{
			FileID: id, Device: dev, Entry: int64(i), Action: s.ActionName(e.Action), Size: e.Size,
			Stream: int64(e.Stream), StackID: int32(e.Stack),
			Allocated: r.Allocated[i], Active: r.Active[i], Reserved: r.Reserved[i], Requested: r.Requested[i],
		}
		if timed {
			row.TimeUS = ptr(e.TimeUS)
		}
		if e.Action == snapshot.ActionOOM {
			row.DeviceFree = ptr(e.DeviceFree())
		} else {
			row.Address = ptr(int64(e.Addr))
		}
		if err := d.events.add(row); err != nil {
			return err
		}
	}
	for i := range r.Allocs {
		a := &r.Allocs[i]
		row := AllocationRow{
			FileID: id, Device: dev, Address: int64(a.Addr), Size: a.Size, RequestedSize: a.Requested,
			Stream: int64(a.Stream), Pool: a.Pool.String(), LargePool: a.Large, StackID: int32(a.Stack),
		}
		if a.AllocIndex >= 0 {
			row.AllocEntry = ptr(int64(a.AllocIndex))
			if timed {
				row.AllocUS = ptr(trace[a.AllocIndex].TimeUS)
			}
		}
		free := a.FreeRequested
		if free < 0 {
			free = a.FreeCompleted
		}
		if free >= 0 {
			row.FreeEntry = ptr(int64(free))
			if timed {
				row.FreeUS = ptr(trace[free].TimeUS)
			}
		}
		if a.FreeCompleted >= 0 {
			row.FreeCompletedEntry = ptr(int64(a.FreeCompleted))
		}
		if err := d.allocs.add(row); err != nil {
			return err
		}
	}
	return d.addAnnotations(s, id, r, trace)
}

// addAnnotations adds the device's record_function ranges and annotate
// entries to the annotations table.
func (d *Dataset) addAnnotations(s *snapshot.Snapshot, id int32, r *replay.Result, trace []snapshot.TraceEntry) error {
	dev := int32(r.Device)
	if len(trace) > 0 && trace[0].Flags&snapshot.FlagTime != 0 {
		for _, rg := range Ranges(s, r.Device, trace[len(trace)-1].TimeUS) {
			err := d.annots.add(AnnotationRow{FileID: id, Device: dev, Kind: "range", Name: rg.Name,
				StartUS: ptr(rg.StartUS), EndUS: ptr(rg.EndUS), Unterminated: rg.Open})
			if err != nil {
				return err
			}
		}
	}
	for i := range trace {
		e := &trace[i]
		if e.Action != snapshot.ActionAnnotate {
			continue
		}
		row := AnnotationRow{FileID: id, Device: dev, Kind: "annotate", Entry: ptr(int64(i)), Address: ptr(int64(e.Addr))}
		if int(e.UserMetadata) < len(s.Strings) {
			row.Name = s.Strings[e.UserMetadata]
		}
		if e.Flags&snapshot.FlagTime != 0 {
			row.StartUS = ptr(e.TimeUS)
		}
		if err := d.annots.add(row); err != nil {
			return err
		}
	}
	return nil
}

// Table is one finished Parquet file of a dataset.
type Table struct {
	// Name is the table's name; the file is Name + ".parquet".
	Name string
	Data []byte
}

// Write writes the table's file to w.
func (t Table) Write(w io.Writer) error {
	_, err := w.Write(t.Data)
	return err
}

// Tables finishes the dataset and returns its tables: allocations, events,
// segments, blocks, stacks, annotations, snapshots.
func (d *Dataset) Tables() ([]Table, error) {
	var out []Table
	add := func(name string, b []byte, err error) error {
		if err != nil {
			return fmt.Errorf("encoding the %s table: %w", name, err)
		}
		out = append(out, Table{Name: name, Data: b})
		return nil
	}
	b, err := d.allocs.close()
	if err := add("allocations", b, err); err != nil {
		return nil, err
	}
	b, err = d.events.close()
	if err := add("events", b, err); err != nil {
		return nil, err
	}
	b, err = d.segments.close()
	if err := add("segments", b, err); err != nil {
		return nil, err
	}
	b, err = d.blocks.close()
	if err := add("blocks", b, err); err != nil {
		return nil, err
	}
	b, err = d.stacks.close()
	if err := add("stacks", b, err); err != nil {
		return nil, err
	}
	b, err = d.annots.close()
	if err := add("annotations", b, err); err != nil {
		return nil, err
	}
	b, err = d.snapshotsTable()
	if err := add("snapshots", b, err); err != nil {
		return nil, err
	}
	return out, nil
}

// snapshotsTable writes the snapshots rows with one string column per
// label, after file_id and path: a struct type made at run time from
// SnapshotRow's fields and the labels.
func (d *Dataset) snapshotsTable() ([]byte, error) {
	base := reflect.TypeOf(SnapshotRow{})
	var fields []reflect.StructField
	for i := 0; i < base.NumField(); i++ {
		fields = append(fields, base.Field(i))
		if i == 1 {
			for k, key := range d.keys {
				fields = append(fields, reflect.StructField{
					Name: fmt.Sprintf("Label%d", k), Type: reflect.TypeOf(""),
					Tag: reflect.StructTag(`parquet:"` + key + `,dict"`),
				})
			}
		}
	}
	typ := reflect.StructOf(fields)
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, parquet.SchemaOf(reflect.New(typ).Interface()), codec(), parquet.CreatedBy("snapview", "", ""))
	for i, r := range d.snaps {
		v := reflect.New(typ).Elem()
		rv := reflect.ValueOf(r)
		for i := 0; i < base.NumField(); i++ {
			v.FieldByName(base.Field(i).Name).Set(rv.Field(i))
		}
		for k, val := range d.labels[i] {
			v.Field(2 + k).SetString(val)
		}
		if err := w.Write(v.Addr().Interface()); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

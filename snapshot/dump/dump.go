// Package dump writes a snapshot.Snapshot back out as a file PyTorch's
// tools open: the pickle torch.cuda.memory._dump_snapshot() writes
// (protocol 4, as Python 3.8 to 3.13 write it by default), or the JSON
// layout MemoryViz (torch/utils/viz/MemoryViz.js) accepts, which holds the
// same structure.
//
// The structure is the dict of torch/cuda/memory.py _snapshot(), with the
// keys PyTorch 2.11 writes, in its order (torch/csrc/cuda/Module.cpp
// _cuda_memorySnapshot): "segments", "device_traces",
// "allocator_settings", "external_annotations", each segment, block and
// trace entry with the keys of memory.py's _Segment, _Block and
// _TraceEntry. What the model holds is written: a key the source file
// lacked is left out where the model says so (time_us, compile_context,
// user_metadata, segment_type, allocator_settings, external_annotations,
// device_traces), and a bare segment list (Snapshot.Legacy) is written as
// a list. Every segment and block gets a "frames" list, as 2.11 writes one
// for each; a trace entry has one where the source had one. Keys the decoder does not keep (FX fields, unknown keys of
// newer PyTorch) are not written.
//
// The package never prints and never exits; errors are the writer's.
package dump

import (
	"github.com/snapview/snapview/snapshot"
)

// key is a dict key the writer uses; pickles memoize each once.
type key uint8

const (
	kSegments key = iota
	kDeviceTraces
	kAllocatorSettings
	kExternalAnnotations
	kHostSegments
	kHostTraces
	kDevice
	kAddress
	kTotalSize
	kAllocatedSize
	kActiveSize
	kRequestedSize
	kStream
	kSegmentType
	kSegmentPoolID
	kIsExpandable
	kFrames
	kBlocks
	kSize
	kState
	kAction
	kAddr
	kDeviceFree
	kTimeUS
	kCompileContext
	kUserMetadata
	kName
	kFilename
	kLine
	kStage
	numKeys
)

var keyNames = [numKeys]string{
	kSegments:            "segments",
	kDeviceTraces:        "device_traces",
	kAllocatorSettings:   "allocator_settings",
	kExternalAnnotations: "external_annotations",
	kHostSegments:        "host_segments",
	kHostTraces:          "host_traces",
	kDevice:              "device",
	kAddress:             "address",
	kTotalSize:           "total_size",
	kAllocatedSize:       "allocated_size",
	kActiveSize:          "active_size",
	kRequestedSize:       "requested_size",
	kStream:              "stream",
	kSegmentType:         "segment_type",
	kSegmentPoolID:       "segment_pool_id",
	kIsExpandable:        "is_expandable",
	kFrames:              "frames",
	kBlocks:              "blocks",
	kSize:                "size",
	kState:               "state",
	kAction:              "action",
	kAddr:                "addr",
	kDeviceFree:          "device_free",
	kTimeUS:              "time_us",
	kCompileContext:      "compile_context",
	kUserMetadata:        "user_metadata",
	kName:                "name",
	kFilename:            "filename",
	kLine:                "line",
	kStage:               "stage",
}

// sink is an encoding (pickle or JSON) the walker writes values to. A
// list's items each begin with item(); a dict's with key() or strKey().
type sink interface {
	beginDict()
	endDict()
	beginList()
	endList()
	item()
	key(k key)
	strKey(s string)
	int(v int64)
	uint(v uint64)
	float(f float64)
	bool(b bool)
	none()
	str(s string)
	// poolID writes a segment_pool_id: a tuple in a pickle, a list in JSON.
	poolID(p snapshot.PoolID)
	// stack writes the frames list of a stack, tableStr a string of
	// Snapshot.Strings (each written once where the encoding can share).
	stack(id snapshot.StackID)
	tableStr(id snapshot.StrID)
	// commit marks the end of one trace entry or segment: a pickle may
	// close a frame there.
	commit()
	err() error
}

// walker writes the model to a sink.
type walker struct {
	s *snapshot.Snapshot
	o sink
}

func (w *walker) snapshot() {
	s, o := w.s, w.o
	if s.Legacy {
		w.segments(s.Segments)
		return
	}
	o.beginDict()
	o.key(kSegments)
	w.segments(s.Segments)
	if s.HasDeviceTraces {
		o.key(kDeviceTraces)
		o.beginList()
		for d := range s.Traces {
			o.item()
			w.trace(s.Traces[d])
		}
		o.endList()
	}
	if s.Settings != nil {
		o.key(kAllocatorSettings)
		writeSettings(o, s.Settings)
	}
	if s.HasAnnotations {
		o.key(kExternalAnnotations)
		o.beginList()
		for i := range s.Annotations {
			a := &s.Annotations[i]
			o.item()
			o.beginDict()
			o.key(kStage)
			o.str(a.Stage)
			o.key(kName)
			o.str(a.Name)
			o.key(kDevice)
			o.int(int64(a.Device))
			o.key(kTimeUS)
			o.int(a.TimeUS)
			o.endDict()
		}
		o.endList()
		o.commit()
	}
	if s.HasHostTraces {
		o.key(kHostSegments)
		w.segments(s.HostSegments)
		o.key(kHostTraces)
		w.trace(s.HostTraces)
	}
	o.endDict()
}

func (w *walker) segments(segs []snapshot.Segment) {
	o := w.o
	o.beginList()
	for i := range segs {
		sg := &segs[i]
		o.item()
		o.beginDict()
		o.key(kDevice)
		o.int(int64(sg.Device))
		o.key(kAddress)
		o.uint(uint64(sg.Address))
		o.key(kTotalSize)
		o.int(sg.TotalSize)
		o.key(kAllocatedSize)
		o.int(sg.AllocatedSize)
		o.key(kActiveSize)
		o.int(sg.ActiveSize)
		o.key(kRequestedSize)
		o.int(sg.RequestedSize)
		o.key(kStream)
		o.uint(sg.Stream)
		if sg.Type != "" {
			o.key(kSegmentType)
			o.str(sg.Type)
		}
		o.key(kSegmentPoolID)
		o.poolID(sg.Pool)
		o.key(kIsExpandable)
		o.bool(sg.Expandable)
		o.key(kFrames)
		o.stack(sg.Stack)
		o.key(kBlocks)
		o.beginList()
		for j := range sg.Blocks {
			b := &sg.Blocks[j]
			o.item()
			o.beginDict()
			o.key(kAddress)
			o.uint(uint64(b.Address))
			o.key(kSize)
			o.int(b.Size)
			o.key(kRequestedSize)
			o.int(b.RequestedSize)
			o.key(kState)
			o.str(b.State.String())
			o.key(kFrames)
			o.stack(b.Stack)
			o.endDict()
			if j%256 == 255 {
				o.commit()
			}
		}
		o.endList()
		o.endDict()
		o.commit()
	}
	o.endList()
}

// Fields of trace entries the source file had (Snapshot.Fields): a key it
// lacked is left out, so the written file reads back the same.
type entryKeys struct{ compileContext, userMetadata bool }

func (w *walker) keys() entryKeys {
	return entryKeys{
		compileContext: w.s.FieldCount("device_traces[][].compile_context") > 0,
		userMetadata:   w.s.FieldCount("device_traces[][].user_metadata") > 0,
	}
}

func (w *walker) trace(t []snapshot.TraceEntry) {
	o, s := w.o, w.s
	ks := w.keys()
	o.beginList()
	for i := range t {
		e := &t[i]
		o.item()
		o.beginDict()
		o.key(kAction)
		o.str(s.ActionName(e.Action))
		if e.Action == snapshot.ActionOOM {
			o.key(kDeviceFree)
		} else {
			o.key(kAddr)
		}
		o.uint(uint64(e.Addr))
		o.key(kSize)
		o.int(e.Size)
		o.key(kStream)
		o.uint(e.Stream)
		if e.Flags&snapshot.FlagTime != 0 {
			o.key(kTimeUS)
			o.int(e.TimeUS)
		}
		if ks.compileContext || e.CompileContext != 0 {
			o.key(kCompileContext)
			o.tableStr(e.CompileContext)
		}
		if ks.userMetadata || e.UserMetadata != 0 {
			o.key(kUserMetadata)
			o.tableStr(e.UserMetadata)
		}
		if e.Flags&snapshot.FlagFrames != 0 {
			// PyTorch leaves frames out where context was off
			// (_record_memory_history(context=None)).
			o.key(kFrames)
			o.stack(e.Stack)
		}
		o.endDict()
		o.commit()
	}
	o.endList()
}

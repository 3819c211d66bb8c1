package replay

import (
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/snapview/snapview/snapshot"
)

// Twins returns, indexed by device, the first device whose trace entries
// and segments (compared without their Device field) are the same as the
// device's, itself when there is none; nil when no two devices are the
// same. A file of 10^5 devices that all recorded the same thing (a
// hostile one, or a broken exporter's) is then replayed once, not 10^5
// times: the figures of a replay depend on nothing else of the device
// (the file's allocator settings are the file's), so they are the twin's
// exactly. Devices with record_function annotations, and devices with
// neither segments nor trace entries, are their own. The cost is one pass
// over the trace entries and the blocks (a hash, then an exact compare
// with the candidates that share it).
func Twins(s *snapshot.Snapshot) []int32 {
	n := len(s.Traces)
	for i := range s.Segments {
		n = max(n, s.Segments[i].Device+1)
	}
	if n < 2 {
		return nil
	}
	// Each device's segments, when they are one run of the list (a file
	// whose segments of one device are apart makes the device its own).
	count := make([]int, n)
	for i := range s.Segments {
		if d := s.Segments[i].Device; d >= 0 {
			count[d]++
		}
	}
	segs := make([][]snapshot.Segment, n)
	apart := make([]bool, n)
	for i := 0; i < len(s.Segments); {
		d := s.Segments[i].Device
		j := i + 1
		for j < len(s.Segments) && s.Segments[j].Device == d {
			j++
		}
		if d >= 0 {
			if count[d] == j-i {
				segs[d] = s.Segments[i:j]
			} else {
				apart[d] = true
			}
		}
		i = j
	}
	annotated := map[int]bool{}
	for _, a := range s.Annotations {
		annotated[a.Device] = true
	}
	// Only devices whose trace and segment counts another device shares
	// are hashed: a real file's devices seldom have as many entries.
	type shape struct{ entries, segments int }
	shapes := map[shape]int{}
	for d := range n {
		shapes[shape{len(DeviceTrace(s, d)), len(segs[d])}]++
	}
	seed := maphash.MakeSeed()
	twin := make([]int32, n)
	buckets := map[uint64][]int32{}
	shared := false
	for d := range n {
		twin[d] = int32(d)
		trace := DeviceTrace(s, d)
		if len(trace) == 0 && len(segs[d]) == 0 || annotated[d] || apart[d] || shapes[shape{len(trace), len(segs[d])}] < 2 {
			continue
		}
		h := deviceHash(seed, trace, segs[d])
		for _, c := range buckets[h] {
			if sameDevice(DeviceTrace(s, int(c)), trace, segs[c], segs[d]) {
				twin[d] = c
				shared = true
				break
			}
		}
		if twin[d] == int32(d) {
			buckets[h] = append(buckets[h], int32(d))
		}
	}
	if !shared {
		return nil
	}
	return twin
}

// deviceHash hashes a device's trace entries and segments, without the
// segments' Device.
func deviceHash(seed maphash.Seed, trace []snapshot.TraceEntry, segs []snapshot.Segment) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var b [64]byte
	for i := range trace {
		e := &trace[i]
		p := binary.LittleEndian.AppendUint64(b[:0], uint64(e.Addr))
		p = binary.LittleEndian.AppendUint64(p, uint64(e.Size))
		p = binary.LittleEndian.AppendUint64(p, e.Stream)
		p = binary.LittleEndian.AppendUint64(p, uint64(e.TimeUS))
		p = binary.LittleEndian.AppendUint32(p, uint32(e.Stack))
		p = append(p, byte(e.Action), e.Flags)
		h.Write(p)
	}
	h.WriteByte(0xff)
	for i := range segs {
		sg := &segs[i]
		p := binary.LittleEndian.AppendUint64(b[:0], uint64(sg.Address))
		p = binary.LittleEndian.AppendUint64(p, uint64(sg.TotalSize))
		p = binary.LittleEndian.AppendUint64(p, uint64(len(sg.Blocks)))
		h.Write(p)
		for j := range sg.Blocks {
			bl := &sg.Blocks[j]
			p := binary.LittleEndian.AppendUint64(b[:0], uint64(bl.Address))
			p = binary.LittleEndian.AppendUint64(p, uint64(bl.Size))
			p = binary.LittleEndian.AppendUint64(p, uint64(bl.RequestedSize))
			p = append(p, byte(bl.State))
			h.Write(p)
		}
	}
	return h.Sum64()
}

// sameDevice reports whether two devices' trace entries and segments are
// the same, their segments' Device aside.
func sameDevice(ta, tb []snapshot.TraceEntry, sa, sb []snapshot.Segment) bool {
	if len(ta) != len(tb) || len(sa) != len(sb) {
		return false
	}
	if len(ta) > 0 && &ta[0] != &tb[0] && !slices.Equal(ta, tb) {
		return false
	}
	for i := range sa {
		if !sameSegmentFields(&sa[i], &sb[i]) {
			return false
		}
		if len(sa[i].Blocks) > 0 && len(sb[i].Blocks) > 0 && &sa[i].Blocks[0] == &sb[i].Blocks[0] {
			continue
		}
		if !slices.Equal(sa[i].Blocks, sb[i].Blocks) {
			return false
		}
	}
	return true
}

// sameSegmentFields compares two segments but for their Device and
// Blocks.
func sameSegmentFields(a, b *snapshot.Segment) bool {
	return a.Address == b.Address && a.TotalSize == b.TotalSize && a.AllocatedSize == b.AllocatedSize &&
		a.ActiveSize == b.ActiveSize && a.RequestedSize == b.RequestedSize && a.Stream == b.Stream &&
		a.Type == b.Type && a.Pool == b.Pool && a.Expandable == b.Expandable && a.Stack == b.Stack
}

// Twin returns r for device, a device whose trace entries and segments
// are those of r's device (see Twins): the same figures, named for
// device. The copy shares r's series, allocations and states' contents,
// which neither changes.
func (r *Result) Twin(device int) *Result {
	c := *r
	c.Device = device
	c.Stats.Device = device
	c.Coverage.Device = device
	c.seed = slices.Clone(r.seed)
	for i := range c.seed {
		c.seed[i].Device = device
	}
	if r.States != nil {
		c.States = make([]*State, len(r.States))
		for i, st := range r.States {
			cp := *st
			cp.Device = device
			cp.Stats.Device = device
			c.States[i] = &cp
		}
	}
	return &c
}

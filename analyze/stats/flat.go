package stats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Figure is one entry of torch.cuda.memory_stats(): its flat key
// ("allocated_bytes.all.peak"), its value and how far it can be trusted.
type Figure struct {
	Key       string
	Value     int64
	Exactness Exactness
	// Max, when above 0 and Value, is the most a LowerBound figure can be
	// (num_alloc_retries: RetriesRange); 0 otherwise.
	Max int64
}

// PooledFamily names one per-pool family of MemoryStats by its
// memory_stats() key.
type PooledFamily struct {
	Key  string
	Stat *[NumPools]Stat
}

// PooledFamilies returns the per-pool families of s in memory_stats() key
// order (alphabetical, as torch sorts the flat dict).
func (s *MemoryStats) PooledFamilies() []PooledFamily {
	return []PooledFamily{
		{"active", &s.Active},
		{"active_bytes", &s.ActiveBytes},
		{"allocated_bytes", &s.AllocatedBytes},
		{"allocation", &s.Allocation},
		{"inactive_split", &s.InactiveSplit},
		{"inactive_split_bytes", &s.InactiveSplitBytes},
		{"requested_bytes", &s.RequestedBytes},
		{"reserved_bytes", &s.ReservedBytes},
		{"segment", &s.Segment},
	}
}

// statField is one of the four figures of a Stat.
type statField struct {
	key     string
	field   func(*Stat) *int64
	history bool // peak, allocated, freed: covered by Known.History
}

// statFields returns the fields of a Stat in memory_stats() key order.
func statFields() []statField {
	return []statField{
		{"allocated", func(st *Stat) *int64 { return &st.Allocated }, true},
		{"current", func(st *Stat) *int64 { return &st.Current }, false},
		{"freed", func(st *Stat) *int64 { return &st.Freed }, true},
		{"peak", func(st *Stat) *int64 { return &st.Peak }, true},
	}
}

// scalar is one single-number figure of memory_stats().
type scalar struct {
	key      string
	value    *int64
	known    Exactness
	required bool // memory_summary() reads it
}

// scalars returns the single-number figures of s with their exactness.
// The cumulative counters num_device_alloc/free follow Known.History;
// num_sync_all_streams has its own Known.NumSyncAllStreams (no trace shows
// it); max_split_size (a setting) follows Known.Current.
func (s *MemoryStats) scalars() []scalar {
	return []scalar{
		{"max_split_size", &s.MaxSplitSize, s.Known.Current, false},
		{"num_alloc_retries", &s.NumAllocRetries, s.Known.NumAllocRetries, true},
		{"num_device_alloc", &s.NumDeviceAlloc, s.Known.History, false},
		{"num_device_free", &s.NumDeviceFree, s.Known.History, false},
		{"num_ooms", &s.NumOOMs, s.Known.NumOOMs, true},
		{"num_sync_all_streams", &s.NumSyncAllStreams, s.Known.NumSyncAllStreams, false},
	}
}

// Figures returns every figure of s under its torch.cuda.memory_stats()
// key, sorted by key (the order torch's flat dict has), each with its
// exactness from s.Known (requested_bytes.* also follow Known.Requested).
func (s *MemoryStats) Figures() []Figure {
	var out []Figure
	exact := func(f statField) Exactness {
		if f.history {
			return s.Known.History
		}
		return s.Known.Current
	}
	for _, fam := range s.PooledFamilies() {
		for p := range NumPools {
			for _, f := range statFields() {
				e := exact(f)
				if fam.Stat == &s.RequestedBytes {
					e = worse(e, s.Known.Requested)
				}
				out = append(out, Figure{
					Key:       fam.Key + "." + p.String() + "." + f.key,
					Value:     *f.field(&fam.Stat[p]),
					Exactness: e,
				})
			}
		}
	}
	for _, o := range []struct {
		key  string
		stat *Stat
	}{{"oversize_allocations", &s.OversizeAllocations}, {"oversize_segments", &s.OversizeSegments}} {
		for _, f := range statFields() {
			out = append(out, Figure{Key: o.key + "." + f.key, Value: *f.field(o.stat), Exactness: exact(f)})
		}
	}
	for _, sc := range s.scalars() {
		out = append(out, Figure{Key: sc.key, Value: *sc.value, Exactness: sc.known})
	}
	if _, hi, ok := s.RetriesRange(); ok {
		for i := range out {
			if out[i].Key == "num_alloc_retries" {
				out[i].Max = hi
			}
		}
	}
	slices.SortFunc(out, func(a, b Figure) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Flat returns s as torch.cuda.memory_stats() returns it: a flat dict
// keyed "family.pool.stat" ("allocated_bytes.all.peak"), plus the
// oversize_* families and the num_* and max_split_size scalars (122 keys in
// PyTorch 2.11; torch/cuda/memory.py memory_stats). Exactness is not
// carried; see [MemoryStats.Figures].
func (s *MemoryStats) Flat() map[string]int64 {
	figs := s.Figures()
	m := make(map[string]int64, len(figs))
	for _, f := range figs {
		m[f.Key] = f.Value
	}
	return m
}

// StatsFromFlat builds a MemoryStats from torch.cuda.memory_stats(device)'s
// flat dict. Every figure is marked Exact. The keys memory_summary() reads
// (every per-pool family, oversize_*, num_ooms, num_alloc_retries) are
// required; num_sync_all_streams and num_device_alloc/free default to 0
// and max_split_size to -1 (unlimited) when absent, as in PyTorch releases
// that predate them. Unknown keys (newer PyTorch) are ignored.
func StatsFromFlat(device int, m map[string]int64) (*MemoryStats, error) {
	s := &MemoryStats{
		Device:       device,
		MaxSplitSize: -1,
		Known:        Known{Current: Exact, History: Exact, NumOOMs: Exact, NumAllocRetries: Exact, NumSyncAllStreams: Exact, Requested: Exact},
	}
	var missing []string
	get := func(key string, dst *int64) {
		v, ok := m[key]
		if !ok {
			missing = append(missing, key)
			return
		}
		*dst = v
	}
	for _, fam := range s.PooledFamilies() {
		for p := range NumPools {
			for _, f := range statFields() {
				get(fam.Key+"."+p.String()+"."+f.key, f.field(&fam.Stat[p]))
			}
		}
	}
	for _, f := range statFields() {
		get("oversize_allocations."+f.key, f.field(&s.OversizeAllocations))
		get("oversize_segments."+f.key, f.field(&s.OversizeSegments))
	}
	for _, sc := range s.scalars() {
		if sc.required {
			get(sc.key, sc.value)
		} else if v, ok := m[sc.key]; ok {
			*sc.value = v
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("memory_stats of device %d: missing %d keys (first %q)", device, len(missing), missing[0])
	}
	return s, nil
}

// ParseStatsJSON decodes a JSON file of torch.cuda.memory_stats() output
// and returns one MemoryStats per device, sorted by device. It accepts the
// three shapes the snapshot corpus uses:
//
//   - the flat dict itself, json.dump(torch.cuda.memory_stats(d)), for
//     device defaultDevice;
//   - a dict keyed by device ordinal ("0", "1", …) whose values are flat
//     dicts (the two-device snapshot.stats.json);
//   - a dict with a "memory_stats" key holding the flat dict (the probe's
//     *.extra.json), for device defaultDevice; an optional "device" key
//     overrides it.
//
// Every figure is Exact.
func ParseStatsJSON(data []byte, defaultDevice int) ([]*MemoryStats, error) {
	top, err := decodeJSONObject(data)
	if err != nil {
		return nil, fmt.Errorf("parsing memory_stats JSON: %w", err)
	}
	if raw, ok := top["memory_stats"]; ok {
		dev := defaultDevice
		if rd, ok := top["device"]; ok {
			if err := json.Unmarshal(rd, &dev); err != nil {
				return nil, fmt.Errorf("parsing memory_stats JSON: device: %w", err)
			}
		}
		st, err := statsFromRaw(dev, raw)
		if err != nil {
			return nil, err
		}
		return []*MemoryStats{st}, nil
	}
	if len(top) > 0 && allDeviceKeys(top) {
		var out []*MemoryStats
		for k, raw := range top {
			dev, _ := strconv.Atoi(k)
			st, err := statsFromRaw(dev, raw)
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		}
		slices.SortFunc(out, func(a, b *MemoryStats) int { return a.Device - b.Device })
		return out, nil
	}
	st, err := statsFromRaw(defaultDevice, data)
	if err != nil {
		return nil, err
	}
	return []*MemoryStats{st}, nil
}

// StatsJSONNamesDevice reports whether data, a memory_stats() JSON that
// [ParseStatsJSON] reads, says which device its figures are of: a dict
// keyed by device ordinal, or a "memory_stats" dict with a "device" key.
// A flat dict (json.dump(torch.cuda.memory_stats(d))) does not: torch
// leaves d out, so the caller must say it (ParseStatsJSON's
// defaultDevice). false when data does not parse.
func StatsJSONNamesDevice(data []byte) bool {
	top, err := decodeJSONObject(data)
	if err != nil {
		return false
	}
	if _, ok := top["memory_stats"]; ok {
		_, ok := top["device"]
		return ok
	}
	return len(top) > 0 && allDeviceKeys(top)
}

// allDeviceKeys reports whether every key of m is a device ordinal.
func allDeviceKeys(m map[string]json.RawMessage) bool {
	for k := range m {
		if n, err := strconv.Atoi(k); err != nil || n < 0 || strconv.Itoa(n) != k {
			return false
		}
	}
	return true
}

// statsFromRaw decodes one flat memory_stats() dict.
func statsFromRaw(device int, raw json.RawMessage) (*MemoryStats, error) {
	obj, err := decodeJSONObject(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing memory_stats of device %d: %w", device, err)
	}
	flat, err := FlatFromJSON(obj)
	if err != nil {
		return nil, fmt.Errorf("parsing memory_stats of device %d: %w", device, err)
	}
	return StatsFromFlat(device, flat)
}

// FlatFromJSON takes the integer figures out of a decoded JSON object that
// holds torch.cuda.memory_stats()'s flat keys. A memory_stats() key whose
// value is not an integer is an error; other keys with other values (a
// training loop's "step", "time" or "loss" logged beside the figures) are
// left out.
func FlatFromJSON(obj map[string]json.RawMessage) (map[string]int64, error) {
	flat := make(map[string]int64, len(obj))
	for k, v := range obj {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			if IsStatsKey(k) {
				return nil, fmt.Errorf("%q: want an integer, got %s", k, truncate(v))
			}
			continue
		}
		flat[k] = n
	}
	return flat, nil
}

// IsStatsKey reports whether key is one of torch.cuda.memory_stats()'s
// keys ("allocated_bytes.all.current", "num_alloc_retries", …) as PyTorch
// 2.11 writes them.
func IsStatsKey(key string) bool {
	for _, sc := range (&MemoryStats{}).scalars() {
		if key == sc.key {
			return true
		}
	}
	family, rest, ok := strings.Cut(key, ".")
	if !ok {
		return false
	}
	if family == "oversize_allocations" || family == "oversize_segments" {
		return slices.ContainsFunc(statFields(), func(f statField) bool { return f.key == rest })
	}
	pool, field, ok := strings.Cut(rest, ".")
	if !ok || (pool != "all" && pool != "large_pool" && pool != "small_pool") {
		return false
	}
	if !slices.ContainsFunc(statFields(), func(f statField) bool { return f.key == field }) {
		return false
	}
	return slices.ContainsFunc((&MemoryStats{}).PooledFamilies(), func(p PooledFamily) bool { return p.Key == family })
}

// decodeJSONObject decodes a JSON object, keeping its values raw.
func decodeJSONObject(data []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("want a JSON object, got null")
	}
	return m, nil
}

// truncate shortens a raw JSON value for an error message.
func truncate(v []byte) string {
	const max = 40
	if len(v) > max {
		return string(v[:max]) + "…"
	}
	return string(v)
}

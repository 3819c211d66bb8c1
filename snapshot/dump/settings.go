package dump

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/snapview/snapview/snapshot"
)

// settingsOrder is the order of allocator_settings' keys in PyTorch 2.11
// (torch/csrc/cuda/Module.cpp, _cuda_memorySnapshot's allocator_settings).
var settingsOrder = []string{
	"PYTORCH_CUDA_ALLOC_CONF",
	"max_split_size",
	"garbage_collection_threshold",
	"expandable_segments",
	"pinned_num_register_threads",
	"release_lock_on_cudamalloc",
	"pinned_use_cuda_host_register",
	"graph_capture_record_stream_reuse",
	"roundup_power2_divisions",
}

// writeSettings writes allocator_settings: the keys the decoder types
// (AllocatorSettings' fields) from their values, the others from their
// display text (AllocatorSettings.Raw: Python literals, read back as
// bool, int, float, str or a dict of them), in PyTorch 2.11's order, then
// the other keys the file had, sorted.
func writeSettings(o sink, st *snapshot.AllocatorSettings) {
	keys := make([]string, 0, len(st.Raw))
	for _, k := range settingsOrder {
		if rawValue(st, k) != nil {
			keys = append(keys, k)
		}
	}
	for _, kv := range st.Raw {
		if !slices.Contains(settingsOrder, kv.Key) {
			keys = append(keys, kv.Key)
		}
	}
	o.beginDict()
	for _, k := range keys {
		o.strKey(k)
		switch k {
		case "PYTORCH_CUDA_ALLOC_CONF":
			o.str(st.Conf)
		case "max_split_size":
			o.int(st.MaxSplitSize)
		case "garbage_collection_threshold":
			o.float(st.GarbageCollectionThreshold)
		case "expandable_segments":
			o.bool(st.ExpandableSegments)
		case "roundup_power2_divisions":
			if st.RoundupPower2Divisions == nil {
				writeLiteral(o, *rawValue(st, k))
				break
			}
			iv := make([]int64, 0, len(st.RoundupPower2Divisions))
			for n := range st.RoundupPower2Divisions {
				iv = append(iv, n)
			}
			slices.Sort(iv)
			o.beginDict()
			for _, n := range iv {
				o.strKey(strconv.FormatInt(n, 10))
				o.int(st.RoundupPower2Divisions[n])
			}
			o.endDict()
		default:
			writeLiteral(o, *rawValue(st, k))
		}
	}
	o.endDict()
}

func rawValue(st *snapshot.AllocatorSettings, k string) *string {
	i := sort.Search(len(st.Raw), func(i int) bool { return st.Raw[i].Key >= k })
	if i < len(st.Raw) && st.Raw[i].Key == k {
		return &st.Raw[i].Value
	}
	return nil
}

// writeLiteral writes a setting's display text as the value it shows:
// True, False, None, an int, a float, a Go-quoted string, or a dict of
// them ({k: v, ...}); anything else as the text itself.
func writeLiteral(o sink, text string) {
	p := literal{s: text}
	if !p.value(o, true) || p.i != len(p.s) {
		// Not a literal it could read whole: the text, as a str. (The
		// dry run above wrote nothing.)
		o.str(text)
		return
	}
	p.i = 0
	p.value(o, false)
}

// literal reads a display string; with dry set it only checks.
type literal struct {
	s string
	i int
}

func (p *literal) value(o sink, dry bool) bool {
	rest := p.s[p.i:]
	switch {
	case strings.HasPrefix(rest, "True"):
		p.i += 4
		if !dry {
			o.bool(true)
		}
		return true
	case strings.HasPrefix(rest, "False"):
		p.i += 5
		if !dry {
			o.bool(false)
		}
		return true
	case strings.HasPrefix(rest, "None"):
		p.i += 4
		if !dry {
			o.none()
		}
		return true
	case strings.HasPrefix(rest, `"`):
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return false
		}
		v, _ := strconv.Unquote(q)
		p.i += len(q)
		if !dry {
			o.str(v)
		}
		return true
	case strings.HasPrefix(rest, "{"):
		p.i++
		if !dry {
			o.beginDict()
		}
		for first := true; ; first = false {
			if strings.HasPrefix(p.s[p.i:], "}") {
				p.i++
				break
			}
			if !first {
				if !strings.HasPrefix(p.s[p.i:], ", ") {
					return false
				}
				p.i += 2
			}
			q, err := strconv.QuotedPrefix(p.s[p.i:])
			if err != nil {
				return false
			}
			k, _ := strconv.Unquote(q)
			p.i += len(q)
			if !strings.HasPrefix(p.s[p.i:], ": ") {
				return false
			}
			p.i += 2
			if !dry {
				o.strKey(k)
			}
			if !p.value(o, dry) {
				return false
			}
		}
		if !dry {
			o.endDict()
		}
		return true
	}
	j := 0
	for j < len(rest) && strings.IndexByte("+-0123456789.eE", rest[j]) >= 0 {
		j++
	}
	num := rest[:j]
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		p.i += j
		if !dry {
			o.int(n)
		}
		return true
	}
	if f, err := strconv.ParseFloat(num, 64); err == nil && j > 0 {
		p.i += j
		if !dry {
			o.float(f)
		}
		return true
	}
	return false
}

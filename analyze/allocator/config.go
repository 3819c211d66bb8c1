package allocator

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/snapview/snapview/snapshot"
)

const mib = 1 << 20

// Config is the part of the allocator's settings its rules depend on
// (AcceleratorAllocatorConfig of c10/core/AllocatorConfig.h, which
// PYTORCH_CUDA_ALLOC_CONF sets). The zero value is not valid: start from
// [Default], [Parse] or [FromSettings]. Configs compare with ==.
type Config struct {
	// MaxSplitSize is max_split_size in bytes (max_split_size_mb x 1 MiB):
	// blocks this large or larger are never split. math.MaxInt64 means
	// unlimited (torch's default, SIZE_MAX).
	MaxSplitSize int64
	// MaxNonSplitRounding is max_non_split_rounding_size in bytes
	// (max_non_split_rounding_mb x 1 MiB, 20 MiB by default): how much
	// larger than an oversize request a cached block it takes may be.
	MaxNonSplitRounding int64
	// GarbageCollectionThreshold is garbage_collection_threshold, in (0, 1),
	// 0 when off. It acts only under a per-process memory fraction.
	GarbageCollectionThreshold float64
	// ExpandableSegments is expandable_segments.
	ExpandableSegments bool
	// Divisions is roundup_power2_divisions per power-of-two interval:
	// Divisions[i] applies to sizes in [2^i, 2^(i+1)) MiB (the first also
	// below 1 MiB, the last also from 64 GiB); 0 or 1 means off.
	Divisions [roundupIntervals]int64
	// Rounding, when set, replaces torch's round_size (see [Rounding]).
	Rounding Rounding
}

// Default returns torch's defaults: no max_split_size, no power-of-two
// rounding, no garbage collection, expandable segments off.
func Default() Config {
	return Config{MaxSplitSize: math.MaxInt64, MaxNonSplitRounding: LargeBuffer}
}

// FromSettings returns the configuration a snapshot's allocator_settings
// describe (torch's defaults when st is nil, as before PyTorch 2.3).
// max_non_split_rounding is not among the recorded settings: it is read
// from the recorded PYTORCH_CUDA_ALLOC_CONF text when that names it.
func FromSettings(st *snapshot.AllocatorSettings) Config {
	c := Default()
	if st == nil {
		return c
	}
	if st.MaxSplitSize > 0 {
		c.MaxSplitSize = st.MaxSplitSize
	}
	c.ExpandableSegments = st.ExpandableSegments
	if g := st.GarbageCollectionThreshold; g > 0 && g < 1 {
		c.GarbageCollectionThreshold = g
	}
	for k, v := range st.RoundupPower2Divisions {
		if k <= 0 || k&(k-1) != 0 {
			continue
		}
		if i := bits.Len64(uint64(k)) - 1; i < roundupIntervals {
			c.Divisions[i] = v
		}
	}
	if strings.Contains(st.Conf, "max_non_split_rounding_mb") {
		if p, err := Parse(st.Conf); err == nil {
			c.MaxNonSplitRounding = p.MaxNonSplitRounding
		}
	}
	return c
}

// Keys returns the keys PYTORCH_CUDA_ALLOC_CONF accepts in torch 2.11:
// those of AcceleratorAllocatorConfig (c10/core/AllocatorConfig.h, keys_)
// and those CUDAAllocatorConfig::parseArgs adds, in the order torch's
// documentation lists them.
func Keys() []string {
	return []string{
		"backend",
		"max_split_size_mb",
		"max_non_split_rounding_mb",
		"roundup_power2_divisions",
		"garbage_collection_threshold",
		"expandable_segments",
		"release_lock_on_cudamalloc",
		"pinned_use_cuda_host_register",
		"pinned_num_register_threads",
		"pinned_reserve_segment_size_mb",
		"pinned_use_background_threads",
		"graph_capture_record_stream_reuse",
	}
}

// ParseError is a PYTORCH_CUDA_ALLOC_CONF value torch would refuse.
type ParseError struct {
	Conf string
	Msg  string
}

// Error quotes the value and says what is wrong, each cut to its first
// 200 bytes and its length (a value of 200,000 characters made an error
// line of 400 KB).
func (e *ParseError) Error() string {
	return fmt.Sprintf("PYTORCH_CUDA_ALLOC_CONF %q: %s (valid keys: %s)", clip(e.Conf), clip(e.Msg), strings.Join(Keys(), ", "))
}

// clip is s cut to its first 200 bytes and its length when longer.
func clip(s string) string {
	if len(s) <= 256 {
		return s
	}
	return strings.ToValidUTF8(s[:200], "") + fmt.Sprintf("…(%d bytes)", len(s))
}

// Parse parses a PYTORCH_CUDA_ALLOC_CONF value as torch does
// (AcceleratorAllocatorConfig::parseArgs and CUDAAllocatorConfig::parseArgs,
// with ConfigTokenizer): comma-separated key:value pairs, whitespace
// ignored, list values in brackets, e.g.
// "expandable_segments:True,roundup_power2_divisions:[256:1,512:2,>:8]".
// Keys not named keep torch's defaults; "" is all defaults. An unknown
// key or a value torch would reject (max_split_size_mb under 20, a
// threshold outside (0, 1), divisions that are not powers of two,
// backend:cudaMallocAsync, which is not the caching allocator) returns a
// *ParseError.
func Parse(conf string) (Config, error) {
	c := Default()
	p := &parser{conf: conf, toks: tokenize(conf)}
	for p.i < len(p.toks) {
		key := p.toks[p.i]
		p.i++
		if err := p.expect(":", key); err != nil {
			return c, err
		}
		var err error
		switch key {
		case "max_split_size_mb":
			var v int64
			if v, err = p.sizeMB(key); err == nil {
				c.MaxSplitSize = v
			}
		case "max_non_split_rounding_mb":
			var v int64
			if v, err = p.sizeMB(key); err == nil {
				c.MaxNonSplitRounding = v
			}
		case "garbage_collection_threshold":
			var tok string
			if tok, err = p.value(key); err == nil {
				v, perr := strconv.ParseFloat(tok, 64)
				if perr != nil || !(v > 0 && v < 1) {
					err = p.fail("garbage_collection_threshold is %q; set it in (0.0, 1.0)", tok)
				} else {
					c.GarbageCollectionThreshold = v
				}
			}
		case "roundup_power2_divisions":
			err = p.divisions(&c.Divisions)
		case "expandable_segments":
			c.ExpandableSegments, err = p.boolean(key)
		case "backend":
			var tok string
			if tok, err = p.value(key); err == nil && tok != "native" {
				if tok == "cudaMallocAsync" {
					err = p.fail("backend:cudaMallocAsync is CUDA's own allocator, not the caching allocator snapview simulates")
				} else {
					err = p.fail("unknown allocator backend %q; options are native and cudaMallocAsync", tok)
				}
			}
		case "release_lock_on_cudamalloc", "release_lock_on_hipmalloc", "pinned_use_cuda_host_register",
			"pinned_use_hip_host_register", "pinned_use_background_threads", "graph_capture_record_stream_reuse":
			_, err = p.boolean(key)
		case "pinned_num_register_threads", "pinned_reserve_segment_size_mb":
			var tok string
			if tok, err = p.value(key); err == nil {
				v, perr := strconv.ParseUint(tok, 10, 64)
				switch {
				case perr != nil || v == 0:
					err = p.fail("%s is %q; expected a positive integer", key, tok)
				case key == "pinned_num_register_threads" && v&(v-1) != 0:
					err = p.fail("pinned_num_register_threads is %d; it has to be a power of 2", v)
				}
			}
		default:
			err = p.fail("unrecognized key %q", key)
		}
		if err != nil {
			return c, err
		}
		if p.i < len(p.toks) {
			if err := p.expect(",", key); err != nil {
				return c, err
			}
			if p.i == len(p.toks) {
				return c, p.fail("a ',' ends the value")
			}
		}
	}
	return c, nil
}

// tokenize mirrors ConfigTokenizer: ',', ':', '[' and ']' are tokens of
// their own, whitespace is dropped, the rest runs into words.
func tokenize(s string) []string {
	var toks []string
	var buf strings.Builder
	flush := func() {
		if buf.Len() > 0 {
			toks = append(toks, buf.String())
			buf.Reset()
		}
	}
	for _, r := range s {
		switch {
		case r == ',' || r == ':' || r == '[' || r == ']':
			flush()
			toks = append(toks, string(r))
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f':
		default:
			buf.WriteRune(r)
		}
	}
	flush()
	return toks
}

type parser struct {
	conf string
	toks []string
	i    int
}

func (p *parser) fail(format string, args ...any) error {
	return &ParseError{Conf: p.conf, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) expect(tok, after string) error {
	if p.i >= len(p.toks) || p.toks[p.i] != tok {
		got := "the end"
		if p.i < len(p.toks) {
			got = fmt.Sprintf("%q", p.toks[p.i])
		}
		return p.fail("expected '%s' after %q, found %s", tok, after, got)
	}
	p.i++
	return nil
}

// value returns the next token, which must be a word.
func (p *parser) value(key string) (string, error) {
	if p.i >= len(p.toks) || isPunct(p.toks[p.i]) {
		return "", p.fail("%s has no value", key)
	}
	p.i++
	return p.toks[p.i-1], nil
}

func isPunct(t string) bool { return t == "," || t == ":" || t == "[" || t == "]" }

func (p *parser) boolean(key string) (bool, error) {
	tok, err := p.value(key)
	if err != nil {
		return false, err
	}
	switch tok {
	case "True":
		return true, nil
	case "False":
		return false, nil
	}
	return false, p.fail("%s is %q; expected True or False", key, tok)
}

// sizeMB parses parseMaxSplitSize's and parseMaxNonSplitRoundingSize's
// value: whole MiB, at least kLargeBuffer (20 MiB); returned in bytes.
func (p *parser) sizeMB(key string) (int64, error) {
	tok, err := p.value(key)
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseUint(tok, 10, 64)
	if perr != nil && !isRangeErr(perr) {
		return 0, p.fail("%s is %q; expected a whole number of MiB", key, tok)
	}
	if v < LargeBuffer/mib {
		return 0, p.fail("%s is %d; it must be >= %d", key, v, LargeBuffer/mib)
	}
	if perr != nil || v >= math.MaxInt64/mib {
		return math.MaxInt64, nil
	}
	return int64(v) * mib, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// divisions mirrors parseRoundUpPower2Divisions: either one power of two
// for every interval, or a list [boundary:divisions, ...] where a
// boundary is an interval's start in MiB (a power of two) and ">" the
// intervals after the last boundary given; the first boundary's value also
// fills the intervals below it, and intervals not named stay 0.
func (p *parser) divisions(d *[roundupIntervals]int64) error {
	const key = "roundup_power2_divisions"
	if p.i < len(p.toks) && p.toks[p.i] == "[" {
		p.i++
		first, last := true, 0
		for {
			if p.i >= len(p.toks) {
				return p.fail("%s: expected ']'", key)
			}
			if p.toks[p.i] == "]" {
				p.i++
				return nil
			}
			bound := p.toks[p.i]
			p.i++
			if err := p.expect(":", bound); err != nil {
				return err
			}
			tok, err := p.value(key)
			if err != nil {
				return err
			}
			v, perr := strconv.ParseUint(tok, 10, 64)
			if perr != nil || (v != 0 && v&(v-1) != 0) || v > 1<<32 {
				return p.fail("%s: divisions %q must be a power of 2, or 0 to disable rounding", key, tok)
			}
			if bound == ">" {
				for i := last + 1; i < roundupIntervals; i++ {
					d[i] = int64(v)
				}
			} else {
				b, berr := strconv.ParseUint(bound, 10, 64)
				if berr != nil || b == 0 || b&(b-1) != 0 {
					return p.fail("%s: interval %q must be a power of 2 (MiB) or '>'", key, bound)
				}
				idx := min(bits.Len64(b)-1, roundupIntervals-1)
				if first {
					for i := range idx {
						d[i] = int64(v)
					}
					first = false
				}
				d[idx] = int64(v)
				last = idx
			}
			if p.i < len(p.toks) && p.toks[p.i] != "]" {
				if err := p.expect(",", key); err != nil {
					return err
				}
			}
		}
	}
	tok, err := p.value(key)
	if err != nil {
		return err
	}
	v, perr := strconv.ParseUint(tok, 10, 64)
	if perr != nil || v == 0 || v&(v-1) != 0 || v > 1<<32 {
		return p.fail("%s: divisions %q must be a power of 2", key, tok)
	}
	for i := range d {
		d[i] = int64(v)
	}
	return nil
}

// String renders c as a PYTORCH_CUDA_ALLOC_CONF value naming only the
// settings that differ from torch's defaults, in a fixed order, so that
// equal configurations print alike ("" for the defaults). It parses back
// to c (but for Rounding, which has no torch key).
func (c Config) String() string {
	var parts []string
	if c.ExpandableSegments {
		parts = append(parts, "expandable_segments:True")
	}
	if c.MaxSplitSize != math.MaxInt64 {
		parts = append(parts, fmt.Sprintf("max_split_size_mb:%d", c.MaxSplitSize/mib))
	}
	if c.MaxNonSplitRounding != LargeBuffer {
		parts = append(parts, fmt.Sprintf("max_non_split_rounding_mb:%d", c.MaxNonSplitRounding/mib))
	}
	if c.GarbageCollectionThreshold > 0 {
		parts = append(parts, "garbage_collection_threshold:"+strconv.FormatFloat(c.GarbageCollectionThreshold, 'g', -1, 64))
	}
	if s := divisionsString(c.Divisions); s != "" {
		parts = append(parts, "roundup_power2_divisions:"+s)
	}
	return strings.Join(parts, ",")
}

// divisionsString renders roundup_power2_divisions: "" when off, one
// number when every interval has it, else the list form.
func divisionsString(d [roundupIntervals]int64) string {
	uniform, off := true, true
	for _, v := range d {
		uniform = uniform && v == d[0]
		off = off && v <= 1
	}
	switch {
	case off && uniform && d[0] == 0:
		return ""
	case uniform:
		return strconv.FormatInt(d[0], 10)
	}
	// The first entry fills the intervals below it: start at the last of
	// the leading run of equal values. A trailing run of equal values
	// after the previous entry becomes ">".
	start := 0
	for start+1 < roundupIntervals && d[start+1] == d[0] {
		start++
	}
	end := roundupIntervals - 1
	for end-1 > start && d[end-1] == d[roundupIntervals-1] {
		end--
	}
	var items []string
	for i := start; i < end; i++ {
		items = append(items, fmt.Sprintf("%d:%d", int64(1)<<i, d[i]))
	}
	items = append(items, fmt.Sprintf(">:%d", d[roundupIntervals-1]))
	return "[" + strings.Join(items, ",") + "]"
}

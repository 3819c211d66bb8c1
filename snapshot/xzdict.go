package snapshot

import (
	"bufio"
	"fmt"

	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/internal/xzguard"
)

// Bounds on the dictionary an xz file may ask for (checkXZDict).
// github.com/ulikunitz/xz allocates the dictionary its block header names
// (up to 4 GiB) whatever ReaderConfig.DictCap says, before reading a byte
// of data.
const (
	// xzDictFree is a dictionary always allowed: xz -9's (64 MiB).
	xzDictFree = 64 << 20
	// xzDictMax is the largest dictionary xz writes (--lzma2=dict=1536MiB).
	xzDictMax = 1536 << 20
)

// checkXZDict reads the LZMA2 dictionary size from the block header of
// the xz stream at the start of br (the xz file format 1.0.4, sections
// 2.1.1 and 3.1, and the LZMA2 filter's properties, 5.3.1) and refuses a
// dictionary larger than the data could fill (xzDictAllowed). A header it
// cannot read is left to the xz reader to report. The blocks after the
// first are checked as the xz reader comes to them (xzguard.Reader).
func checkXZDict(br *bufio.Reader, size int64, lim Limits) error {
	allowed := xzDictAllowed(size, lim)
	if allowed < 0 {
		return nil
	}
	dict, ok := xzguard.FirstDict(br)
	if !ok {
		return nil
	}
	return xzDictError(dict, allowed, size)
}

// xzDictAllowed is the largest dictionary an xz file of size bytes (0:
// unknown) may ask for: xzDictFree, or more up to DefaultMaxRatio times
// its size (xzDictMax when unknown), or Limits.MaxDecompressed when set;
// -1 when the check is off (MaxDecompressed -1).
func xzDictAllowed(size int64, lim Limits) int64 {
	if lim.MaxDecompressed < 0 {
		return -1
	}
	allowed := int64(xzDictMax)
	switch {
	case lim.MaxDecompressed > 0:
		allowed = lim.MaxDecompressed
	case size > 0:
		allowed = min(allowed, DefaultMaxRatio*size)
	}
	return max(allowed, xzDictFree)
}

// xzDictError is the limit's error for a dictionary of dict bytes over
// allowed, nil when it is within.
func xzDictError(dict, allowed, size int64) error {
	if dict <= allowed {
		return nil
	}
	of := ""
	if size > 0 {
		of = " for a file of " + units.Bytes(size)
	}
	return &LimitError{Limit: "xz dictionary",
		Detail: fmt.Sprintf("the xz data asks for a dictionary of %s%s, more than %s (xz -9 uses 64 MiB)", units.Bytes(dict), of, units.Bytes(allowed)),
		Hint:   "if the file is genuine, raise the limit with --max-decompressed"}
}

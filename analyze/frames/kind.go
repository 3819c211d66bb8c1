package frames

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/snapview/snapview/snapshot"
)

// FrameKind says where a stack frame's code lives, for folding stacks down
// to the frames a user wrote.
type FrameKind uint8

const (
	// FrameUser is a Python frame outside torch/ and the standard library:
	// the user's code, or a third-party library's.
	FrameUser FrameKind = iota
	// FrameTorch is a Python frame inside a torch/ directory.
	FrameTorch
	// FrameStdlib is a Python frame of the Python standard library
	// (lib/python3.X/ outside site-packages, <frozen ...>).
	FrameStdlib
	// FrameCpp is a C++ frame (stacks="all"): line 0, filename "??", "" or
	// a C++ file.
	FrameCpp
	// FrameNoise is a C++ frame of the unwinder or the interpreter loop,
	// which _memory_viz and MemoryViz drop from every stack (_frame_filter,
	// snapshot-format.md 4.2).
	FrameNoise
)

// String names the kind as the text views label folded frames.
func (k FrameKind) String() string {
	switch k {
	case FrameUser:
		return "user"
	case FrameTorch:
		return "torch"
	case FrameStdlib:
		return "stdlib"
	case FrameCpp:
		return "C++"
	case FrameNoise:
		return "unwinder"
	}
	return "unknown"
}

// Folded reports whether frames of kind k are folded away from a user's
// view of a stack.
func (k FrameKind) Folded() bool { return k != FrameUser }

// noiseNames and noiseFiles are _memory_viz's _frame_filter lists
// (torch/cuda/_memory_viz.py, the same as MemoryViz.js frameFilter).
var (
	noiseNames = []string{
		"unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "_start",
		"__libc_start_main", "PyEval_", "PyObject_", "PyFunction_",
	}
	noiseFiles = []string{
		"core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c",
		"Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h", "ceval.c",
		"cpython/abstract.h",
	}
	// Installed packages: the first directory after the last
	// site-packages/ or dist-packages/ names the package.
	packagesDir = regexp.MustCompile(`[/\\](site|dist)-packages[/\\]`)
	torchDir    = regexp.MustCompile(`(^|[/\\])torch[/\\]`)
	// The standard library: lib/python3.X/ on Unix, Lib\ on Windows, but
	// not the packages installed next to it.
	stdlibDir = regexp.MustCompile(`(^|/)lib(64)?/python\d+(\.\d+)?t?/|(^|\\)Lib\\`)
)

// ClassifyFrame returns where f's code lives. A frame is C or C++ when its
// line is 0 or less (PyTorch records C++ frames with line 0), its file is
// unknown ("??", "") or a C or C++ source (CPython's own frames carry
// lines when it has debug information); _frame_filter's name list is
// applied to those only, so that a Python function called, say,
// train_start is not taken for the C runtime's _start.
func ClassifyFrame(f snapshot.Frame) FrameKind {
	if f.Line <= 0 || isNativeFile(f.Filename) {
		for _, n := range noiseNames {
			if strings.Contains(f.Name, n) {
				return FrameNoise
			}
		}
		for _, n := range noiseFiles {
			if strings.Contains(f.Filename, n) {
				return FrameNoise
			}
		}
		return FrameCpp
	}
	fn := f.Filename
	if strings.HasPrefix(fn, "<frozen ") {
		return FrameStdlib
	}
	if locs := packagesDir.FindAllStringIndex(fn, -1); locs != nil {
		pkg := fn[locs[len(locs)-1][1]:]
		if strings.HasPrefix(pkg, "torch/") || strings.HasPrefix(pkg, `torch\`) {
			return FrameTorch
		}
		return FrameUser
	}
	if torchDir.MatchString(fn) {
		// A source checkout (pytorch/torch/...) or a relative path.
		return FrameTorch
	}
	if loc := stdlibDir.FindStringIndex(fn); loc != nil {
		rest := fn[loc[1]:]
		if !strings.HasPrefix(rest, "site-packages") && !strings.HasPrefix(rest, "dist-packages") {
			return FrameStdlib
		}
	}
	return FrameUser
}

// nativeExts are the extensions of C, C++ and CUDA sources and headers.
var nativeExts = []string{".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".cu", ".cuh"}

// isNativeFile reports whether a frame's file is unknown or a C, C++ or
// CUDA source.
func isNativeFile(fn string) bool {
	if fn == "" || fn == "??" {
		return true
	}
	for _, ext := range nativeExts {
		if strings.HasSuffix(fn, ext) {
			return true
		}
	}
	return false
}

// FrameKinds classifies every frame of s once.
func FrameKinds(s *snapshot.Snapshot) []FrameKind {
	kinds := make([]FrameKind, len(s.Frames))
	for i, f := range s.Frames {
		kinds[i] = ClassifyFrame(f)
	}
	return kinds
}

// FrameText formats a frame as the leak views print it and as --focus and
// --ignore match it: "filename:line name".
func FrameText(f snapshot.Frame) string {
	var b strings.Builder
	b.Grow(len(f.Filename) + len(f.Name) + 8)
	b.WriteString(f.Filename)
	b.WriteByte(':')
	b.WriteString(strconv.FormatInt(f.Line, 10))
	b.WriteByte(' ')
	b.WriteString(f.Name)
	return b.String()
}

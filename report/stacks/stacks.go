package stacks

import (
	"fmt"
	"github.com/snapview/snapview/internal/units"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// How every view (leaks, state, the HTML report) shows an allocation
// stack: the user's frames, runs of frames inside torch/ or the standard
// library folded into one line, the unwinder's frames (_memory_viz's
// _frame_filter) and the allocator's own frames left out, C++ names cut
// short.

// NoStackText stands for a stack without recorded frames, in every view.
const NoStackText = "<no stack recorded>"

// LineOptions says how [stackLines] shows a stack.
type LineOptions struct {
	// Full prints every frame as "filename:line name", nothing folded or
	// left out.
	Full bool
	// Limit is the most lines, the "... N more lines" line included; 0
	// prints them all.
	Limit int
	// More says, in the "... N more lines" line, how to see them all
	// ("--full shows every frame").
	More string
	// Raw, with Full, gives the frames as the file has them, control
	// characters unescaped (for JSON, which escapes them itself).
	Raw bool
}

// FrameTable holds what the stack views need of each distinct frame,
// worked out once when first asked for: a frame shared by a thousand
// stacks (or a 1 MiB name) is classified and shortened once, not at each
// of its occurrences.
type FrameTable struct {
	s    *snapshot.Snapshot
	info []*frameInfo
	// regions maps inductor's generated files to the compiled region
	// they ran in (frames.InductorRegions), built with info.
	regions map[string]string
}

// frameInfo is one frame as the stack views show it: its file and name
// with control characters escaped (see kit.Escape), its kind, its short C++
// name, and whether it is the allocator's, the dispatcher's glue, or an
// autograd node's function.
type frameInfo struct {
	frame snapshot.Frame
	text  string
	kind  frames.FrameKind
	short string
	alloc bool
	glue  bool
	node  string
	// line is the frame's line in a stack as a user frame (see
	// userLine), "" until asked for.
	line string
}

// userLine is the frame's line when shown whole: "path:line name", an
// installed package's path shortened (a regexp over the path: once per
// frame, not per stack).
func (fi *frameInfo) userLine() string {
	if fi.line == "" {
		f := fi.frame
		fi.line = clipLine(clipPath(shortFilename(f.Filename)) + ":" + strconv.FormatInt(f.Line, 10) + " " + f.Name)
	}
	return fi.line
}

// NewFrameTable returns an empty FrameTable over s: each frame is classified
// and written once, when a stack first names it.
func NewFrameTable(s *snapshot.Snapshot) *FrameTable {
	return &FrameTable{s: s}
}

func (t *FrameTable) get(id snapshot.FrameID) *frameInfo {
	if t.info == nil {
		t.info = make([]*frameInfo, len(t.s.Frames))
		t.regions = frames.InductorRegions(t.s)
	}
	if fi := t.info[id]; fi != nil {
		return fi
	}
	raw := t.s.Frames[id]
	f := snapshot.Frame{Filename: kit.Escape(raw.Filename), Line: raw.Line, Name: kit.Escape(raw.Name)}
	if frames.InductorFile(raw.Filename) {
		// a temporary path: named by the region its code ran in, or as
		// generated code outside any
		f.Filename = kit.Escape(frames.InductorName(raw.Filename, t.regions[raw.Filename]))
	}
	fi := &frameInfo{frame: f, text: frames.FrameText(f), kind: frames.ClassifyFrame(raw)}
	if fi.kind == frames.FrameCpp || fi.kind == frames.FrameNoise {
		fi.short = shortCppName(f.Name)
		fi.alloc = isAllocatorFrame(raw)
		fi.glue = dispatchGlue.MatchString(fi.short)
		if m := autogradNode.FindStringSubmatch(fi.short); m != nil {
			fi.node = m[1]
		}
	}
	t.info[id] = fi
	return fi
}

// Widths that keep a stack line within about 160 columns.
const (
	// maxCppName is the longest C++ function name printed.
	maxCppName = 80
	// maxStackPath is the longest filename printed; longer ones keep
	// their end.
	maxStackPath = 100
	// maxStackLine is the longest stack line.
	maxStackLine = 150
)

// LinesOf returns the lines that show a stack, innermost frame first:
// with o.Full every frame as "filename:line name"; otherwise the user's
// frames, each run of frames inside torch/ or the standard library folded
// into one line such as "(torch) functional.py:1723 relu, _call_impl",
// C++ frames, the unwinder's and the allocator's left out, installed
// packages' paths shortened. A stack without frames of the user shows all
// its frames but the unwinder's and the allocator's, C++ ones by their
// short name. A stack without recorded frames is "<no stack recorded>".
func LinesOf(s *snapshot.Snapshot, id snapshot.StackID, o LineOptions) []string {
	return NewFrameTable(s).Lines(id, o)
}

// lines is stackLines with the frames' facts from t.
func (t *FrameTable) Lines(id snapshot.StackID, o LineOptions) []string {
	s := t.s
	stack := s.Stack(id)
	if len(stack) == 0 {
		return []string{NoStackText}
	}
	var out []string
	if o.Full {
		for _, f := range stack {
			if o.Raw {
				out = append(out, frames.FrameText(s.Frames[f]))
			} else {
				out = append(out, t.get(f).text)
			}
		}
		return out
	}
	hasUser := false
	for _, f := range stack {
		if t.get(f).kind == frames.FrameUser {
			hasUser = true
			break
		}
	}
	var run []snapshot.Frame
	runKind := frames.FrameUser
	var glue []string // the dispatcher's frames in a row
	flush := func() {
		if len(run) > 0 {
			out = append(out, clipLine(foldedRun(runKind, run)))
			run = run[:0]
		}
		if len(glue) > 0 {
			out = append(out, clipLine(dispatchRun(glue)))
			glue = glue[:0]
		}
	}
	for _, fid := range stack {
		fi := t.get(fid)
		f := fi.frame
		switch k := fi.kind; {
		case k == frames.FrameNoise || hasUser && k == frames.FrameCpp:
		case k == frames.FrameCpp:
			if fi.alloc {
				continue
			}
			name := fi.short
			if fi.glue {
				if len(run) > 0 {
					flush()
				}
				glue = append(glue, name)
				continue
			}
			flush()
			if len(out) == 0 || out[len(out)-1] != name {
				out = append(out, name)
			}
		case k == frames.FrameUser || !hasUser:
			flush()
			out = append(out, fi.userLine())
		default:
			if k != runKind || len(glue) > 0 {
				flush()
				runKind = k
			}
			run = append(run, f)
		}
	}
	flush()
	if len(out) == 0 {
		// Nothing but the unwinder and the allocator: the allocator's
		// innermost frame.
		out = append(out, t.Where(id))
	}
	// At least one frame is kept, and a "... 1 more line" would take the
	// place of the line it hides (--frames 1 on two lines): show it.
	if keep := max(o.Limit-1, 1); o.Limit > 0 && len(out) > o.Limit && len(out)-keep > 1 {
		more := "... " + units.Count(len(out)-keep, "more line", "more lines")
		if o.More != "" {
			more += " (" + o.More + ")"
		}
		out = append(out[:keep], more)
	}
	return out
}

// Where names a stack in one line: its innermost user frame as
// "file.py:12 function", with the innermost folded function it called
// ("(via relu)"). A stack without user frames (a C++-only stack, e.g.
// from the autograd engine's thread with stacks="all") is named by its
// first frame that is neither the unwinder, the allocator nor the
// dispatcher's glue, with the autograd node it ran in ("(in
// AddmmBackward0)").
func Where(s *snapshot.Snapshot, id snapshot.StackID) string {
	return NewFrameTable(s).Where(id)
}

// BranchFrame names the frame at which stack id leaves stack other,
// "adam.py:182 _init_group": walking both from their outermost frame,
// the first of id's frames that other does not have at the same depth.
// It tells apart two stacks that [FrameTable.Where] names alike. "" when
// id has no frame other lacks (a prefix of other, or the same stack).
func (t *FrameTable) BranchFrame(id, other snapshot.StackID) string {
	a, b := t.s.Stack(id), t.s.Stack(other)
	for k := 1; k <= len(a); k++ {
		fa := a[len(a)-k]
		if k <= len(b) && b[len(b)-k] == fa {
			continue
		}
		fi := t.get(fa)
		f := fi.frame
		if k <= len(b) {
			if fb := t.get(b[len(b)-k]).frame; fb == f {
				continue // the same frame under another id
			}
		}
		if fi.kind == frames.FrameCpp && fi.short != "" {
			return clipLine(fi.short)
		}
		return clipLine(baseName(f.Filename) + ":" + strconv.FormatInt(f.Line, 10) + " " + f.Name)
	}
	return ""
}

// where is Where with the frames' facts from t.
func (t *FrameTable) Where(id snapshot.StackID) string {
	stack := t.s.Stack(id)
	if len(stack) == 0 {
		return NoStackText
	}
	via := ""
	for _, fid := range stack {
		fi := t.get(fid)
		f := fi.frame
		switch fi.kind {
		case frames.FrameUser:
			out := baseName(f.Filename) + ":" + strconv.FormatInt(f.Line, 10) + " " + f.Name
			if via != "" {
				out += " (via " + via + ")"
			}
			return clipLine(out)
		case frames.FrameTorch, frames.FrameStdlib:
			if via == "" {
				via = f.Name
			}
		}
	}
	name, first, node := "", "", ""
	for _, fid := range stack {
		fi := t.get(fid)
		f := fi.frame
		k := fi.kind
		if k == frames.FrameNoise {
			continue
		}
		if k != frames.FrameCpp {
			if name == "" {
				name = baseName(f.Filename) + ":" + strconv.FormatInt(f.Line, 10) + " " + f.Name
			}
			continue
		}
		short := fi.short
		if first == "" {
			first = short
		}
		if fi.node != "" && node == "" {
			node = fi.node
		}
		if name == "" && !fi.alloc && !fi.glue {
			name = short
		}
	}
	switch {
	case name == "" && first == "":
		return clipLine(t.get(stack[0]).text)
	case name == "":
		name = first
	}
	if node != "" && !strings.Contains(name, node) {
		name += " (in " + node + ")"
	}
	return clipLine(name)
}

var (
	// allocatorName matches the short names of the frames between an
	// allocation and the caching allocator: at::empty and its CUDA
	// implementations, and the output allocation of structured kernels
	// and TensorIterator (create_out, set_output_raw_strided).
	allocatorName = regexp.MustCompile(`^(at::TensorBase )?at::(detail|native)::_?empty(_strided)?_(generic|cuda|xpu|mps|meta|cpu)(<.*>)?$` +
		`|^at::(\{anon\}::)+(wrapper_\w+_(memory_format_empty|empty_strided|empty)|create_out)$` +
		`|::set_output_raw_strided$`)
	// dispatchGlue matches the dispatcher's frames between operators:
	// they say nothing about what allocated.
	dispatchGlue = regexp.MustCompile(`^(c10::impl::|c10::Dispatcher::|at::_ops::|c10::BoxedKernel::|torch::autograd::VariableType::)`)
	// dispatchOp matches the dispatcher's entry points of an operator.
	dispatchOp = regexp.MustCompile(`^at::_ops::(\w+)::`)
	// autogradNode matches the function of an autograd node: a backward
	// function, or the accumulation of a leaf's gradient.
	autogradNode = regexp.MustCompile(`^torch::autograd::(?:generated::)?(\w+Backward\d*|AccumulateGrad)(::apply|_apply_functional)$`)
)

// isAllocatorFrame reports whether f is a C++ frame of the caching
// allocator or of the allocation plumbing that calls it (at::empty and
// its CUDA implementations), which every stack of stacks="all" starts
// with.
func isAllocatorFrame(f snapshot.Frame) bool {
	if strings.Contains(f.Name, "CachingAllocator::") || strings.Contains(f.Filename, "CachingAllocator") {
		return true
	}
	return allocatorName.MatchString(shortCppName(f.Name))
}

// paramList returns where the parameter list of a demangled name starts:
// the first '(' outside template arguments ("f<std::function<void
// (int)> >(...)"), else the first '(', -1 without one.
func paramList(name string) int {
	depth := 0
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '<':
			depth++
		case '>':
			depth = max(depth-1, 0)
		case '(':
			if strings.HasSuffix(name[:i], "operator") && strings.HasPrefix(name[i:], "()") {
				i++ // operator()(...)
				continue
			}
			if depth == 0 {
				return i
			}
		}
	}
	return strings.IndexByte(name, '(')
}

// dispatchRun is the line of a run of the dispatcher's frames: the
// operators they dispatch, "(dispatch) mm, addmm", or how many frames.
func dispatchRun(names []string) string {
	var ops []string
	for _, n := range names {
		if m := dispatchOp.FindStringSubmatch(n); m != nil && !slices.Contains(ops, m[1]) {
			ops = append(ops, m[1])
		}
	}
	if len(ops) == 0 {
		return fmt.Sprintf("(dispatch) %d frames", len(names))
	}
	return "(dispatch) " + strings.Join(ops, ", ")
}

// shortCppName drops the parameter list of a demangled C++ name and cuts
// it to maxCppName characters: "at::native::add_out(at::Tensor const&,
// ...)" is "at::native::add_out".
func shortCppName(name string) string {
	name = strings.ReplaceAll(name, "(anonymous namespace)", "{anon}")
	if i := paramList(name); i > 0 {
		name = name[:i]
	}
	return clip(name, maxCppName)
}

// foldedRun is the line of a run of folded frames: the kind, the
// innermost frame as "file.py:line name" (it tells apart two stacks that
// differ only there), and the names of the next ones.
func foldedRun(k frames.FrameKind, run []snapshot.Frame) string {
	const maxNames = 3
	names := []string{baseName(run[0].Filename) + ":" + strconv.FormatInt(run[0].Line, 10) + " " + run[0].Name}
	for i, f := range run[1:] {
		if i+1 == maxNames {
			names = append(names, fmt.Sprintf("+%d more", len(run)-maxNames))
			break
		}
		names = append(names, f.Name)
	}
	return "(" + k.String() + ") " + strings.Join(names, ", ")
}

// packagePath cuts an installed package's path down to the package.
var packagePath = regexp.MustCompile(`^.*[/\\](site|dist)-packages[/\\]`)

// shortFilename shortens an installed package's filename to the path
// inside site-packages; other paths are kept whole.
func shortFilename(fn string) string {
	return packagePath.ReplaceAllString(fn, "")
}

// clipPath shortens a path longer than maxStackPath to "..." and its
// last elements.
func clipPath(p string) string {
	if len(p) <= maxStackPath {
		return p
	}
	tail := p[len(p)-(maxStackPath-3):]
	if i := strings.IndexAny(tail, `/\`); i >= 0 {
		tail = tail[i:]
	}
	return "..." + tail
}

// clipLine cuts a stack line to maxStackLine characters.
func clipLine(s string) string { return clip(s, maxStackLine) }

// clip cuts s to at most n bytes, the last three "...", on a UTF-8
// boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}

// baseName returns the last element of a Unix or Windows path.
func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

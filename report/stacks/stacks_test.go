package stacks

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/snapshot"
)

// cppStackSnapshot holds stacks as stacks="all" records them (frames from
// the torch 2.11 two_devices recording): the unwinder, the allocator,
// at::empty's plumbing, then the operator, the dispatcher and the
// autograd engine; and a Python stack with C++ frames in between.
func cppStackSnapshot() *snapshot.Snapshot {
	const torch = "/opt/torch/.venv/lib/python3.12/site-packages/torch/"
	long := "/home/someone/projects/" + strings.Repeat("deeply/nested/", 10) + "train.py"
	return &snapshot.Snapshot{
		Frames: []snapshot.Frame{
			{Filename: "??", Name: "torch::unwind::unwind()"}, // 0
			{Filename: "??", Name: "torch::CapturedTraceback::gather(bool, bool, bool)"},
			{Filename: "memory_snapshot.cpp", Name: "torch::cuda::(anonymous namespace)::gather_with_cpp()"},
			{Filename: "CUDACachingAllocator.cpp", Name: "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, CUstream_st*)"},
			{Filename: "", Name: "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)"},
			{Filename: "??", Name: "at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet)"}, // 5
			{Filename: "??", Name: "at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)"},
			{Filename: "??", Name: "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)"},
			{Filename: "RegisterCUDA_0.cpp", Name: "at::(anonymous namespace)::create_out(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::TensorOptions const&)"},
			{Filename: "RegisterCUDA_0.cpp", Name: "at::(anonymous namespace)::structured_mm_out_cuda_functional::set_output_raw_strided(long, c10::ArrayRef<long>)"},
			{Filename: "??", Name: "at::meta::structured_mm::meta(at::Tensor const&, at::Tensor const&)"}, // 10
			{Filename: "RegisterCUDA_0.cpp", Name: "c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor (at::Tensor const&, at::Tensor const&), &at::(anonymous namespace)::wrapper_CUDA_mm>, at::Tensor, c10::guts::typelist::typelist<at::Tensor const&, at::Tensor const&> >, at::Tensor (at::Tensor const&, at::Tensor const&)>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)"},
			{Filename: "??", Name: "at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"},
			{Filename: "Functions.cpp", Name: "torch::autograd::generated::AddmmBackward0_apply_functional(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"},
			{Filename: "??", Name: "torch::autograd::generated::AddmmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"},
			{Filename: "??", Name: "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"}, // 15
			{Filename: "??", Name: "__clone"},
			{Filename: torch + "nn/modules/linear.py", Line: 134, Name: "forward"},
			{Filename: "??", Name: "cfunction_call"},
			{Filename: long, Line: 7, Name: "main"},
			{Filename: "??", Name: "at::cuda::setWorkspaceForHandle()"}, // 20
		},
		Stacks: [][]snapshot.FrameID{
			{},
			{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
			{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 18, 17, 18, 19},
			{0, 1, 2, 3, 4},
			{0, 1, 2, 3, 4, 20, 11, 12, 15},
		},
	}
}

func TestStackLinesCpp(t *testing.T) {
	s := cppStackSnapshot()
	autograd := []string{
		"at::meta::structured_mm::meta",
		"(dispatch) mm", // the dispatcher's frames folded, by operator
		"torch::autograd::generated::AddmmBackward0_apply_functional",
		"torch::autograd::generated::AddmmBackward0::apply",
		"torch::autograd::Engine::thread_main",
		"__clone",
	}
	tests := []struct {
		name  string
		stack snapshot.StackID
		o     LineOptions
		want  []string
	}{
		{"empty", 0, LineOptions{}, []string{"<no stack recorded>"}},
		{"C++ only: no unwinder, allocator or at::empty", 1, LineOptions{}, autograd},
		{"limit counts lines", 1, LineOptions{Limit: 3, More: "--frames 0 shows them all"},
			[]string{autograd[0], autograd[1], "... 4 more lines (--frames 0 shows them all)"}},
		{"user frames: C++ left out", 2, LineOptions{},
			[]string{"(torch) linear.py:134 forward", "..." + strings.Repeat("/deeply/nested", 6) + "/train.py:7 main"}},
		{"nothing but the allocator", 3, LineOptions{}, []string{"c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"}},
	}
	for _, tt := range tests {
		got := LinesOf(s, tt.stack, tt.o)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: stackLines mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
	for id := range s.Stacks {
		for _, l := range LinesOf(s, snapshot.StackID(id), LineOptions{}) {
			if len(l) > 160 {
				t.Errorf("stack %d: line of %d characters: %q", id, len(l), l)
			}
		}
	}
}

func TestStackWhere(t *testing.T) {
	s := cppStackSnapshot()
	for _, tt := range []struct {
		stack snapshot.StackID
		want  string
	}{
		{0, "<no stack recorded>"},
		{1, "at::meta::structured_mm::meta (in AddmmBackward0)"},
		{2, "train.py:7 main (via forward)"},
		{3, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"},
		{4, "at::cuda::setWorkspaceForHandle"},
	} {
		if got := Where(s, tt.stack); got != tt.want {
			t.Errorf("Where(%d) = %q, want %q", tt.stack, got, tt.want)
		}
	}
}

func TestShortCppName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"at::native::add_out(at::Tensor const&, at::Tensor&)", "at::native::add_out"},
		{"at::(anonymous namespace)::create_out(c10::ArrayRef<long>)", "at::{anon}::create_out"},
		{"torch::autograd::Node::operator()(std::vector<at::Tensor>&&)", "torch::autograd::Node::operator()"},
		{"void f<std::function<void (at::Tensor&&)> >(int)", "void f<std::function<void (at::Tensor&&)> >"},
		{"__clone", "__clone"},
		{strings.Repeat("x", 200), strings.Repeat("x", maxCppName-3) + "..."},
	} {
		if got := shortCppName(tt.in); got != tt.want {
			t.Errorf("shortCppName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghijkl", 10, "abcdefg..."},
		{"aaaaa\u00e9\u00e9x", 9, "aaaaa..."}, // not inside the two-byte é
	} {
		if got := clip(tt.in, tt.n); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

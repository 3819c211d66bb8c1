package report

import "strings"

// AnnotationLabel joins the user_metadata of an allocation's annotate
// entries (torch.cuda.memory._annotate_tensor, pytorch/pytorch#190575) into
// one label, in trace order, "; " between them; "" when there are none.
// Annotations accumulate in PyTorch (torch/cuda/memory.py
// _annotate_memory), so every one is shown, not only the last.
func AnnotationLabel(annotations []string) string {
	return strings.Join(annotations, "; ")
}

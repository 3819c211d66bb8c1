package monitor

import (
	"errors"
	"testing"

	"github.com/snapview/snapview/analysis"
)

// TestGPUFor: the GPU of a CUDA device in an nvidia-smi log: --gpu, the
// same index, the only GPU; a usage error where it cannot be told.
func TestGPUFor(t *testing.T) {
	tests := []struct {
		name    string
		gpus    []int
		device  int
		flag    int
		flagSet bool
		several bool
		gpu     int
		ok      bool
		usage   bool
	}{
		{"same index", []int{0, 1}, 1, 0, false, false, 1, true, false},
		{"only GPU", []int{3}, 0, 0, false, false, 3, true, false},
		{"--gpu", []int{2, 3}, 0, 3, true, false, 3, true, false},
		{"--gpu missing", []int{2, 3}, 0, 5, true, false, 0, false, true},
		{"--gpu with several devices", []int{0, 1}, 0, 1, true, true, 0, false, true},
		{"several devices, none of the index", []int{0}, 1, 0, false, true, 0, false, false},
		{"several devices, the index", []int{0, 1}, 1, 0, false, true, 1, true, false},
		{"one device, several GPUs, none of the index", []int{2, 3}, 0, 0, false, false, 0, false, true},
	}
	for _, tt := range tests {
		gpu, ok, err := GPUFor(tt.gpus, tt.device, tt.flag, tt.flagSet, tt.several)
		var ue *analysis.UsageError
		if gpu != tt.gpu || ok != tt.ok || (err != nil) != tt.usage || (err != nil && !errors.As(err, &ue)) {
			t.Errorf("%s: got %d, %v, %v; want %d, %v, usage error %v", tt.name, gpu, ok, err, tt.gpu, tt.ok, tt.usage)
		}
	}
}

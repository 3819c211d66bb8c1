package replay

import (
	"slices"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"

	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// TestAllocationsModeIsFullLessSeries: an Allocations replay keeps what a
// Full one keeps (the Allocated series, Allocs, OOMs, the peaks and their
// entries, the figures) but not the Active, Reserved and Requested series,
// on every device of the corpus's recordings.
func TestAllocationsModeIsFullLessSeries(t *testing.T) {
	compared := 0
	for _, ss := range SharedSnapshots(t) {
		s, err := snapshot.Load(ss.Path)
		if err != nil {
			continue // the hostile and the unreadable are other tests'
		}
		for _, dev := range s.Devices() {
			full, err := Run(s, dev, Options{})
			if err != nil {
				continue
			}
			al, err := Run(s, dev, Options{Mode: Allocations})
			if err != nil {
				t.Fatalf("%s device %d: %v", ss.Name, dev, err)
			}
			if al.Active != nil || al.Reserved != nil || al.Requested != nil {
				t.Errorf("%s device %d: Allocations kept a series it leaves out", ss.Name, dev)
			}
			switch {
			case !slices.Equal(al.Allocated, full.Allocated):
				t.Errorf("%s device %d: Allocated series differs", ss.Name, dev)
			case al.PeakIndex != full.PeakIndex || al.PeakReservedIndex != full.PeakReservedIndex || al.Peaks() != full.Peaks():
				t.Errorf("%s device %d: peaks %d/%d %+v, Full %d/%d %+v", ss.Name, dev,
					al.PeakIndex, al.PeakReservedIndex, al.Peaks(), full.PeakIndex, full.PeakReservedIndex, full.Peaks())
			case len(al.Allocs) != len(full.Allocs) || !slices.Equal(al.OOMs, full.OOMs):
				t.Errorf("%s device %d: %d allocs %v OOMs, Full %d %v", ss.Name, dev, len(al.Allocs), al.OOMs, len(full.Allocs), full.OOMs)
			case al.Stats.AllocatedBytes != full.Stats.AllocatedBytes || al.Stats.ReservedBytes != full.Stats.ReservedBytes:
				t.Errorf("%s device %d: figures differ", ss.Name, dev)
			}
			compared++
		}
	}
	corpus.AtLeast(t, "devices replayed in both modes", compared, 60)
}

package monitor

import (
	"slices"

	"github.com/snapview/snapview/analyze/stats"
)

// StepsDevice is one device's records of a memory_stats() log, with the
// verdicts on them.
type StepsDevice struct {
	Device  int
	Records []StatsRecord
	// XIsStep says the climbs' x values are the records' "step" fields
	// (every record has one); otherwise they are their times, or their
	// positions when a record has no time either.
	XIsStep bool
	// Allocated and Reserved are FindClimb over allocated_bytes.all.current
	// and reserved_bytes.all.current, record by record; their indexes are
	// into Records.
	Allocated, Reserved Climb
	// PeaksReset is true when a peak figure went down between two records:
	// the loop calls torch.cuda.reset_peak_memory_stats(), so each peak is
	// the step's own.
	PeaksReset bool
	// FirstRetry and FirstOOM are the index of the first record with
	// num_alloc_retries > 0 and num_ooms > 0; -1 when none.
	FirstRetry, FirstOOM int
}

// AnalyzeSteps splits a log by device (ascending) and judges each.
func AnalyzeSteps(l *StatsLog) []StepsDevice {
	var devices []int
	for _, r := range l.Records {
		if !slices.Contains(devices, r.Stats.Device) {
			devices = append(devices, r.Stats.Device)
		}
	}
	slices.Sort(devices)
	var out []StepsDevice
	for _, dev := range devices {
		d := StepsDevice{Device: dev, FirstRetry: -1, FirstOOM: -1, XIsStep: true}
		hasTime := true
		for _, r := range l.Records {
			if r.Stats.Device == dev {
				d.Records = append(d.Records, r)
				d.XIsStep = d.XIsStep && r.HasStep
				hasTime = hasTime && r.HasTime
			}
		}
		x := make([]float64, len(d.Records))
		alloc := make([]int64, len(d.Records))
		res := make([]int64, len(d.Records))
		for i, r := range d.Records {
			switch {
			case d.XIsStep:
				x[i] = float64(r.Step)
			case hasTime:
				x[i] = float64(r.TimeUS)
			default:
				x[i] = float64(i)
			}
			st := r.Stats
			alloc[i] = st.AllocatedBytes[stats.PoolAll].Current
			res[i] = st.ReservedBytes[stats.PoolAll].Current
			if st.NumAllocRetries > 0 && d.FirstRetry < 0 {
				d.FirstRetry = i
			}
			if st.NumOOMs > 0 && d.FirstOOM < 0 {
				d.FirstOOM = i
			}
			if i > 0 {
				prev := d.Records[i-1].Stats
				if st.AllocatedBytes[stats.PoolAll].Peak < prev.AllocatedBytes[stats.PoolAll].Peak ||
					st.ReservedBytes[stats.PoolAll].Peak < prev.ReservedBytes[stats.PoolAll].Peak {
					d.PeaksReset = true
				}
			}
		}
		if !slices.IsSorted(x) {
			// Steps or times out of order (a restarted run appending to
			// the log): judge the records in file order.
			for i := range x {
				x[i] = float64(i)
			}
			d.XIsStep = false
		}
		d.Allocated = FindClimb(x, alloc)
		d.Reserved = FindClimb(x, res)
		out = append(out, d)
	}
	return out
}

// ReservedSeries returns reserved_bytes.all.current of the records that
// have a time, as a Series for [FindGap]; records out of time order end
// it.
func (d *StepsDevice) ReservedSeries() Series {
	var s Series
	for _, r := range d.Records {
		if !r.HasTime || (len(s.TimesUS) > 0 && r.TimeUS < s.TimesUS[len(s.TimesUS)-1]) {
			continue
		}
		s.TimesUS = append(s.TimesUS, r.TimeUS)
		s.Values = append(s.Values, r.Stats.ReservedBytes[stats.PoolAll].Current)
	}
	return s
}

// Agreement is how a memory_stats() log compares with a snapshot's replay
// of the same device: at each record's time, the replay's allocated and
// reserved bytes against the record's.
type Agreement struct {
	// Checked counts the records with a time within the replay's range;
	// Equal those whose allocated and reserved bytes both match.
	Checked, Equal int
	// First is the index of the first record that differs (-1 when none).
	First int
}

// Agree compares d's records with allocated and reserved, the replay's
// bytes after each trace entry against time. Both figures come from the
// same allocator, so a log and a snapshot of one run agree exactly when
// their clocks do (and the log took the figures where it took the time);
// a disagreement means another process or device, or a clock that is off.
func Agree(d *StepsDevice, allocated, reserved Series) Agreement {
	a := Agreement{First: -1}
	for i, r := range d.Records {
		if !r.HasTime {
			continue
		}
		al, ok1 := allocated.At(r.TimeUS)
		re, ok2 := reserved.At(r.TimeUS)
		if !ok1 || !ok2 {
			continue
		}
		a.Checked++
		if al == r.Stats.AllocatedBytes[stats.PoolAll].Current && re == r.Stats.ReservedBytes[stats.PoolAll].Current {
			a.Equal++
		} else if a.First < 0 {
			a.First = i
		}
	}
	return a
}

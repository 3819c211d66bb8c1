package monitor

import (
	"fmt"
	"slices"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// GapOptions say what an nvidia-smi log is set against ([Gaps]): a
// memory_stats() log's reserved bytes, or a snapshot's trace replayed (the
// log's steps then name when a jump happened, and are compared with the
// replay).
type GapOptions struct {
	// SMIName is the nvidia-smi log's name, for its notes.
	SMIName string
	// Steps are the memory_stats() log's devices (AnalyzeSteps) and
	// StatsName its name; nil without a log.
	Steps     []StepsDevice
	StatsName string
	// Snap is the snapshot of the same run and SnapName its name; nil
	// without one.
	Snap     *snapshot.Snapshot
	SnapName string
	// File, when not nil, is the analysis of Snap whose replays Gaps
	// reuses (the HTML report's); nil makes one.
	File *analysis.File
	// Devices, when not nil, are the devices of Snap looked at (the
	// report's); nil is every device of Snap.
	Devices []int
	// GPU is the nvidia-smi index of the device looked at (--gpu), when
	// GPUSet.
	GPU    int
	GPUSet bool
}

// DeviceGap is the memory outside PyTorch on one GPU: its nvidia-smi used
// bytes against the reserved bytes of one CUDA device.
type DeviceGap struct {
	GPU, Device int
	// Against names what the reserved bytes come from ("replayed from
	// the trace of FILE", "reserved_bytes.all.current of LOG").
	Against string
	Gap     Gap
	// Steps are the device's memory_stats() records; nil without a log.
	Steps *StepsDevice
}

// DeviceAgreement is how the memory_stats() log of one device agrees with
// the snapshot's replay of it ([Agree]).
type DeviceAgreement struct {
	Steps *StepsDevice
	Agreement
}

// Gaps sets an nvidia-smi log (gpus: SummarizeSMI of it) against the
// reserved bytes of each device of o.Snap's trace replayed (o.Devices of
// it, when set), or else of o.Steps' records; with both, each device's
// records are compared with the replay. With gpus nil (no nvidia-smi log)
// it only compares the records with the replay. It is the one rule for
// `snapview smi` and the HTML report's monitoring section. notes are
// warnings: a device with no GPU in the log, a trace that covers no time.
// Errors: a *analysis.UsageError when the GPU of a device is not known
// (see [GPUFor]); a replay's error, prefixed with "SNAPSHOT: "; a log none
// of whose records has a time.
func Gaps(gpus []GPUSummary, o GapOptions) ([]DeviceGap, []DeviceAgreement, []analysis.Note, error) {
	var gaps []DeviceGap
	var agree []DeviceAgreement
	var notes []analysis.Note
	stepsOf := func(dev int) *StepsDevice {
		for i := range o.Steps {
			if o.Steps[i].Device == dev {
				return &o.Steps[i]
			}
		}
		return nil
	}
	// gap adds the gap of device dev against reserved, unless the log has
	// no GPU for it.
	indexes := make([]int, len(gpus))
	for i, g := range gpus {
		indexes[i] = g.GPU
	}
	gap := func(dev int, several bool, against string, reserved Series) error {
		if gpus == nil {
			return nil
		}
		gpu, ok, err := GPUFor(indexes, dev, o.GPU, o.GPUSet, several)
		if err != nil {
			return err
		}
		if !ok {
			notes = append(notes, analysis.Note{Kind: analysis.Warning, File: o.SMIName, Text: fmt.Sprintf("no GPU %d for device %d", dev, dev)})
			return nil
		}
		gaps = append(gaps, DeviceGap{GPU: gpu, Device: dev, Against: against, Gap: FindGap(gpuSeries(gpus, gpu), reserved), Steps: stepsOf(dev)})
		return nil
	}
	if o.Snap == nil {
		for _, d := range o.Steps {
			series := d.ReservedSeries()
			if len(series.TimesUS) == 0 {
				return gaps, agree, notes, fmt.Errorf("%s: no record has a \"time\": nothing to set the nvidia-smi samples against", o.StatsName)
			}
			if err := gap(d.Device, len(o.Steps) > 1, "reserved_bytes.all.current of "+o.StatsName, series); err != nil {
				return gaps, agree, notes, err
			}
		}
		return gaps, agree, notes, nil
	}
	s := o.Snap
	devs := o.Devices
	if devs == nil {
		devs = s.Devices()
	}
	an := o.File
	if an == nil {
		an = analysis.New(s, analysis.Options{})
	}
	for _, dev := range devs {
		trace := replay.DeviceTrace(s, dev)
		r, err := an.Replay(dev)
		if err != nil {
			return gaps, agree, notes, fmt.Errorf("%s: %w", o.SnapName, err)
		}
		allocated, reserved := TraceSeries(trace, r)
		if reserved.Span() == 0 {
			notes = append(notes, analysis.Note{Kind: analysis.Warning, File: o.SnapName, Text: fmt.Sprintf(
				"the trace of device %d covers no time (entries: %d, none or one with a time_us): nothing to set the nvidia-smi samples against", dev, len(trace))})
			continue
		}
		if err := gap(dev, len(devs) > 1, "replayed from the trace of "+o.SnapName, reserved); err != nil {
			return gaps, agree, notes, err
		}
		if d := stepsOf(dev); d != nil {
			agree = append(agree, DeviceAgreement{Steps: d, Agreement: Agree(d, allocated, reserved)})
		}
	}
	return gaps, agree, notes, nil
}

// GPUFor picks among gpus, the indexes of an nvidia-smi log, the GPU of a
// CUDA device. When one device is looked at (several false): flagGPU when
// flagSet (--gpu), else the GPU of the same index, else the only GPU of
// the log; a log with several GPUs and none of that index is a
// *analysis.UsageError. With several devices, each gets the GPU of its
// index, or none (ok false): an index may differ from the CUDA ordinal
// (CUDA_VISIBLE_DEVICES), and --gpu, which says it, needs one device.
func GPUFor(gpus []int, device, flagGPU int, flagSet, several bool) (gpu int, ok bool, err error) {
	switch {
	case flagSet && several:
		return 0, false, analysis.UsageErrorf("--gpu %d names the GPU of one device: give --device too", flagGPU)
	case flagSet:
		if !slices.Contains(gpus, flagGPU) {
			return 0, false, analysis.UsageErrorf("--gpu %d: the nvidia-smi log has no GPU %d (GPUs: %s)", flagGPU, flagGPU, units.IntList(gpus))
		}
		return flagGPU, true, nil
	case slices.Contains(gpus, device):
		return device, true, nil
	case several:
		return 0, false, nil
	case len(gpus) == 1:
		return gpus[0], true, nil
	}
	return 0, false, analysis.UsageErrorf("device %d: the nvidia-smi log has no GPU %d (GPUs: %s); say which with --gpu", device, device, units.IntList(gpus))
}

// CheckGPU checks --gpu (flagGPU, given when flagSet) against the
// nvidia-smi log name, whose GPU indexes are gpus, before anything else is
// read: --gpu without what it applies to (used false; with names it) is a
// *analysis.UsageError, and so is a GPU the log does not have (the error
// names the log, not the snapshot).
func CheckGPU(flagGPU int, flagSet, used bool, with, name string, gpus []int) error {
	switch {
	case !flagSet:
		return nil
	case !used:
		return analysis.UsageErrorf("--gpu %d names the nvidia-smi GPU to set against %s: give one", flagGPU, with)
	case !slices.Contains(gpus, flagGPU):
		return analysis.UsageErrorf("--gpu %d: %s: the nvidia-smi log has no GPU %d (GPUs: %s)", flagGPU, name, flagGPU, units.IntList(gpus))
	}
	return nil
}

// gpuSeries returns the samples of one GPU, in time order.
func gpuSeries(gs []GPUSummary, gpu int) []SMISample {
	for _, g := range gs {
		if g.GPU == gpu {
			return g.Series
		}
	}
	return nil
}

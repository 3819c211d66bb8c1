package verdictview

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/forecast"
)

// forecastResult is a forecast with every part the views show: unmatched
// and partly matched requests, each form, an OOM target, targets with a
// band (one that fails at one end only), a --max answer and leave-one-out
// errors.
func forecastResult() *forecast.Result {
	at18 := forecast.Target{Value: 18, Template: "b4.pickle", PeakAllocated: 10492041728, PeakReserved: 10911481856, OOMEntry: -1, Extrapolated: true, Far: true}
	at19 := forecast.Target{Value: 19, Template: "b4.pickle", PeakAllocated: 10322398208, PeakReserved: 10460594176, OOM: true,
		OOMEntry: 3010, OOMSize: 1955600384, OOMStack: "<no stack recorded>", Extrapolated: true, Far: true,
		Band: &forecast.Band{Buffers: 21, PeakAllocated: 10492041728, PeakReserved: 11257511936, OOMEntry: -1}}
	return &forecast.Result{
		Param: "batch", Conf: "", Limit: 11411652608,
		Files: []forecast.FileInfo{
			{Name: "b1.pickle", Value: 1, Requests: 2223, Bytes: 9014865551, Matched: 2220, MatchedBytes: 9014861714, PeakAllocated: 1744439808, PeakReserved: 1908408320},
			{Name: "b2.pickle", Value: 2, Requests: 2370, Bytes: 14595480845, Matched: 2220, MatchedBytes: 13568372189, PeakAllocated: 2264305152, PeakReserved: 2648702976},
			{Name: "b4.pickle", Value: 4, Requests: 2370, Bytes: 24595480845, Matched: 2220, MatchedBytes: 23568372189, PeakAllocated: 3289906688, PeakReserved: 3667918848},
		},
		MatchedRequests: 0.951, MatchedBytes: 0.933,
		Unmatched: []forecast.Unmatched{
			{File: "b4.pickle", Stack: "<no stack recorded>", Requests: 165, Bytes: 2 << 30},
			{File: "b2.pickle", Stack: "<no stack recorded>", Requests: 147, Bytes: 1027084080},
			{File: "b1.pickle", Stack: "masking_utils.py:752 find_packed_sequence_indices", Requests: 3, Bytes: 3837},
		},
		UnmatchedCount: 320,
		Scaling: []forecast.Scaling{
			{Form: forecast.Constant, Stack: "modeling_utils.py:3645 cuda", Requests: 300, Bytes: 327650304},
			{Form: forecast.Linear, Stack: "<no stack recorded>", Requests: 600, Bytes: 9 << 30},
			{Form: forecast.Linear, Stack: "activations.py:66 forward", Requests: 36, Bytes: 3 << 30},
			{Form: forecast.Quadratic, Stack: "modeling_gpt2.py:58 eager_attention_forward", Requests: 36, Bytes: 486 << 20},
			{Form: forecast.Affine, Stack: "loss_utils.py:63 ForCausalLMLoss", Requests: 3, Bytes: 36 << 10},
		},
		Forms:         map[forecast.Form]int{forecast.Constant: 1061, forecast.Linear: 1141, forecast.Quadratic: 36, forecast.Affine: 3},
		FormBytes:     map[forecast.Form]int64{forecast.Constant: 4509715456, forecast.Linear: 18146236416, forecast.Quadratic: 486 << 20, forecast.Affine: 36 << 10},
		TemplateValue: 4, Rounded: 18, Partial: 168, PartialBytes: 2147483648,
		Targets: []forecast.Target{
			{Value: 8, Template: "b4.pickle", PeakAllocated: 5346290176, PeakReserved: 5995757568, OOMEntry: -1, Extrapolated: true,
				Band: &forecast.Band{Buffers: 21, PeakAllocated: 5346290176, PeakReserved: 5995757568, OOMEntry: -1}},
			{Value: 1, Template: "b1.pickle", PeakAllocated: 1744439808, PeakReserved: 1908408320, OOMEntry: -1, Extrapolated: true, Below: true,
				Band: &forecast.Band{Buffers: 21, PeakAllocated: 1743915520, PeakReserved: 2004877312, OOMEntry: -1}},
			at19,
		},
		Max: &forecast.Max{Found: true, Value: 18, At: &at18, Next: &at19, Simulations: 3, Estimate: 17},
		LeaveOneOut: []forecast.LeaveOneOut{
			{File: "b1.pickle", Value: 1, PeakAllocated: 1744439808, PeakReserved: 1908408320, FilePeakAllocated: 1744439808, FilePeakReserved: 1908408320},
			{File: "b4.pickle", Value: 4, PeakAllocated: 3288071680, PeakReserved: 3667918848, FilePeakAllocated: 3289906688, FilePeakReserved: 3667918848, AllocatedErrorPct: -0.0557},
		},
		Simulations: 6,
		Notes:       []string{"the files were recorded under different allocator settings: each target is simulated under its template's"},
	}
}

// TestForecastGolden: the text and JSON of a forecast, against goldens
// (go test -update rewrites them).
func TestForecastGolden(t *testing.T) {
	r := forecastResult()
	var txt, js bytes.Buffer
	if err := WriteForecast(&txt, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteForecastJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "forecast.txt"), txt.String())
	checkGolden(t, filepath.Join("testdata", "forecast.json"), js.String())
}

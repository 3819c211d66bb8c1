package whatif

import (
	"testing"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
)

// TestParseOOMMessage reads the figures of torch's OutOfMemoryError
// messages (testdata/snapshots/whatif/frag_oom/default_cap2048M's, and
// ../shared's torch2.11/oom without other processes) as the byte ranges
// format_size's two decimals allow.
func TestParseOOMMessage(t *testing.T) {
	frag := "CUDA out of memory. Tried to allocate 600.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which 126.54 GiB is free. " +
		"Process 459 has 1.11 GiB memory in use. Including non-PyTorch memory, this process has 2.07 GiB memory in use. Process 460 " +
		"has 3.37 GiB memory in use. 2.00 GiB allowed; Of the allocated memory 800.00 MiB is allocated by PyTorch, and 800.00 MiB " +
		"is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting " +
		"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
	m, err := ParseOOMMessage(frag)
	if err != nil {
		t.Fatal(err)
	}
	in := func(f *Figure, v int64) bool { return f != nil && f.Min <= v && v <= f.Max }
	for _, c := range []struct {
		name string
		f    *Figure
		v    int64
	}{
		{"allowed", m.Allowed, 2 << 30},
		{"requested", m.Requested, 600 << 20},
		{"capacity", m.Capacity, 150109880320},
		{"allocated", m.Allocated, 800 << 20},
		{"unallocated", m.Unallocated, 800 << 20},
	} {
		if !in(c.f, c.v) {
			t.Errorf("%s: %+v does not hold %d", c.name, c.f, c.v)
		}
	}
	if m.Allowed.Max-m.Allowed.Min > 11<<20 || m.Allowed.Text != "2.00 GiB" {
		t.Errorf("allowed %+v: want 2.00 GiB within half a hundredth of a GiB", m.Allowed)
	}
	if len(m.Others) != 2 || m.Others[0].Text != "1.11 GiB" || m.InUse.Text != "2.07 GiB" || m.Free.Text != "126.54 GiB" {
		t.Errorf("others %+v, in use %+v, free %+v", m.Others, m.InUse, m.Free)
	}
	noFraction := "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.14 GiB of which 6.75 MiB is free. " +
		"Including non-PyTorch memory, this process has 79.13 GiB memory in use. Of the allocated memory 78.50 GiB is allocated by PyTorch, " +
		"and 120.00 KiB is reserved by PyTorch but unallocated."
	m, err = ParseOOMMessage(noFraction)
	if err != nil || m.Allowed != nil || m.Free == nil || m.Free.Text != "6.75 MiB" || m.Unallocated.Max < 120<<10 {
		t.Errorf("no fraction: %+v, %v", m, err)
	}
	if _, err := ParseOOMMessage("RuntimeError: CUDA error: an illegal memory access was encountered"); err == nil {
		t.Error("not an OOM message: no error")
	}
}

// TestCandidatesSimplerFirst: the candidates start with torch's defaults
// and the file's settings with each key removed; a combined setting is
// one candidate.
func TestCandidatesSimplerFirst(t *testing.T) {
	own, _ := allocator.Parse("max_split_size_mb:128,expandable_segments:True")
	got := Candidates(own, 0)
	var confs []string
	for _, c := range got {
		confs = append(confs, c.String())
	}
	want := []string{"", "max_split_size_mb:128", "expandable_segments:True"}
	for i, w := range want {
		if i >= len(confs) || confs[i] != w {
			t.Fatalf("candidates %q: want them to start with %q", confs, want)
		}
	}
	if d := Candidates(allocator.Default(), 0); d[0].String() == "" {
		t.Errorf("the defaults' candidates hold the defaults again: %v", d[0])
	}
}

// TestBestNotBeatenBySimpler: on every what-if recording, the row marked
// best fits over the whole cap interval where any row does, and no row
// that does reserves less at its peak (on a tie, none names fewer
// settings); the defaults are among the rows.
func TestBestNotBeatenBySimpler(t *testing.T) {
	for _, w := range loadWhatif(t) {
		res, err := Analyze(w.snap, 0, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		hasDefault := false
		for _, r := range res.Rows {
			hasDefault = hasDefault || r.Config == allocator.Default()
		}
		if !hasDefault {
			t.Errorf("%s: no row with torch's defaults", w.name)
		}
		b := res.BestRow()
		if b == nil {
			continue
		}
		fitsAll := func(r *Row) bool { return r.Cap == nil && r.Fits() || r.Cap != nil && r.Cap.AtMin && r.Cap.AtMax }
		for i := range res.Rows[1:] {
			r := &res.Rows[i+1]
			if fitsAll(r) && (!fitsAll(b) || r.PeakReserved < b.PeakReserved) {
				t.Errorf("%s: best %q (peak reserved %d) beaten by %q (%d)", w.name, b.Conf, b.PeakReserved, r.Conf, r.PeakReserved)
			}
		}
	}
}

// TestSearchCapBrute: on every what-if recording with a cap interval, the
// smallest cap the search finds for each row is checked by simulating the
// whole trace again: the row fits under it, and fails one step (2 MiB)
// below it when that is still in the interval or above.
func TestSearchCapBrute(t *testing.T) {
	n := 0
	for _, w := range loadWhatif(t) {
		res, err := Analyze(w.snap, 0, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Inferred == nil {
			continue
		}
		r, err := replay.Run(w.snap, 0, replay.Options{Mode: replay.StatsOnly})
		if err != nil {
			t.Fatal(err)
		}
		p := compile(w.snap, r, res.Rows[0].Config, res.Limit)
		for _, row := range res.Rows {
			c := row.Cap
			if c == nil || c.From == 0 || !c.FromExact {
				continue
			}
			n++
			if o := newSim(p, row.Config, c.From, nil).run(); o.OOMs > 0 {
				t.Errorf("%s %q: fails under the cap %d it fits from", w.name, row.Conf, c.From)
			}
			if below := c.From - capStep; below >= res.Inferred.Min && row.Config.GarbageCollectionThreshold == 0 {
				if o := newSim(p, row.Config, below, nil).run(); o.OOMs == 0 {
					t.Errorf("%s %q: fits under %d, below the %d it fits from", w.name, row.Conf, below, c.From)
				}
			}
		}
	}
	t.Logf("%d rows checked", n)
}

package report

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

func TestBlockMap(t *testing.T) {
	blk := func(size int64, st snapshot.BlockState) snapshot.Block {
		return snapshot.Block{Size: size, State: st}
	}
	const A, P, I = snapshot.StateActiveAllocated, snapshot.StateActivePendingFree, snapshot.StateInactive
	tests := []struct {
		name   string
		blocks []snapshot.Block
		width  int
		want   string
	}{
		{"one live block", []snapshot.Block{blk(2048, A)}, 4, "####"},
		{"one free block", []snapshot.Block{blk(2048, I)}, 4, "...."},
		{"halves", []snapshot.Block{blk(1024, A), blk(1024, I)}, 4, "##.."},
		{"pending free", []snapshot.Block{blk(512, I), blk(512, P), blk(1024, I)}, 4, ".~.."},
		{"tiny live block stays visible", []snapshot.Block{blk(512, A), blk(20<<20-512, I)}, 8, "+......."},
		{"live beats pending", []snapshot.Block{blk(256, P), blk(256, A), blk(1536, I)}, 4, "#..."},
		{"more buckets than blocks", []snapshot.Block{blk(512, A), blk(512, I), blk(512, A)}, 6, "##..##"},
		{"uneven buckets", []snapshot.Block{blk(1000, I), blk(1000, A)}, 3, ".+#"},
		{"zero width", []snapshot.Block{blk(512, A)}, 0, ""},
	}
	for _, tt := range tests {
		seg := &snapshot.Segment{Blocks: tt.blocks}
		for _, b := range tt.blocks {
			seg.TotalSize += b.Size
		}
		if got := BlockMap(seg, tt.width); got != tt.want {
			t.Errorf("%s: BlockMap = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// memvizBytes is torch/cuda/_memory_viz.py _format_size (the Bytes of
// segsum): divide by 1024 while |n| >= 1024, print f"{n:3.1f}{unit}B".
func memvizBytes(n int64) string {
	v := float64(n)
	units := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi"}
	for _, u := range units {
		if v > -1024 && v < 1024 {
			return strconv.FormatFloat(v, 'f', 1, 64) + u + "B"
		}
		v /= 1024
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "YiB"
}

func TestMemvizBytes(t *testing.T) {
	for n, want := range map[int64]string{1: "1.0B", 1048575: "1024.0KiB", 20 << 20: "20.0MiB", 802816: "784.0KiB"} {
		if got := memvizBytes(n); got != want {
			t.Errorf("memvizBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// memvizFooter returns the footer lines of a `_memory_viz stats` output:
// segments, total_reserved, total_allocated, total_free.
func memvizFooter(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		switch k {
		case "segments", "total_reserved", "total_allocated", "total_free":
			if ok {
				out[k] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 {
		t.Fatalf("%s: footer incomplete: %v", path, out)
	}
	return out
}

// TestSegmentsAgreeWithMemviz checks the totals of `snapview segments`
// against the footer of `python -m torch.cuda._memory_viz stats` for every
// memviz_stats.txt of the shared corpus: segment count, total_reserved,
// total_allocated (requested bytes of live tensors) and total_free with
// its internal share.
func TestSegmentsAgreeWithMemviz(t *testing.T) {
	root := sharedSnapshots(t)
	files := corpus.Match(t, root, "torch2.11/*/memviz_stats.txt", 16)
	if !testing.Short() {
		files = append(files, corpus.Match(t, root, "big/*/memviz_stats.txt", 1)...)
	}
	agreed := 0
	for _, f := range files {
		dir := filepath.Dir(f)
		pickle := filepath.Join(dir, "snapshot.pickle")
		if _, err := os.Stat(pickle); err != nil {
			pickle += ".xz"
		}
		s, err := snapshot.Load(pickle)
		if err != nil {
			t.Errorf("%s: %v", pickle, err)
			continue
		}
		r := NewSegments(s, s.Devices())
		tot := &r.Total
		got := map[string]string{
			"segments":        strconv.Itoa(tot.Segments),
			"total_reserved":  memvizBytes(tot.Size),
			"total_allocated": memvizBytes(tot.RequestedBytes),
			"total_free":      memvizBytes(tot.FreeBytes()) + " (" + internalPct(tot) + " internal)",
		}
		want := memvizFooter(t, f)
		ok := true
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s = %q, _memory_viz stats says %q", filepath.Base(dir), k, got[k], w)
				ok = false
			}
		}
		if ok {
			agreed++
		}
		var text bytes.Buffer
		if err := WriteSegments(&text, r); err != nil {
			t.Fatal(err)
		}
		if line := usageLine(tot, r.requestedKnown()); !strings.Contains(text.String(), line) {
			t.Errorf("%s: text output lacks its totals line %q", filepath.Base(dir), line)
		}
	}
	t.Logf("totals agree with %d of %d memviz_stats.txt", agreed, len(files))
}

// syntheticSnapshot is a small two-device snapshot with a private pool,
// an expandable segment and every block state.
func syntheticSnapshot() *snapshot.Snapshot {
	blk := func(addr snapshot.Addr, size, req int64, st snapshot.BlockState) snapshot.Block {
		return snapshot.Block{Address: addr, Size: size, RequestedSize: req, State: st}
	}
	const MiB = 1 << 20
	return &snapshot.Snapshot{
		HasDeviceTraces: true,
		Traces:          [][]snapshot.TraceEntry{{}, {}},
		Settings:        &snapshot.AllocatorSettings{MaxSplitSize: -1},
		Segments: []snapshot.Segment{
			{Device: 0, Address: 0x7f0000000000, TotalSize: 2 * MiB, Type: "small", Blocks: []snapshot.Block{
				blk(0x7f0000000000, 512, 400, snapshot.StateActiveAllocated),
				blk(0x7f0000000200, 1024, 1024, snapshot.StateActivePendingFree),
				blk(0x7f0000000600, 2*MiB-1536, 0, snapshot.StateInactive),
			}},
			{Device: 0, Address: 0x7f0000200000, TotalSize: 20 * MiB, Type: "large", Stream: 93944, Blocks: []snapshot.Block{
				blk(0x7f0000200000, 12*MiB, 12*MiB-7, snapshot.StateActiveAllocated),
				blk(0x7f0000e00000, 8*MiB, 513, snapshot.StateInactive),
			}},
			{Device: 0, Address: 0x7f0010000000, TotalSize: 64 * MiB, Type: "large", Pool: snapshot.PoolID{1, 0}, Blocks: []snapshot.Block{
				blk(0x7f0010000000, 64*MiB, 64*MiB, snapshot.StateActiveAllocated),
			}},
			{Device: 1, Address: 0x7f1000000000, TotalSize: 40 * MiB, Type: "large", Expandable: true, Blocks: []snapshot.Block{
				blk(0x7f1000000000, 30*MiB, 30*MiB, snapshot.StateActiveAllocated),
				blk(0x7f1001e00000, 10*MiB, 0, snapshot.StateInactive),
			}},
		},
	}
}

func TestWriteSegmentsGolden(t *testing.T) {
	s := syntheticSnapshot()
	r := NewSegments(s, []int{0, 1})
	var text, js bytes.Buffer
	if err := WriteSegments(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteSegmentsJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "synthetic.segments.txt"), text.String())
	checkGolden(t, filepath.Join("testdata", "synthetic.segments.json"), js.String())
}

// TestSegmentsNameSummaryFigures checks that the segments view says how
// its figures relate to the summary's: under each device's table, the
// summary's allocated (whole blocks) and free (cached blocks) bytes, as
// `snapview summary` prints them (resnet50_train: 264.2 MiB allocated
// there, 260.2 MiB requested here).
func TestSegmentsNameSummaryFigures(t *testing.T) {
	root := sharedSnapshots(t)
	for _, name := range []string{"resnet50_train", "fragmentation", "two_devices"} {
		s, err := snapshot.Load(filepath.Join(root, "torch2.11", name, "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		var seg bytes.Buffer
		if err := WriteSegments(&seg, NewSegments(s, s.Devices())); err != nil {
			t.Fatal(err)
		}
		var all []*stats.MemoryStats
		for _, d := range s.Devices() {
			all = append(all, stats.CurrentStats(s, d))
		}
		sum := NewSummary(name, analysis.New(s, analysis.Options{}), all)
		var text bytes.Buffer
		if err := WriteSummaryText(&text, sum); err != nil {
			t.Fatal(err)
		}
		for _, d := range sum.Devices {
			alloc, free := units.Bytes(d.Total.AllocatedBytes), units.Bytes(d.Total.InactiveBytes)
			if !strings.Contains(text.String(), alloc+" allocated") || !strings.Contains(text.String(), free+" free") {
				t.Errorf("%s device %d: summary lacks %s allocated, %s free", name, d.Device, alloc, free)
			}
			if w := "snapview summary: " + alloc + " allocated (requested + slack), " + free + " free (cached blocks only)"; !strings.Contains(seg.String(), w) {
				t.Errorf("%s device %d: segments lacks %q", name, d.Device, w)
			}
		}
		for _, h := range []string{"Requested", "Free incl.", "requested by live allocations"} {
			if !strings.Contains(seg.String(), h) {
				t.Errorf("%s: segments lacks %q", name, h)
			}
		}
	}
}

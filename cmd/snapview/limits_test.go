package main

import "testing"

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1024", 1024, true}, {"8GiB", 8 << 30, true}, {"500MB", 500e6, true},
		{"1.5 KiB", 1536, true}, {"20gib", 20 << 30, true}, {"12B", 12, true},
		{"", 0, false}, {"-1", 0, false}, {"lots", 0, false}, {"9EiB", 0, false},
		{"NaN", 0, false}, {"nan GiB", 0, false}, {"Inf", 0, false}, {"+Inf", 0, false},
	} {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestMaxDecompressedFlag(t *testing.T) {
	testUsageErrors(t, []usageCase{
		{"not a size", []string{"summary", "--max-decompressed", "lots", "x.pickle"}, "--max-decompressed"},
	})
	gz := "../../testdata/snapshots/mlp_train.pickle.gz"
	if _, _, err := runSnapview(t, "summary", "--max-decompressed", "10KiB", gz); err == nil || exitCode(err) != 1 {
		t.Errorf("a 10 KiB cap on a 38 KiB pickle: error %v, want exit 1", err)
	}
	for _, v := range []string{"0", "1MiB"} {
		if _, _, err := runSnapview(t, "summary", "--max-decompressed", v, gz); err != nil {
			t.Errorf("--max-decompressed %s: %v", v, err)
		}
	}
}

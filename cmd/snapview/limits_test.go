package main

import "testing"

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

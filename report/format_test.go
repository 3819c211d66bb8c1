package report

import "testing"

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1048575, "1.0 MiB"},
		{20 << 20, "20.0 MiB"},
		{5 << 30, "5.0 GiB"},
		{-1536, "-1.5 KiB"},
		{1<<63 - 1, "8.0 EiB"},
	}
	for _, tt := range tests {
		if got := FormatBytes(tt.n); got != tt.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestFormatInt(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{999, "999"},
		{1000, "1,000"},
		{2000000, "2,000,000"},
		{-1234567, "-1,234,567"},
	}
	for _, tt := range tests {
		if got := FormatInt(tt.n); got != tt.want {
			t.Errorf("FormatInt(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

package units

import (
	"math"
	"strings"
	"testing"
)

func TestBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {512, "512 B"}, {1023, "1023 B"}, {-1023, "-1023 B"},
		{1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {-3 << 20, "-3.0 MiB"},
		{1048575, "1.0 MiB"}, {20 << 20, "20.0 MiB"}, {1<<30 - 1, "1.0 GiB"},
		{math.MaxInt64, "8.0 EiB"}, {math.MinInt64, "-8.0 EiB"},
	} {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 4 << 20: "+4.0 MiB", -1 << 30: "-1.0 GiB"} {
		if got := SignedBytes(n); got != want {
			t.Errorf("SignedBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    int64
		wantErr string // a part of the error; "" for none
	}{
		{"0", 0, ""}, {"4096", 4096, ""}, {"12B", 12, ""}, {"1kb", 1000, ""},
		{"10 MB", 10e6, ""}, {"500MB", 500e6, ""}, {"10 mib", 10 << 20, ""},
		{"1.5GiB", 3 << 29, ""}, {"1.5 KiB", 1536, ""}, {"20gib", 20 << 30, ""}, {"1TiB", 1 << 40, ""},
		{"2g", 0, "g is ambiguous: say 2GB (powers of 1000) or 2GiB (powers of 1024)"},
		{"10M", 0, "M is ambiguous"},
		{"1e30GiB", 0, "want a byte count"}, {"9EiB", 0, "want a byte count"},
		{"", 0, "want a byte count"}, {"MiB", 0, "want a byte count"}, {"-1", 0, "want a byte count"},
		{"lots", 0, "want a byte count"}, {"10 parsecs", 0, "want a byte count"},
	} {
		got, err := ParseBytes(tt.in)
		switch {
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseBytes(%q) = %d, %v; want an error with %q", tt.in, got, err, tt.wantErr)
		}
	}
}

func TestCounts(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Int(0), "0"}, {Int(999), "999"}, {Int(1000), "1,000"}, {Int(2000000), "2,000,000"}, {Int(-1234567), "-1,234,567"},
		{Plural(1, "entry"), "1 entry"}, {Plural(0, "entry"), "0 entries"}, {Plural(2, "oom entry"), "2 oom entries"},
		{Plural(1234, "segment"), "1,234 segments"}, {Plural(2, "key"), "2 keys"}, {Plural(3, "day"), "3 days"},
		{Plural(2, "toy"), "2 toys"},
		{Count(1, "stack gone", "stacks gone"), "1 stack gone"}, {Count(1500, "oom entry", "oom entries"), "1,500 oom entries"},
		{Verb(1, "has", "have"), "has"}, {Verb(0, "has", "have"), "have"},
		{OfAll(1, 1, "trace entry"), "the only trace entry"}, {OfAll(3, 3, "trace entry"), "all 3 trace entries"},
		{OfAll(1, 3, "trace entry"), "1 of 3 trace entries"}, {OfAll(0, 2, "free"), "0 of 2 frees"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestDurations(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Seconds(1500000, 3), "1.500 s"}, {Seconds(123456, 1), "0.1 s"},
		{Micros(1234567), "1.234567 s"}, {Micros(0), "0.000000 s"}, {Micros(-1), "-0.000001 s"},
		{Micros(86400e6 + 5), "86400.000005 s"},
		{Span(4455123), "4.455s"}, {Span(1500), "1.5ms"}, {Span(12), "12µs"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	for _, us := range []int64{0, 1, 999999, 1000000, 123456789, 9e12} {
		if a, b := Micros(us), Seconds(us, 6); a != b {
			t.Errorf("Micros(%d) = %q, Seconds(_, 6) = %q", us, a, b)
		}
	}
}

package steps

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseMoment: every kind of moment, and the forms each refuses.
func TestParseMoment(t *testing.T) {
	tests := []struct {
		in      string
		want    Moment
		wantErr bool
	}{
		{"peak", Moment{Kind: MomentPeak}, false},
		{"end", Moment{Kind: MomentEnd}, false},
		{"oom", Moment{Kind: MomentOOM}, false},
		{"oom:2", Moment{Kind: MomentOOM, N: 2}, false},
		{"entry:0", Moment{Kind: MomentEntry}, false},
		{"entry:-1", Moment{Kind: MomentEntry, N: -1}, false},
		{"entry:1200", Moment{Kind: MomentEntry, N: 1200}, false},
		{"time:1.5s", Moment{Kind: MomentTime, Dur: 1500 * time.Millisecond}, false},
		{"time:250ms", Moment{Kind: MomentTime, Dur: 250 * time.Millisecond}, false},
		{"time:1795997783981075", Moment{Kind: MomentTime, US: 1795997783981075, Abs: true}, false},
		{"", Moment{}, true},
		{"Peak", Moment{}, true},
		{"peak:1", Moment{}, true},
		{"oom:0", Moment{}, true},
		{"entry", Moment{}, true},
		{"entry:-2", Moment{}, true},
		{"entry:x", Moment{}, true},
		{"time:", Moment{}, true},
		{"time:-1s", Moment{}, true},
		{"time:soon", Moment{}, true},
		{"start", Moment{}, true},
		{"step:3", Moment{Kind: MomentStep, N: 3}, false},
		{"step:0", Moment{Kind: MomentStep}, false},
		{"step:last", Moment{Kind: MomentStep, N: -1}, false},
		{"step:-1", Moment{}, true},
		{"step", Moment{}, true},
	}
	for _, tt := range tests {
		got, err := ParseMoment(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseMoment(%q) error = %v, want error %t", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if !cmp.Equal(got, tt.want) {
			t.Errorf("ParseMoment(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

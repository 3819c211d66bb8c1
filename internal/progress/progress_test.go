package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressBarLine: the bar is drawn after its delay, not redrawn
// sooner than every 100 ms except at the end, and cleared by Finish (a bar
// never drawn writes nothing).
func TestProgressBarLine(t *testing.T) {
	var w bytes.Buffer
	t0 := time.Unix(0, 0)
	clock := t0
	b := &Bar{w: &w, name: "big.pickle", total: 200e6, start: t0, delay: time.Second, now: func() time.Time { return clock }}

	b.Add(50e6) // before the delay: nothing
	if w.Len() != 0 {
		t.Fatalf("drawn before the delay: %q", w.String())
	}
	clock = t0.Add(1500 * time.Millisecond)
	b.Add(50e6)
	want := "\rloading big.pickle  50% [===============>              ] 100.0/200.0 MB 1.5 s"
	if w.String() != want {
		t.Fatalf("got  %q\nwant %q", w.String(), want)
	}
	w.Reset()
	b.Add(1e6) // too soon after the last draw
	if w.Len() != 0 {
		t.Fatalf("redrawn too soon: %q", w.String())
	}
	b.Add(99e6) // the end is always drawn
	if !strings.Contains(w.String(), "100% [==============================] 200.0/200.0 MB") {
		t.Fatalf("end: %q", w.String())
	}
	w.Reset()
	b.Finish()
	if w.String() != "\r\033[K" {
		t.Fatalf("finish wrote %q", w.String())
	}

	var quiet bytes.Buffer
	(&Bar{w: &quiet}).Finish()
	if quiet.Len() != 0 {
		t.Errorf("finish of a bar never drawn wrote %q", quiet.String())
	}
}

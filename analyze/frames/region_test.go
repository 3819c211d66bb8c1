package frames

import "testing"

// TestInductorName: a generated file is named by its region, or as
// generated code when no region ran it; the hash is cut to 8 bytes.
func TestInductorName(t *testing.T) {
	for _, c := range []struct{ fn, region, want string }{
		{"/tmp/torchinductor_root/cf/cfypgnlsabcdef.py", "Torch-Compiled Region: 0/1", "Torch-Compiled Region 0/1 (inductor cfypgnls….py)"},
		{"/tmp/torchinductor_root/ty/ctyg4u6qhryvhjlyz5agm7z33e6o7k2v4gg37f2f7fvpngkpjh3i.py", "", "inductor-generated code (ctyg4u6q….py)"},
		{`C:\tmp\torchinductor_me\ab\abc.py`, "", "inductor-generated code (abc.py)"},
	} {
		if !InductorFile(c.fn) {
			t.Errorf("InductorFile(%q) = false", c.fn)
		}
		if got := InductorName(c.fn, c.region); got != c.want {
			t.Errorf("InductorName(%q, %q) = %q, want %q", c.fn, c.region, got, c.want)
		}
	}
	if InductorFile("/x/train.py") || InductorFile("/tmp/torchinductor_root/x.cpp") {
		t.Error("a file inductor did not generate counted as generated")
	}
}

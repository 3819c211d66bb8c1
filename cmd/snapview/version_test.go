package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	build := func(version string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/snapview/snapview", Version: version}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	for _, tt := range []struct {
		name   string
		bi     *debug.BuildInfo
		ok     bool
		commit string
		want   string
	}{
		{"checkout", build("(devel)", "vcs.revision", rev, "vcs.time", "2026-12-02T00:00:00Z", "vcs.modified", "false"), true, "",
			"devel 0123456789ab 2026-12-02T00:00:00Z go1.26.8"},
		{"dirty checkout", build("(devel)", "vcs.revision", rev, "vcs.modified", "true"), true, "",
			"devel 0123456789ab+dirty go1.26.8"},
		{"stamping wins over the linker", build("(devel)", "vcs.revision", rev), true, "fedcba987654",
			"devel 0123456789ab go1.26.8"},
		{"no stamping, commit from the linker", build("(devel)"), true, rev,
			"devel 0123456789ab go1.26.8"},
		{"no stamping, no commit", build("(devel)"), true, "",
			"devel (unknown commit: built without VCS stamping) go1.26.8"},
		{"release", build("v1.2.0"), true, "", "v1.2.0 go1.26.8"},
		{"pseudo-version", build("v0.0.0-20261202000000-0123456789ab", "vcs.revision", rev), true, "",
			"v0.0.0-20261202000000-0123456789ab go1.26.8"},
		{"pseudo-version after a release", build("v1.2.1-0.20261202000000-0123456789ab", "vcs.revision", rev), true, "",
			"v1.2.1-0.20261202000000-0123456789ab 0123456789ab go1.26.8"},
		{"no build information", nil, false, "", "unknown (no build information, unknown commit)"},
		{"no build information, commit from the linker", nil, false, "abc1234", "devel abc1234"},
	} {
		if got := versionOf(tt.bi, tt.ok, tt.commit); got != tt.want {
			t.Errorf("%s: versionOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}

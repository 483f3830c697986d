package main

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	stamped := &debug.BuildInfo{
		Main: debug.Module{Version: "v0.0.0-20261124120000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-11-24T12:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		name                string
		bi                  *debug.BuildInfo
		ver, rev, date      string // from ldflags
		wantVer, wantRev, d string
	}{
		{"go build in a git tree", stamped, "", "", "", "v0.0.0-20261124120000-0123456789ab+dirty", "0123456789abcdef-dirty", "2026-11-24T12:00:00Z"},
		{"go run: no VCS stamp", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "", "", "devel", "", ""},
		{"clean tree", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}}, "", "", "", "v1.2.3", "abc", ""},
		{"ldflags win", stamped, "1.0.0", "feedface", "20261124-12:00:00", "1.0.0", "feedface", "20261124-12:00:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, r, d := fromBuildInfo(tc.bi, tc.ver, tc.rev, tc.date)
			if v != tc.wantVer || r != tc.wantRev || d != tc.d {
				t.Errorf("got (%q, %q, %q), want (%q, %q, %q)", v, r, d, tc.wantVer, tc.wantRev, tc.d)
			}
		})
	}
}

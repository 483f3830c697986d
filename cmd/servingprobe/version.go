package main

import (
	"runtime/debug"

	"github.com/prometheus/common/version"
)

// init fills the version from the module's build info when no -ldflags
// set it (go build, go install, go run), so that --version, the landing
// page and the User-Agent never read "version=" with nothing after it.
func init() {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	version.Version, version.Revision, version.BuildDate = fromBuildInfo(bi, version.Version, version.Revision, version.BuildDate)
}

// fromBuildInfo fills what ldflags left empty from bi: the module version
// (a tag, or a pseudo-version that go build stamps from git), else "devel";
// the VCS revision, "-dirty" when the tree was modified; the commit time.
// It is pure, for the test.
func fromBuildInfo(bi *debug.BuildInfo, ver, rev, date string) (string, string, string) {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if ver == "" {
		ver = bi.Main.Version
		if ver == "" || ver == "(devel)" {
			ver = "devel"
		}
	}
	if rev == "" {
		if rev = settings["vcs.revision"]; rev != "" && settings["vcs.modified"] == "true" {
			rev += "-dirty"
		}
	}
	if date == "" {
		date = settings["vcs.time"]
	}
	return ver, rev, date
}

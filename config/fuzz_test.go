package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to Parse, the loader behind Load: it must
// return a config or an error, never panic or hang, and a config it
// accepts must validate and render redacted. Seeds: every file in testdata
// (the documented example, each bad-*.yml) and testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			if c != nil {
				t.Fatalf("Parse returned a config with error %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that Validate rejects: %v", err)
		}
		out, err := c.Redacted()
		if err != nil {
			t.Fatalf("Redacted: %v", err)
		}
		for _, tg := range c.Targets {
			if tg.MaxResponseBytes < 1 || tg.MaxEventBytes < 1 || tg.Interval <= 0 || tg.MaxInFlight < 1 {
				t.Fatalf("accepted target %q without its safety caps: %+v", tg.Name, tg)
			}
			for _, s := range []string{string(tg.HTTPClientConfig.BearerToken)} {
				if len(s) >= 4 && strings.Contains(string(out), s) {
					t.Fatalf("Redacted shows bearer token %q", s)
				}
			}
		}
	})
}

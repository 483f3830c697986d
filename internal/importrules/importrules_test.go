package importrules

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/servingprobe/servingprobe/"

// allowed lists, for each production package, the servingprobe packages
// it may import. Packages under cmd/ and internal/ (wiring, test helpers,
// tools) may import anything and are not listed. A package missing from
// the table fails the test, so a new package states its place.
var allowed = map[string][]string{
	"config":                 {},
	"datasets":               {"config"},
	"prober":                 {"config", "datasets"},
	"bench":                  {"prober", "datasets"},
	"exporter":               {"prober", "config", "dashboards"},
	"dashboards":             {},
	"dashboards/promtest":    {},
	"tokenizer":              {"datasets", "tokenizer/hub", "tokenizer/hftokenizers", "internal/envflag"},
	"tokenizer/hub":          {"internal/envflag"},
	"tokenizer/hftokenizers": {"datasets"},
	"simulator":              {},
	"benchrun":               {"bench", "config", "datasets", "exporter", "prober", "tokenizer", "tokenizer/hub", "internal/envflag"},
	"deploy":                 {},
}

// external are the non-standard imports a package must not use.
var forbiddenExternal = map[string][]string{
	// Measurement stays free of the Prometheus client: only the
	// exporter turns Results into metrics.
	"prober":   {"github.com/prometheus/client_golang"},
	"bench":    {"github.com/prometheus/client_golang"},
	"benchrun": {"github.com/prometheus/client_golang"},
	// datasets never touches the network: it imports no HTTP client of
	// ours (the table) and uses net/http only for DetectContentType.
	"datasets": {"github.com/prometheus/client_golang"},
	// config: only the standard library, yaml and prometheus/common.
	"config": {"github.com/prometheus/client_golang", "github.com/go-kit"},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestImportRules(t *testing.T) {
	for _, tags := range []string{"", "hftokenizers"} {
		args := []string{"list", "-json", "-tags", tags, module + "..."}
		out, err := exec.Command("go", args...).Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		seen := 0
		for {
			var p pkg
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimPrefix(p.ImportPath, module)
			if strings.HasPrefix(name, "cmd/") || strings.HasPrefix(name, "internal/") || strings.Contains(name, "/internal/") ||
				strings.HasPrefix(name, "deploy/tools") || name == "tools" {
				continue
			}
			seen++
			rule, ok := allowed[name]
			if !ok {
				t.Errorf("package %s has no import rule: add it to the table", name)
				continue
			}
			for _, imp := range p.Imports {
				if dep, ok := strings.CutPrefix(imp, module); ok {
					if strings.HasPrefix(dep, "cmd/") {
						t.Errorf("%s imports %s: nothing imports the command", name, dep)
					} else if !slices.Contains(rule, dep) {
						t.Errorf("%s imports %s; it may import only %v", name, dep, rule)
					}
					continue
				}
				for _, bad := range forbiddenExternal[name] {
					if imp == bad || strings.HasPrefix(imp, bad+"/") {
						t.Errorf("%s imports %s, which it must not", name, imp)
					}
				}
			}
		}
		if seen < 10 {
			t.Fatalf("go list found only %d packages under rules", seen)
		}
	}
}

// Command genschemas writes the JSON schemas that kubeconform validates
// deploy/kubernetes against, into deploy/schemas. The schemas come from Go
// modules, because the machines that build servingprobe reach only the Go
// module proxy: the Kubernetes OpenAPI v3 documents shipped in the
// k8s.io/kubernetes module, and the Prometheus Operator CRDs shipped in its
// module. Both versions are pinned below.
//
// The output is "standalone strict" in kubeconform's sense: each file holds
// one kind with every $ref it needs under definitions, and every object that
// lists its properties rejects any other property (additionalProperties:
// false), so a misspelt or misplaced field fails validation.
//
// Run from deploy/tools: go run ./genschemas -out ../schemas
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

const (
	kubernetesModule = "k8s.io/kubernetes@v1.35.0"
	operatorModule   = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
)

// coreKinds are the built-in kinds deploy/kubernetes uses, by OpenAPI file.
var coreKinds = []struct{ file, group, version, kind string }{
	{"api__v1_openapi.json", "", "v1", "ConfigMap"},
	{"api__v1_openapi.json", "", "v1", "Secret"},
	{"api__v1_openapi.json", "", "v1", "Service"},
	{"apis__apps__v1_openapi.json", "apps", "v1", "Deployment"},
	{"apis__networking.k8s.io__v1_openapi.json", "networking.k8s.io", "v1", "NetworkPolicy"},
	{"apis__batch__v1_openapi.json", "batch", "v1", "Job"},
}

// crdFiles are the Prometheus Operator CRDs deploy/kubernetes uses.
var crdFiles = []string{
	"monitoring.coreos.com_servicemonitors.yaml",
	"monitoring.coreos.com_probes.yaml",
	"monitoring.coreos.com_prometheusrules.yaml",
}

func main() {
	out := flag.String("out", "../schemas", "output directory")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "genschemas:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	k8sDir, err := moduleDir(kubernetesModule)
	if err != nil {
		return err
	}
	opDir, err := moduleDir(operatorModule)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, k := range coreKinds {
		b, err := os.ReadFile(filepath.Join(k8sDir, "api/openapi-spec/v3", k.file))
		if err != nil {
			return err
		}
		var doc struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s: %w", k.file, err)
		}
		s, err := coreSchema(doc.Components.Schemas, k.group, k.version, k.kind)
		if err != nil {
			return err
		}
		if err := write(out, k.group, k.version, k.kind, s); err != nil {
			return err
		}
	}
	for _, f := range crdFiles {
		b, err := os.ReadFile(filepath.Join(opDir, "example/prometheus-operator-crd", f))
		if err != nil {
			return err
		}
		var crd struct {
			Spec struct {
				Group string `yaml:"group"`
				Names struct {
					Kind string `yaml:"kind"`
				} `yaml:"names"`
				Versions []struct {
					Name   string `yaml:"name"`
					Served bool   `yaml:"served"`
					Schema struct {
						OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
					} `yaml:"schema"`
				} `yaml:"versions"`
			} `yaml:"spec"`
		}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			s := strict(v.Schema.OpenAPIV3Schema).(map[string]any)
			pinKind(s, crd.Spec.Group, v.Name, crd.Spec.Names.Kind)
			s["$schema"] = "http://json-schema.org/draft-07/schema#"
			s["description"] = fmt.Sprintf("%s %s/%s from %s (%s), made strict by deploy/tools/genschemas.", crd.Spec.Names.Kind, crd.Spec.Group, v.Name, operatorModule, f)
			if err := write(out, crd.Spec.Group, v.Name, crd.Spec.Names.Kind, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func moduleDir(mod string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(b, &info); err != nil {
		return "", err
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", mod, info.Error)
	}
	return info.Dir, nil
}

const refPrefix = "#/components/schemas/"

// coreSchema finds the kind's schema and gathers every schema it refers to.
func coreSchema(all map[string]map[string]any, group, version, kind string) (map[string]any, error) {
	var root string
	for name, s := range all {
		gvks, _ := s["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			g := g.(map[string]any)
			if g["group"] == group && g["version"] == version && g["kind"] == kind {
				root = name
			}
		}
	}
	if root == "" {
		return nil, fmt.Errorf("no schema for %s/%s %s", group, version, kind)
	}
	defs := map[string]any{}
	var visit func(name string) error
	visit = func(name string) error {
		if _, done := defs[name]; done {
			return nil
		}
		s, ok := all[name]
		if !ok {
			return fmt.Errorf("dangling $ref %s", name)
		}
		defs[name] = nil // mark before recursing: schemas may be recursive
		var refs []string
		collectRefs(s, &refs)
		defs[name] = strict(s)
		for _, r := range refs {
			if err := visit(r); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(root); err != nil {
		return nil, err
	}
	s := map[string]any{}
	for k, v := range defs[root].(map[string]any) {
		s[k] = v
	}
	delete(defs, root)
	// The root's own $refs point into definitions; a self-reference (none of
	// the kinds here has one) would need the root kept there too.
	s["definitions"] = defs
	s["$schema"] = "http://json-schema.org/draft-07/schema#"
	pinKind(s, group, version, kind)
	return s, nil
}

func collectRefs(v any, refs *[]string) {
	switch v := v.(type) {
	case map[string]any:
		if r, ok := v["$ref"].(string); ok && strings.HasPrefix(r, refPrefix) {
			*refs = append(*refs, strings.TrimPrefix(r, refPrefix))
		}
		for _, x := range v {
			collectRefs(x, refs)
		}
	case []any:
		for _, x := range v {
			collectRefs(x, refs)
		}
	}
}

// strict returns a copy of the schema with $refs pointing at definitions,
// additionalProperties false on every object that lists its properties
// (unless it says otherwise or preserves unknown fields), and the
// Kubernetes extensions that change typing spelt out in JSON Schema.
func strict(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[k] = strict(x)
		}
		if r, ok := out["$ref"].(string); ok {
			out["$ref"] = "#/definitions/" + strings.TrimPrefix(r, refPrefix)
		}
		if b, _ := out["x-kubernetes-int-or-string"].(bool); b {
			delete(out, "type")
			out["oneOf"] = []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
		}
		if n, _ := out["nullable"].(bool); n {
			if t, ok := out["type"].(string); ok {
				out["type"] = []any{t, "null"}
			}
		}
		_, hasProps := out["properties"]
		_, hasAdditional := out["additionalProperties"]
		preserve, _ := out["x-kubernetes-preserve-unknown-fields"].(bool)
		if hasProps && !hasAdditional && !preserve {
			out["additionalProperties"] = false
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = strict(x)
		}
		return out
	}
	return v
}

// pinKind makes apiVersion and kind required and fixed, so that a schema can
// only validate the kind it was generated for.
func pinKind(s map[string]any, group, version, kind string) {
	apiVersion := version
	if group != "" {
		apiVersion = group + "/" + version
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		s["properties"] = props
	}
	props["apiVersion"] = map[string]any{"type": "string", "enum": []any{apiVersion}}
	props["kind"] = map[string]any{"type": "string", "enum": []any{kind}}
	req, _ := s["required"].([]any)
	for _, f := range []string{"apiVersion", "kind"} {
		found := false
		for _, r := range req {
			found = found || r == f
		}
		if !found {
			req = append(req, f)
		}
	}
	s["required"] = req
}

// write stores the schema where kubeconform's
// -schema-location '.../{{ .ResourceKind }}{{ .KindSuffix }}.json' finds it:
// <kind>-<first label of the group>-<version>.json, or <kind>-<version>.json
// for the core group.
func write(dir, group, version, kind string, s map[string]any) error {
	suffix := version
	if group != "" {
		suffix = strings.Split(group, ".")[0] + "-" + version
	}
	name := filepath.Join(dir, strings.ToLower(kind)+"-"+suffix+".json")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "genschemas: wrote", name)
	return os.WriteFile(name, buf.Bytes(), 0o644)
}

package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	promconfig "github.com/prometheus/common/config"
	"go.yaml.in/yaml/v2"
)

// yaml.v2's messages name Go types ("field intervall not found in type
// config.plain"); these say where in the file that is and which keys it
// takes. The keys are read from the structs' yaml tags, so they cannot drift.
var yamlPlaces = map[string]struct {
	where string
	typ   reflect.Type
}{
	"config.Config":           {"the top level", reflect.TypeFor[Config]()},
	"config.target":           {"a target", reflect.TypeFor[Target]()},
	"config.module":           {"a module", reflect.TypeFor[Module]()},
	"config.bench":            {"bench", reflect.TypeFor[Bench]()},
	"config.ProbeAPI":         {"probe_api", reflect.TypeFor[ProbeAPI]()},
	"config.HTTPClientConfig": {"http_client_config", reflect.TypeFor[promconfig.HTTPClientConfig]()},
	"config.BasicAuth":        {"http_client_config.basic_auth", reflect.TypeFor[promconfig.BasicAuth]()},
	"config.Authorization":    {"http_client_config.authorization", reflect.TypeFor[promconfig.Authorization]()},
	"config.OAuth2":           {"http_client_config.oauth2", reflect.TypeFor[promconfig.OAuth2]()},
	"config.TLSConfig":        {"tls_config", reflect.TypeFor[promconfig.TLSConfig]()},
}

// yamlKinds says what a value of a Go type looks like in YAML.
var yamlKinds = map[string]string{
	"int": "a whole number", "int64": "a whole number", "float64": "a number", "bool": "true or false",
	"model.Duration": "a duration such as 30s or 1m", "string": "text", "[]string": "a list",
	"config.Regexp": "a regular expression", "[]config.SecretURL": "a list of URLs", "config.SecretURL": "a URL",
}

var (
	unknownFieldRe = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)
	badValueRe     = regexp.MustCompile("^line (\\d+): cannot unmarshal !!\\w+ `(.*)` into (\\S+)$")
	syntaxLineRe   = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	quotedValueRe  = regexp.MustCompile(`^(?:not a valid duration string: |invalid regular expression )"([^"]+)"`)
)

// yamlKeys lists the keys a struct takes, following inline structs.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct:
			keys = append(keys, yamlKeys(f.Type)...)
		case strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Pointer:
			keys = append(keys, yamlKeys(f.Type.Elem())...)
		case name != "":
			keys = append(keys, name)
		default:
			keys = append(keys, strings.ToLower(f.Name))
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// friendlyYAMLError rewrites one of yaml.v2's messages in the file's terms.
func friendlyYAMLError(msg string) string {
	if m := unknownFieldRe.FindStringSubmatch(msg); m != nil {
		if p, ok := yamlPlaces[m[3]]; ok {
			return fmt.Sprintf("line %s: unknown key %q in %s (allowed: %s)", m[1], m[2], p.where, strings.Join(yamlKeys(p.typ), ", "))
		}
		return fmt.Sprintf("line %s: unknown key %q", m[1], m[2])
	}
	if m := badValueRe.FindStringSubmatch(msg); m != nil {
		want, ok := yamlKinds[m[3]]
		if !ok {
			want = "of the right type"
		}
		return fmt.Sprintf("line %s: %q must be %s", m[1], m[2], want)
	}
	return msg
}

// decodeError turns yaml's errors into one problem per line in the
// file's terms, so that they read like Validate's. A syntax error also
// shows the lines around the one yaml names: libyaml reports where the
// construct it could not finish began, often the line before the fault.
func decodeError(err error, src []byte) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		errs := make([]error, len(te.Errors))
		for i, e := range te.Errors {
			errs[i] = errors.New(friendlyYAMLError(e))
		}
		return errors.Join(errs...)
	}
	if m := quotedValueRe.FindStringSubmatch(err.Error()); m != nil {
		// A value's own parser (model.Duration, a regular expression)
		// stops the decode with an error that has no line; find the
		// line by the value it quotes, when only one line holds it.
		var at []int
		for i, l := range strings.Split(string(src), "\n") {
			if strings.Contains(l, m[1]) {
				at = append(at, i+1)
			}
		}
		if len(at) == 1 {
			return fmt.Errorf("line %d: %w", at[0], err)
		}
		return err
	}
	if m := syntaxLineRe.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		lines := strings.Split(string(src), "\n")
		var b strings.Builder
		fmt.Fprintf(&b, "YAML syntax error near line %d: %s", n, m[2])
		for l := max(n, 1); l <= min(n+1, len(lines)); l++ {
			fmt.Fprintf(&b, "\n  %4d | %s", l, lines[l-1])
		}
		return errors.New(b.String())
	}
	return err
}

// jsonValue converts a decoded YAML value into one encoding/json can
// write: yaml.v2 decodes a nested mapping as map[any]any, which json
// refuses at request time ("unsupported type: map[interface {}]interface
// {}"), long after check-config said the file was fine. A key that YAML
// read as a number or a boolean becomes its text, as JSON keys are.
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[fmt.Sprint(k)] = jsonValue(val)
		}
		return out
	case map[string]any:
		for k, val := range x {
			x[k] = jsonValue(val)
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = jsonValue(val)
		}
		return x
	}
	return v
}

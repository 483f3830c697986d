package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
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

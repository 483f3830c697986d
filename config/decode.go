package config

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"
	yaml3 "go.yaml.in/yaml/v3"
)

// A problem is one thing wrong with a config file: where it is (the line,
// when the file has the key, and the dotted path of the field, as
// targets[0].interval) and what is wrong. A message never quotes text from
// the file that could be a secret: a value is quoted only when its field
// takes a number, a boolean, a duration or a regular expression, which
// cannot be credentials; a syntax error names the line and libyaml's kind
// of fault, never the line's text.
type problem struct {
	line int
	path string
	msg  string
}

func (p problem) String() string {
	var b strings.Builder
	if p.line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.line)
	}
	if p.path != "" {
		b.WriteString(p.path + ": ")
	}
	b.WriteString(p.msg)
	return b.String()
}

// problemsError joins problems, sorted by line (those without a line,
// such as a missing top-level key, first), one per line of text.
func problemsError(ps []problem) error {
	if len(ps) == 0 {
		return nil
	}
	slices.SortStableFunc(ps, func(a, b problem) int { return cmp.Compare(a.line, b.line) })
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = errors.New(p.String())
	}
	return errors.Join(errs...)
}

var syntaxErrorRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decodeFile decodes a config file in two passes, so that every problem
// is found at once: the file is first read into a node tree and walked
// against the config's types, which finds every unknown key and every
// value of the wrong type with its path and line; the walk removes each
// of them, and the rest is decoded for real, leaving the fields it
// removed at their defaults (so that Validate can check the rest of the
// file and what it says about a removed field is not said twice). lines
// maps the path of every key and list entry to its line, for Validate's
// problems. A nil Config means nothing could be decoded.
func decodeFile(b []byte) (c *Config, ps []problem, lines map[string]int) {
	// The syntax is checked by the yaml that decodes: it names the line
	// where the construct it could not finish began, which is nearer the
	// fault than yaml.v3's (the start of the enclosing block).
	var any any
	err := yaml.Unmarshal(b, &any)
	if _, typed := errors.AsType[*yaml.TypeError](err); err == nil || typed {
		var doc yaml3.Node
		if err = yaml3.Unmarshal(b, &doc); err == nil {
			return decodeTree(&doc)
		}
	}
	// libyaml's messages name the kind of fault, never the text.
	if m := syntaxErrorRe.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return nil, []problem{{line: n, msg: "YAML syntax error here or below: " + m[2]}}, nil
	}
	return nil, []problem{{msg: "YAML syntax error: " + strings.TrimPrefix(err.Error(), "yaml: ")}}, nil
}

func decodeTree(doc *yaml3.Node) (c *Config, ps []problem, lines map[string]int) {
	c = &Config{Bench: DefaultBench}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return c, nil, nil // an empty file: Validate says what it lacks
	}
	w := walker{lines: map[string]int{}}
	if !w.walk(doc.Content[0], reflect.TypeFor[Config](), "") {
		return nil, w.problems, w.lines
	}
	clean, err := yaml3.Marshal(doc)
	if err == nil {
		err = yaml.UnmarshalStrict(clean, c)
	}
	if err != nil {
		// Something the walk does not know about: said without the
		// file's text, and nothing is validated on a partial decode.
		w.problems = append(w.problems, problem{msg: "cannot decode: " + scrub(err.Error(), doc.Content[0])})
		return nil, w.problems, w.lines
	}
	return c, w.problems, w.lines
}

// walker checks a node tree against the Go types it decodes into.
type walker struct {
	problems []problem
	lines    map[string]int
}

func (w *walker) add(n *yaml3.Node, path, format string, args ...any) {
	w.problems = append(w.problems, problem{line: n.Line, path: path, msg: fmt.Sprintf(format, args...)})
}

var (
	durationType    = reflect.TypeFor[model.Duration]()
	regexpType      = reflect.TypeFor[Regexp]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	// Ours only apply defaults in UnmarshalYAML: their fields are walked.
	defaultingTypes = map[reflect.Type]bool{
		reflect.TypeFor[Target](): true, reflect.TypeFor[Module](): true, reflect.TypeFor[Bench](): true,
	}
)

// walk checks node n for a value of type t at path; false means n is
// wrong as a whole and the caller removes it.
func (w *walker) walk(n *yaml3.Node, t reflect.Type, path string) bool {
	if n.Kind == yaml3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml3.ScalarNode && n.Tag == "!!null" {
		return true // yaml leaves the zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		if n.Kind != yaml3.ScalarNode {
			w.add(n, path, "must be %s, not %s", kindName(t), nodeKind(n))
			return false
		}
		if _, err := model.ParseDuration(n.Value); err != nil {
			w.add(n, path, "must be %s, got %q", kindName(t), n.Value)
			return false
		}
		return true
	case t == regexpType:
		if n.Kind != yaml3.ScalarNode {
			w.add(n, path, "must be %s, not %s", kindName(t), nodeKind(n))
			return false
		}
		if _, err := NewRegexp(n.Value); err != nil {
			w.add(n, path, "invalid regular expression %q: %v", n.Value, err)
			return false
		}
		return true
	case t.Kind() == reflect.Struct && n.Kind == yaml3.MappingNode:
		w.walkStruct(n, t, path)
		if defaultingTypes[t] || !reflect.PointerTo(t).Implements(unmarshalerType) {
			return true
		}
		// A type with its own decoder (prometheus/common's HTTP client
		// config validates itself as it decodes): it is tried alone.
		return w.opaque(n, t, path)
	case t.Kind() == reflect.Struct && !defaultingTypes[t] && reflect.PointerTo(t).Implements(unmarshalerType):
		return w.opaque(n, t, path) // decoded from a scalar, as a URL
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map:
		if n.Kind != yaml3.MappingNode || t.Kind() == reflect.Struct {
			w.add(n, path, "must be %s, not %s", kindName(t), nodeKind(n))
			return false
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := fmt.Sprintf("%s[%q]", path, k.Value)
			w.lines[p] = k.Line
			if t.Elem().Kind() == reflect.Interface {
				// A JSON value kept as written (response_format):
				// Validate names what is in it with dotted paths.
				w.lines[path+"."+k.Value] = k.Line
				w.anyLines(v, path+"."+k.Value)
			}
			if !w.walk(v, t.Elem(), p) {
				n.Content = slices.Delete(n.Content, i, i+2)
				i -= 2
			}
		}
		return true
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml3.SequenceNode {
			w.add(n, path, "must be %s, not %s", kindName(t), nodeKind(n))
			return false
		}
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			w.lines[p] = e.Line
			if !w.walk(e, t.Elem(), p) {
				// Kept as null, so that the entries after it keep
				// their indexes (and paths).
				n.Content[i] = &yaml3.Node{Kind: yaml3.ScalarNode, Tag: "!!null", Value: "null", Line: e.Line}
			}
		}
		return true
	case t.Kind() == reflect.Interface:
		w.anyLines(n, path)
		return true
	}
	if n.Kind != yaml3.ScalarNode {
		w.add(n, path, "must be %s, not %s", kindName(t), nodeKind(n))
		return false
	}
	// A scalar is decoded alone, as the real decode will: yaml's own
	// rules say what is a number, a boolean, or a TLS version.
	v := reflect.New(t)
	if err := decodeNode(n, v.Interface()); err != nil {
		if t.Kind() == reflect.String {
			// Text fields hold URLs and credentials: not quoted.
			w.add(n, path, "must be %s", kindName(t))
		} else {
			w.add(n, path, "must be %s, got %q", kindName(t), n.Value)
		}
		return false
	}
	return true
}

// anyLines records the lines inside a value decoded into an interface (a
// JSON value kept as written: tools, tool_choice, a JSON Schema), keys as
// path.key and entries as path[i], so that a problem Validate finds deep
// in it (a tool's parameters) is reported at its own line.
func (w *walker) anyLines(n *yaml3.Node, path string) {
	switch n.Kind {
	case yaml3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := path + "." + n.Content[i].Value
			w.lines[p] = n.Content[i].Line
			w.anyLines(n.Content[i+1], p)
		}
	case yaml3.SequenceNode:
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			w.lines[p] = e.Line
			w.anyLines(e, p)
		}
	}
}

// walkStruct checks a mapping's keys against the struct's yaml keys and
// walks each value; a key the struct does not take is removed.
func (w *walker) walkStruct(n *yaml3.Node, t reflect.Type, path string) {
	fields := yamlFields(t)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		if k.Value == "<<" { // a merge key: its mappings hold this struct's keys
			ok := true
			if v.Kind == yaml3.SequenceNode {
				for _, e := range v.Content {
					ok = w.walk(e, t, path) && ok
				}
			} else {
				ok = w.walk(v, t, path)
			}
			if !ok {
				n.Content = slices.Delete(n.Content, i, i+2)
				i -= 2
			}
			continue
		}
		ft, known := fields[k.Value]
		if !known {
			ft, known = fields[inlineMapKey]
		}
		switch {
		case !known:
			w.add(k, p, "unknown key (allowed: %s)", strings.Join(yamlKeys(t), ", "))
		case seen[k.Value] > 0:
			w.add(k, p, "set twice (first at line %d)", seen[k.Value])
		default:
			seen[k.Value] = k.Line
			w.lines[p] = k.Line
			if w.walk(v, ft, p) {
				continue
			}
		}
		n.Content = slices.Delete(n.Content, i, i+2)
		i -= 2
	}
}

// opaque decodes n alone into a fresh t with yaml, for a type whose own
// decoder checks more than its fields' types. Its message may quote the
// value (a URL with a password): every scalar of n is taken out of it.
func (w *walker) opaque(n *yaml3.Node, t reflect.Type, path string) bool {
	if err := decodeNode(n, reflect.New(t).Interface()); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if te, ok := errors.AsType[*yaml.TypeError](err); ok {
			msg = strings.Join(te.Errors, "; ")
		}
		w.add(n, path, "%s", scrub(msg, n))
		return false
	}
	return true
}

// decodeNode decodes one node, strictly, with the yaml the real decode uses.
func decodeNode(n *yaml3.Node, out any) error {
	b, err := yaml3.Marshal(n)
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(b, out)
}

// scrub takes every scalar value under n out of msg, longest first, so
// that a decoder's message cannot carry a credential from the file.
func scrub(msg string, n *yaml3.Node) string {
	var values []string
	var collect func(*yaml3.Node)
	collect = func(n *yaml3.Node) {
		if n.Kind == yaml3.ScalarNode && len(n.Value) >= 3 {
			values = append(values, n.Value)
		}
		for _, c := range n.Content {
			collect(c)
		}
	}
	collect(n)
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range values {
		msg = strings.ReplaceAll(msg, v, "<value>")
	}
	return msg
}

// inlineMapKey is yamlFields' entry for the value type of a struct's
// inline map; no YAML key of a config is spelt so.
const inlineMapKey = "\x00inline map"

// yamlFields maps the yaml keys of a struct to their types, following
// inline structs.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline"):
			it := f.Type
			if it.Kind() == reflect.Pointer {
				it = it.Elem()
			}
			if it.Kind() == reflect.Map {
				// An inline map (prometheus/common's http_headers)
				// takes every key its struct does not name.
				out[inlineMapKey] = it.Elem()
				continue
			}
			for k, v := range yamlFields(it) {
				out[k] = v
			}
		case name != "":
			out[name] = f.Type
		default:
			out[strings.ToLower(f.Name)] = f.Type
		}
	}
	return out
}

// kindName says what a value of type t looks like in YAML.
func kindName(t reflect.Type) string {
	switch t {
	case durationType:
		return "a duration such as 30s or 1m"
	case regexpType:
		return "a regular expression"
	case reflect.TypeFor[[]SecretURL]():
		return "a list of URLs"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "text"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping (key: value lines)"
	}
	return "a value of another type"
}

func nodeKind(n *yaml3.Node) string {
	switch n.Kind {
	case yaml3.MappingNode:
		return "a mapping"
	case yaml3.SequenceNode:
		return "a list"
	}
	return "a single value"
}

// lineOf is the line of path, or of the nearest enclosing key or entry
// the file has (a missing key is reported at its parent's line).
func lineOf(lines map[string]int, path string) int {
	for path != "" {
		if n, ok := lines[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

// under reports whether path is p or a field or entry below it.
func under(path, p string) bool {
	return path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[")
}

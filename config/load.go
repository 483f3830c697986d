package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"
)

// Default values. They are applied before decoding, so a key that is absent
// keeps its default and a key that is present always wins.
var (
	DefaultTarget = Target{
		Interval:         model.Duration(15 * time.Second),
		MaxInFlight:      1,
		MaxResponseBytes: 64 << 20,
		MaxEventBytes:    16 << 20,
		// HTTP/1.1 by default: it is what bench_serving and most load
		// generators speak, and h2 multiplexing changes what TTFT measures.
		HTTPClientConfig: promconfig.HTTPClientConfig{FollowRedirects: true},
	}
	DefaultModule = Module{
		Dataset:    "random",
		InputLen:   128,
		OutputLen:  64,
		RangeRatio: 1.0, // exact lengths: probes should be comparable over time
		Seed:       1,
	}
	DefaultBench = Bench{
		Enabled:           true,
		MaxPrompts:        10000,
		MaxRequestRate:    100,
		MaxConcurrency:    256,
		MaxDuration:       model.Duration(30 * time.Minute),
		MaxBodyBytes:      1 << 20,
		MaxConcurrentRuns: 1,
		ResultsDir:        "results",
		// A window's result is a few KB and its report up to a few
		// MB: about as many windows as the API lists, in at most 1 GiB.
		ResultsRetentionCount: 1000,
		ResultsRetentionBytes: 1 << 30,
	}
)

// Datasets that a module may name. Bench runs accept more (see the bench
// CLI); continuous probes need prompts that can be produced offline.
var moduleDatasets = map[string]bool{
	"fixed": true, "random": true, "random-ids": true, "sharegpt": true, "custom": true,
	"generated-shared-prefix": true, "image": true, "mooncake": true,
	"conversation": true,
}

// UnmarshalYAML applies DefaultTarget before decoding.
func (t *Target) UnmarshalYAML(unmarshal func(any) error) error {
	*t = DefaultTarget
	type target Target // without this method, so that unmarshal does not recurse
	if err := unmarshal((*target)(t)); err != nil {
		return err
	}
	// HTTPClientConfig's own defaults turn HTTP/2 on whenever the block is
	// present; we want HTTP/1.1 unless enable_http2 is written out.
	var all map[string]any
	if err := unmarshal(&all); err == nil {
		if h, ok := all["http_client_config"].(map[any]any); ok {
			if _, set := h["enable_http2"]; set {
				return nil
			}
		}
	}
	t.HTTPClientConfig.EnableHTTP2 = false
	return nil
}

// UnmarshalYAML applies DefaultModule before decoding.
func (m *Module) UnmarshalYAML(unmarshal func(any) error) error {
	*m = DefaultModule
	type module Module // without this method, so that unmarshal does not recurse
	if err := unmarshal((*module)(m)); err != nil {
		return err
	}
	if m.ExtraBody != nil {
		m.ExtraBody = jsonValue(m.ExtraBody).(map[string]any)
	}
	if m.ResponseFormat != nil {
		m.ResponseFormat = jsonValue(m.ResponseFormat).(map[string]any)
	}
	if m.Tools != nil {
		m.Tools = jsonValue(m.Tools).([]any)
	}
	m.ToolChoice = jsonValue(m.ToolChoice)
	return nil
}

// UnmarshalYAML applies DefaultBench before decoding.
func (b *Bench) UnmarshalYAML(unmarshal func(any) error) error {
	*b = DefaultBench
	type bench Bench // without this method, so that unmarshal does not recurse
	return unmarshal((*bench)(b))
}

// Regexp is an anchored regular expression that round-trips through YAML.
type Regexp struct {
	*regexp.Regexp
	original string
}

// NewRegexp compiles s, anchored at both ends.
func NewRegexp(s string) (Regexp, error) {
	re, err := regexp.Compile("^(?:" + s + ")$")
	return Regexp{Regexp: re, original: s}, err
}

// UnmarshalYAML compiles the pattern.
func (re *Regexp) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	r, err := NewRegexp(s)
	if err != nil {
		return fmt.Errorf("invalid regular expression %q: %w", s, err)
	}
	*re = r
	return nil
}

// MarshalYAML returns the pattern as written.
func (re Regexp) MarshalYAML() (any, error) { return re.original, nil }

// String returns the pattern as written.
func (re Regexp) String() string { return re.original }

// Checks are the validations config cannot make itself. Which backend
// names exist is the prober's one list, and config may not import the
// prober, so whoever loads a config for probes passes the prober's check
// in (prober.CheckBackend). The zero value makes config's own checks only.
type Checks struct {
	// Backend returns why a target's backend name is refused, or nil.
	Backend func(name string) error
	// BaseURL is NormalizeBaseURL for a target's backend (ollama's /api
	// is its root, as /v1 is); nil means NormalizeBaseURL. A loaded
	// target's url is the base it returns.
	BaseURL func(backend, raw string) (string, error)
	// Schema returns why a module's JSON Schema (a json_schema response
	// format's, a tool's parameters) does not compile, or nil; nil means
	// schemas are checked only for their shape.
	Schema func(schema map[string]any) error
}

// Load reads, decodes strictly, defaults and validates a config file,
// with config's own checks only (Checks.Load adds the caller's).
func Load(path string) (*Config, error) { return Checks{}.Load(path) }

// Parse decodes and validates a config held in memory, with config's own
// checks only (Checks.Parse adds the caller's).
func Parse(b []byte) (*Config, error) { return Checks{}.Parse(b) }

// Load reads, decodes strictly, defaults and validates a config file. Errors
// name the file; decode errors carry the line, validation errors the field path.
func (k Checks) Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := k.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config file %q: %w", path, err)
	}
	c.setDirectory(filepath.Dir(path))
	return c, nil
}

// Parse decodes and validates a config held in memory. Relative file paths
// in it are left as they are. Every problem of the file is returned at
// once, with its line and path, sorted by line: unknown keys, values of the
// wrong type and Validate's problems alike (see decodeFile).
func (k Checks) Parse(b []byte) (*Config, error) {
	c, ps, lines := decodeFile(b)
	if c == nil {
		return nil, problemsError(ps)
	}
	var v validator
	c.validate(&v, k)
	for _, p := range v.problems {
		// A field the decode already refused was left at its default:
		// what Validate says about it would be a second, wrong message.
		if slices.ContainsFunc(ps, func(d problem) bool { return d.path != "" && under(p.path, d.path) }) {
			continue
		}
		p.line = lineOf(lines, p.path)
		ps = append(ps, p)
	}
	if err := problemsError(ps); err != nil {
		return nil, err
	}
	for i, t := range c.Targets {
		c.Targets[i].URL, _ = k.baseURL(t.Backend, t.URL) // valid: checked above
	}
	sum := sha256.Sum256(b)
	c.Checksum = hex.EncodeToString(sum[:])
	return c, nil
}

func (c *Config) setDirectory(dir string) {
	for i := range c.Targets {
		c.Targets[i].HTTPClientConfig.SetDirectory(dir)
	}
	for name, m := range c.Modules {
		if m.DatasetPath != "" && !filepath.IsAbs(m.DatasetPath) {
			m.DatasetPath = filepath.Join(dir, m.DatasetPath)
			c.Modules[name] = m
		}
	}
	if c.Bench.ResultsDir != "" && !filepath.IsAbs(c.Bench.ResultsDir) {
		c.Bench.ResultsDir = filepath.Join(dir, c.Bench.ResultsDir)
	}
}

// Redacted renders the config as YAML with every secret shown as <secret>,
// and each target's timeout as the one in force (EffectiveTimeout): a
// target without one times out at its interval, which "timeout: 0s" would
// hide.
func (c *Config) Redacted() ([]byte, error) {
	shown := *c
	shown.Targets = slices.Clone(c.Targets)
	for i := range shown.Targets {
		shown.Targets[i].Timeout = model.Duration(shown.Targets[i].EffectiveTimeout())
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(&shown); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Target returns the target with the given name.
func (c *Config) Target(name string) (Target, bool) {
	for _, t := range c.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// EffectiveTimeout is the per-request timeout: the configured one, or the
// interval when none is set.
func (t Target) EffectiveTimeout() time.Duration {
	if t.Timeout > 0 {
		return time.Duration(t.Timeout)
	}
	return time.Duration(t.Interval)
}

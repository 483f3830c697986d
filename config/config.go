package config

import (
	"net/url"
	"strings"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// Config is the whole configuration file.
type Config struct {
	Targets []Target          `yaml:"targets"`
	Modules map[string]Module `yaml:"modules"`
	Bench   Bench             `yaml:"bench"`
	Probe   ProbeAPI          `yaml:"probe_api"`

	// Checksum is the SHA-256 of the file Load read, so that a reload of an
	// unchanged file can be skipped.
	Checksum string `yaml:"-" json:"-"`
}

// Target is one endpoint to probe.
type Target struct {
	Name    string `yaml:"name"`
	URL     string `yaml:"url"`     // base URL, e.g. http://vllm:8000
	Backend string `yaml:"backend"` // a bench_serving --backend name, e.g. vllm-chat
	// Model is sent as "model". Empty means auto-detect with GET /v1/models.
	Model   string   `yaml:"model,omitempty"`
	Modules []string `yaml:"modules"`

	Interval model.Duration `yaml:"interval"`
	Timeout  model.Duration `yaml:"timeout"`
	// MaxInFlight caps concurrent probes per (target, module); a tick that
	// finds the cap reached is skipped and counted.
	MaxInFlight int `yaml:"max_in_flight"`

	// Safety caps on what a server may send us.
	MaxResponseBytes int64 `yaml:"max_response_bytes"`
	MaxEventBytes    int   `yaml:"max_event_bytes"`

	HTTPClientConfig promconfig.HTTPClientConfig `yaml:"http_client_config"`

	// ServerMetrics are the server's own Prometheus endpoints that a bench
	// window on this target reads around its measured run, as the bench
	// CLI's --server-metrics. Empty means the target URL's /metrics, tried
	// and left out when it does not answer. They come only from this file:
	// a bench window's body cannot name them, so an HTTP caller cannot make
	// the daemon fetch a URL of its choosing.
	ServerMetrics []SecretURL `yaml:"server_metrics,omitempty"`
	// NoServerMetrics reads none (the CLI's --no-server-metrics).
	NoServerMetrics bool `yaml:"no_server_metrics,omitempty"`
	// NoTraceparent sends no W3C traceparent header of our own on this
	// target's requests (one is sent by default, so that the server's
	// trace of a probe can be found from its exemplar).
	NoTraceparent bool `yaml:"no_traceparent,omitempty"`
	// CapacityCheck, when set, runs an SLO search on the target on a
	// schedule (capacity.go).
	CapacityCheck *CapacityCheck `yaml:"capacity_check,omitempty"`
}

// SecretURL is a URL whose password, if it has one, is a secret: it
// marshals (in /config) with the password shown as xxxxx, as net/url's
// Redacted writes it, so that the rendered config still parses. The
// server-metrics reads have a client of their own (they never share the
// target's http_client_config, so that they never take a connection from
// the measured requests), which leaves userinfo as the way to give them
// credentials.
type SecretURL string

// MarshalYAML renders the URL with its password redacted.
func (u SecretURL) MarshalYAML() (any, error) { return RedactURL(string(u)), nil }

// RedactURL returns s with the password of its userinfo, and the value of
// every query parameter whose name says it carries a credential (api_key,
// token, sig, ...), replaced by xxxxx, as net/url's Redacted writes a
// password, so that the result still parses. A string that does not parse
// as a URL is returned as "<unparseable URL>": it could hold anything.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparseable URL>"
	}
	if u.RawQuery != "" {
		// Rewritten pair by pair rather than through url.Values, so that
		// the order and spelling of the other parameters stay as given.
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, _, hasValue := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); hasValue && (err != nil || sensitiveName(name)) {
				parts[i] = k + "=xxxxx"
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return u.Redacted()
}

// ServerMetricsURLs returns the server-metrics endpoints as plain strings,
// the form a bench's Spec takes.
func (t Target) ServerMetricsURLs() []string {
	if len(t.ServerMetrics) == 0 {
		return nil
	}
	out := make([]string, len(t.ServerMetrics))
	for i, u := range t.ServerMetrics {
		out[i] = string(u)
	}
	return out
}

// Module is a request shape.
type Module struct {
	// Dataset is a datasets name: fixed (default), random, sharegpt, custom, ...
	Dataset     string `yaml:"dataset"`
	DatasetPath string `yaml:"dataset_path,omitempty"`
	// Prompt is the text of the fixed dataset.
	Prompt     string  `yaml:"prompt,omitempty"`
	InputLen   int     `yaml:"input_len"`
	OutputLen  int     `yaml:"output_len"`
	RangeRatio float64 `yaml:"range_ratio"`

	Temperature *float64 `yaml:"temperature,omitempty"`
	TopP        *float64 `yaml:"top_p,omitempty"`
	IgnoreEOS   *bool    `yaml:"ignore_eos,omitempty"`
	Stream      *bool    `yaml:"stream,omitempty"`
	// IncludeUsage asks OpenAI servers for stream_options.include_usage.
	IncludeUsage *bool `yaml:"include_usage,omitempty"`
	// ApplyChatTemplate renders the prompt with the tokenizer's chat template
	// before sending it to a completions endpoint.
	ApplyChatTemplate bool `yaml:"apply_chat_template,omitempty"`
	// Tokenizer is a path, an HF hub id, "server" (the target's /tokenize) or
	// empty for the embedded default.
	Tokenizer string         `yaml:"tokenizer,omitempty"`
	LoRA      string         `yaml:"lora,omitempty"`
	ExtraBody map[string]any `yaml:"extra_body,omitempty"`
	// Headers are extra request headers. Credentials belong in the target's
	// http_client_config, where they are secrets; Validate refuses them here.
	Headers map[string]string `yaml:"headers,omitempty"`
	Seed    int64             `yaml:"seed"`

	// Conversations and the prefix cache (docs/conversations.md). Turns
	// and TurnInputLen shape a conversation module (dataset conversation):
	// Turns requests per probe, the first InputLen tokens long, each later
	// one adding TurnInputLen tokens after the server's real answers.
	// CacheBust starts each single-turn probe's prompt with a random
	// prefix, so that no prefix cache can serve it. SessionHeader names a
	// header that carries one id per conversation, for routers that keep
	// a session on the replica holding its cache.
	Turns         int    `yaml:"turns,omitempty"`
	TurnInputLen  int    `yaml:"turn_input_len,omitempty"`
	CacheBust     bool   `yaml:"cache_bust,omitempty"`
	SessionHeader string `yaml:"session_header,omitempty"`

	// Answer shape and answer checks (docs/checks.md). ResponseFormat,
	// Tools and ToolChoice are OpenAI's fields, kept as written (JSON
	// values); each backend sends them in its own field. Checks says what
	// a probe verifies of each answer, beside timing it.
	ResponseFormat map[string]any `yaml:"response_format,omitempty"`
	Tools          []any          `yaml:"tools,omitempty"`
	ToolChoice     any            `yaml:"tool_choice,omitempty"`
	Checks         AnswerChecks   `yaml:"checks,omitempty"`
}

// AnswerChecks are the checks a module runs on each answer (docs/checks.md).
// The zero value checks nothing.
type AnswerChecks struct {
	// JSONSchema: the answer parses as JSON and, when response_format is
	// a json_schema, validates against its schema.
	JSONSchema bool `yaml:"json_schema,omitempty" json:"json_schema"`
	// ToolCall: the model called one of the declared tools, with
	// arguments that parse and validate against that tool's parameters.
	ToolCall bool `yaml:"tool_call,omitempty" json:"tool_call"`
	// Regex is searched for in the answer (unanchored, Go's RE2 syntax).
	Regex string `yaml:"regex,omitempty" json:"regex"`
	// Contains must occur in the answer; Equals must be the whole answer
	// once white space at both ends is trimmed.
	Contains string `yaml:"contains,omitempty" json:"contains"`
	Equals   string `yaml:"equals,omitempty" json:"equals"`
	// NoReasoningInContent: no reasoning markers in the answer text, and
	// not an empty answer with all the output in reasoning.
	NoReasoningInContent bool `yaml:"no_reasoning_in_content,omitempty" json:"no_reasoning_in_content"`
}

// Any reports whether at least one check is set.
func (c AnswerChecks) Any() bool {
	return c.JSONSchema || c.ToolCall || c.Regex != "" || c.Contains != "" || c.Equals != "" || c.NoReasoningInContent
}

// Bench holds the limits that protect targets from HTTP-triggered load.
type Bench struct {
	Enabled           bool           `yaml:"enabled"`
	MaxPrompts        int            `yaml:"max_prompts"`
	MaxRequestRate    float64        `yaml:"max_request_rate"`
	MaxConcurrency    int            `yaml:"max_concurrency"`
	MaxDuration       model.Duration `yaml:"max_duration"`
	MaxBodyBytes      int64          `yaml:"max_body_bytes"`
	MaxConcurrentRuns int            `yaml:"max_concurrent_runs"`
	ResultsDir        string         `yaml:"results_dir"`
	// ResultsRetentionCount and ResultsRetentionBytes bound what
	// ResultsDir keeps of ended windows (results and reports): the oldest
	// are removed first once either is exceeded. 0: no bound.
	ResultsRetentionCount int   `yaml:"results_retention_count"`
	ResultsRetentionBytes int64 `yaml:"results_retention_bytes"`
}

// ProbeAPI governs /probe.
type ProbeAPI struct {
	// AllowAdhocTargets lets /probe take a URL instead of a configured
	// target name. Off by default: otherwise /probe is an open proxy.
	AllowAdhocTargets bool `yaml:"allow_adhoc_targets"`
	// AdhocURLAllowlist holds regular expressions; an ad-hoc URL must match
	// one (anchored) to be probed.
	AdhocURLAllowlist []Regexp `yaml:"adhoc_url_allowlist,omitempty"`
}

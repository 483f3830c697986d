package bench

import (
	"fmt"
	"strings"
)

// Compat switches each restore one of sglang bench_serving's numbers where
// servingprobe deliberately measures differently. The names are what
// --compat accepts; "all" selects every one.
const (
	CompatNewConnection      = "new-connection"
	CompatNoUsage            = "no-usage"
	CompatChunkITL           = "chunk-itl"
	CompatBucketConcurrency  = "bucket-concurrency"
	CompatServerInfoDuration = "server-info-duration"
	CompatRandomLengths      = "random-lengths"
	CompatAllFailedError     = "all-failed-error"
	CompatEmptySuccess       = "empty-success"
	CompatDatasetInputTokens = "dataset-input-tokens"
	CompatChatLength         = "chat-length"
	CompatUserClock          = "user-clock"
)

// CompatOption describes one compat switch, for --help and docs/bench.md.
type CompatOption struct {
	Name        string
	Description string
	// Where says which package implements it.
	Where string
}

// CompatOptions lists every switch in a stable order.
var CompatOptions = []CompatOption{
	{CompatNewConnection, "open a new connection for every request, as sglang's per-request aiohttp session, so TTFT includes connection setup", "prober"},
	{CompatNoUsage, "do not ask for stream_options.include_usage, so output lengths fall back to sglang's rules", "prober"},
	{CompatChunkITL, "one ITL sample per stream chunk (per token only on sglang's native /generate), and peak output throughput counting chunks", "bench"},
	{CompatBucketConcurrency, "peak concurrent requests as sglang's 1-second bucket overlap instead of an exact sweep", "bench"},
	{CompatServerInfoDuration, "include the GET /server_info round trip in the benchmark duration for sglang backends", "cmd"},
	{CompatRandomLengths, "random datasets record the target length without re-measuring the decoded prompt", "datasets"},
	{CompatAllFailedError, "fail the run, writing no summary, when no request succeeded (sglang crashes)", "bench"},
	{CompatEmptySuccess, "count an HTTP 200 response that produced no output as a success with TTFT 0, as sglang does, instead of an empty_output failure", "bench"},
	{CompatChatLength, "chat requests carry only max_completion_tokens, as sglang's body, not also max_tokens (which servers such as ollama need to stop)", "prober"},
	{CompatUserClock, "stamp each arrival with the process's clock when the read returns and start each request at the HTTP call, as sglang's time.perf_counter(), instead of the kernel's receive time of the bytes and its transmit time of the request's first write", "prober"},
	{CompatDatasetInputTokens, "total_input_tokens and the input throughputs sum the dataset rows' prompt lengths, as sglang does, instead of the server's prompt token counts that input_lens reports", "bench"},
}

// Compat is a set of compat switches. The zero value is servingprobe's
// default behaviour.
type Compat struct {
	NewConnection      bool `json:"new_connection,omitempty"`
	NoUsage            bool `json:"no_usage,omitempty"`
	ChunkITL           bool `json:"chunk_itl,omitempty"`
	BucketConcurrency  bool `json:"bucket_concurrency,omitempty"`
	ServerInfoDuration bool `json:"server_info_duration,omitempty"`
	RandomLengths      bool `json:"random_lengths,omitempty"`
	AllFailedError     bool `json:"all_failed_error,omitempty"`
	EmptySuccess       bool `json:"empty_success,omitempty"`
	DatasetInputTokens bool `json:"dataset_input_tokens,omitempty"`
	ChatLength         bool `json:"chat_length,omitempty"`
	UserClock          bool `json:"user_clock,omitempty"`
}

func (c *Compat) field(name string) *bool {
	switch name {
	case CompatNewConnection:
		return &c.NewConnection
	case CompatNoUsage:
		return &c.NoUsage
	case CompatChunkITL:
		return &c.ChunkITL
	case CompatBucketConcurrency:
		return &c.BucketConcurrency
	case CompatServerInfoDuration:
		return &c.ServerInfoDuration
	case CompatRandomLengths:
		return &c.RandomLengths
	case CompatAllFailedError:
		return &c.AllFailedError
	case CompatEmptySuccess:
		return &c.EmptySuccess
	case CompatDatasetInputTokens:
		return &c.DatasetInputTokens
	case CompatChatLength:
		return &c.ChatLength
	case CompatUserClock:
		return &c.UserClock
	}
	return nil
}

// ParseCompat parses a --compat value: "", "all", or a comma-separated list
// of names. Repeated names are allowed.
func ParseCompat(s string) (Compat, error) {
	var c Compat
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "":
			continue
		case "all":
			for _, o := range CompatOptions {
				*c.field(o.Name) = true
			}
			continue
		}
		f := c.field(name)
		if f == nil {
			names := make([]string, len(CompatOptions))
			for i, o := range CompatOptions {
				names[i] = o.Name
			}
			return Compat{}, fmt.Errorf("unknown compat switch %q (want all or one of %s)", name, strings.Join(names, ", "))
		}
		*f = true
	}
	return c, nil
}

// Names lists the switches that are on, in CompatOptions order.
func (c Compat) Names() []string {
	var out []string
	for _, o := range CompatOptions {
		if *c.field(o.Name) {
			out = append(out, o.Name)
		}
	}
	return out
}

// String is the --compat value that parses back to c.
func (c Compat) String() string {
	n := c.Names()
	if len(n) == len(CompatOptions) {
		return "all"
	}
	return strings.Join(n, ",")
}

// Has reports whether the named switch is on.
func (c Compat) Has(name string) bool {
	f := c.field(name)
	return f != nil && *f
}

package prober

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/jsonscan"
)

// SSEEvent is one event from the stream reader. Data is only valid until the
// reader's next call, whatever that call returns (an error or EOF too: Data
// may point into the read buffer); decoders must not keep it (copy what they
// return).
type SSEEvent struct {
	Event string // the event: field, if any
	Data  []byte // data: lines joined with "\n" (or one NDJSON line, or a whole JSON body)
}

// Usage is a server's token count. Both counts are cumulative for the
// request: OpenAI servers send it once at the end (or on every chunk with
// vLLM's continuous_usage_stats); sglang's meta_info carries it on every
// chunk.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int // prompt tokens served from the prefix cache, if reported
	// ReasoningTokens is the part of CompletionTokens the server says went
	// to reasoning (completion_tokens_details.reasoning_tokens,
	// output_tokens_details.reasoning_tokens), 0 when it says nothing.
	ReasoningTokens int
	Source          TokenSource // TokenSourceUsage or TokenSourceMetaInfo
}

// Delta is what one event means. Decode fills it; it never reads a clock.
//
// Text is only valid until the reader's next call: on the fast path it
// aliases SSEEvent.Data, so that decoding allocates nothing.
type Delta struct {
	// Text is the generated text this event carries (reasoning and tool-call
	// arguments included: they are output tokens too). When TextRaw is set
	// it is still the body of a JSON string literal (escapes, or invalid
	// UTF-8 to be replaced); read it with AppendText, which handles both.
	Text    []byte
	TextRaw bool
	// Tokens is the number of tokens this event carries when the protocol
	// defines it per event (TensorRT-LLM: one, or the length of
	// output_log_probs under speculative decoding), else 0. Cumulative
	// counts go in Usage.
	Tokens int
	// Reasoning: all of Text is reasoning (a reasoning_content or reasoning
	// field, a reasoning delta, a thinking delta), not the answer. An event
	// that carries both is the answer's first: its answer text arrived
	// with it.
	Reasoning bool
	// Usage is a cumulative usage block; Usage.Source is empty when the
	// event has none.
	Usage Usage
	// Cumulative means Text replaces everything so far (sglang /generate).
	Cumulative   bool
	FinishReason string
	// SpecAcceptLength is sglang's per-request speculative accept length.
	SpecAcceptLength float64
	// Server holds the timings a server states at the end (ollama).
	Server ServerTimings
	// CacheDetails is sglang's split of the cached prompt tokens by cache
	// tier, when the event carries one; nil otherwise.
	CacheDetails *CacheDetails
	// ToolCalls are the tool-call fragments the event carries (their
	// arguments are in Text too: they are output); Run assembles them.
	ToolCalls []ToolCallDelta
	// Answer is the part of Text that is the answer's content, when
	// AnswerSet: a decoder that reads an event mixing reasoning, content
	// and tool calls says which part is which. Unset, all of Text is the
	// answer's unless Reasoning.
	Answer    string
	AnswerSet bool
	Done      bool // [DONE] or a terminal event
}

// HasUsage reports whether the event carried a usage block.
func (d *Delta) HasUsage() bool { return d.Usage.Source != "" }

// AppendText appends the event's decoded text to dst.
func (d *Delta) AppendText(dst []byte) []byte {
	if d.TextRaw {
		return jsonscan.AppendUnquoted(dst, d.Text)
	}
	return append(dst, d.Text...)
}

// TextString returns the decoded text (it allocates; for tests and tools).
func (d *Delta) TextString() string { return string(d.AppendText(nil)) }

// RequestOptions are the per-request knobs that do not come from the dataset.
type RequestOptions struct {
	BaseURL     string
	Model       string // sent as "model"
	Stream      bool
	IgnoreEOS   bool
	Temperature *float64 // nil: the bench_serving default for the backend
	TopP        *float64 // nil: not sent
	// IncludeUsage asks for stream_options.include_usage on OpenAI backends.
	// It is our default; bench_serving compatibility mode turns it off.
	IncludeUsage bool
	// CompatChatLength sends a chat request's length as
	// max_completion_tokens alone, bench_serving's body. By default chat
	// sends max_tokens as well: ollama's OpenAI route honours only
	// max_tokens, and vLLM and sglang read max_completion_tokens first when
	// both are set, so the second field changes nothing where the first is
	// understood.
	CompatChatLength bool
	// ExtraBody is merged into the body's top level last, replacing keys
	// that exist (in place) and appending new ones in sorted order.
	ExtraBody map[string]any
	Headers   map[string]string
	// NoTraceparent sends no traceparent header of our own (a header
	// in Headers is still sent, and its trace id recorded).
	NoTraceparent bool
	// ResponseFormat, Tools and ToolChoice are the module's, in OpenAI's
	// shape; each protocol sends them in its own fields (answerformat.go).
	ResponseFormat map[string]any
	Tools          []any
	ToolChoice     any
}

// Backend is one wire protocol. Every Backend is one of this package's
// protocols (one file each): beside NewRequest and Decode, each states how
// its stream is framed and how it decodes against a stream's memo, so
// that the reader never has to guess a protocol's traits from its type.
type Backend interface {
	// NewRequest builds the HTTP request for one prompt. The caller adds
	// the context.
	NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error)
	// Decode interprets one event. It is pure: no clock, no I/O, and it
	// keeps nothing from ev.Data.
	Decode(ev SSEEvent) (Delta, error)
	// framing is how the protocol's stream is framed and ended.
	framing() Framing
	// decodeMemo answers exactly as Decode does, into d; protocols whose
	// decoding can use a stream's scanMemo answer faster with it on a
	// steady stream, the others call Decode. m is per stream (and so per
	// Backend).
	decodeMemo(ev SSEEvent, m *scanMemo, d *Delta) error
}

// Framing is how a protocol's stream is framed and ended, as far as the
// reader must know beyond Decode. Each protocol states it beside its
// decoder (its framing method); the zero Framing is server-sent events,
// ended by [DONE] or a finish reason.
type Framing struct {
	// EOFEnds: the stream has no terminal marker (TensorRT-LLM's
	// generate_stream), so a clean EOF ends it successfully instead of
	// being a cut stream.
	EOFEnds bool
	// NDJSON: the server streams newline-delimited JSON
	// (application/x-ndjson, as ollama's native API does). A backend
	// without it that gets an NDJSON stream, or one with it that gets
	// server-sent events, is talking to a server of another protocol: its
	// lines would decode as events with no tokens and no end, so the
	// request is refused at once with a hint instead.
	NDJSON bool
	// Raw: the server may answer a stream with an unframed body
	// (FormatRaw: the generated text itself, no decoding) instead of SSE.
	Raw bool
	// NoOutput: the answer generates nothing (embeddings): a body that
	// decodes is a success without output, not empty_output.
	NoOutput bool
}

// set stores what Decode answered: decodeMemo of the protocols that have
// no memo path is d.set(b.Decode(ev)).
func (d *Delta) set(v Delta, err error) error {
	*d = v
	return err
}

// BackendInfo describes one bench_serving --backend name. Every trait a
// caller needs to tell backends apart is a field here: no caller decides
// by a backend's name or its protocol (a test outside this package holds
// callers to it).
type BackendInfo struct {
	Name string
	// ResponseFormat: the protocol can ask for structured output (a
	// module's response_format), in its own field; Tools: it can declare
	// tools (a module's tools and tool_choice). See answerformat.go.
	ResponseFormat, Tools bool
	// Protocol is the wire protocol (one Backend implementation each),
	// for messages and tests; callers decide by the traits below.
	Protocol string
	// Path is the endpoint, appended to the base URL.
	Path string
	// DefaultPort is bench_serving's port when --port is unset (its table
	// of defaults, including its gaps: vllm-chat and lmdeploy-chat default
	// to 30000).
	DefaultPort int
	// NoAuth: bench_serving sends no Authorization header (trt).
	NoAuth bool
	// ModelRequired: bench_serving requires --model (trt, truss).
	ModelRequired bool
	// NoModelList: the server lists no models (Triton's generate_stream
	// server has no /v1/models), so a missing model is not detected.
	NoModelList bool
	// Chat marks backends that send a chat history (messages), so that
	// they can replay multi-turn conversations.
	Chat bool
	// SplitChunkGaps: the summary splits a multi-token chunk's gap per
	// token for this backend even under bench_serving's chunk accounting
	// (CompatChunkITL), as bench_serving does for sglang's native
	// /generate, whose chunks carry cumulative token counts (sglang,
	// sglang-native).
	SplitChunkGaps bool
	// Images: the request carries a prompt's images: OpenAI chat bodies
	// (image_url content items), sglang's /generate image_data, and
	// sglang's completions extension (sglang-oai). Image datasets need it.
	// (ollama's native bodies carry images too, in their "images" field;
	// they are not marked, so that image datasets stay with the backends
	// bench_serving accepts.)
	Images bool
	// Audio: the request carries a prompt's audio clips, as input_audio
	// content parts of an OpenAI chat message (the audio dataset needs
	// it); no other protocol has a place for them.
	Audio bool
	// InputIDs: the backend can send a prompt as token ids
	// (--tokenize-prompt sends input_ids to sglang's /generate; only the
	// sglang name, as bench_serving allows it).
	InputIDs bool
	// ReadyPath is what the readiness check polls with GET, appended to the
	// base URL until it answers 200: /v1/models for OpenAI-style servers;
	// empty polls the base URL itself (trt: Triton's generate_stream
	// server has no /v1/models). See ReadyURL.
	ReadyPath string
	// FlushCachePath is the endpoint that empties the server's prefix cache
	// (POST, before a bench with --flush-cache): /reset_prefix_cache for
	// vLLM, /flush_cache for sglang and everything else. See FlushCacheURL.
	FlushCachePath string
	// FlushCacheTimeout: the flush endpoint takes ?timeout=<seconds>
	// (sglang's /flush_cache waits up to that long for running requests).
	FlushCacheTimeout bool
	// FlushCacheInCI: bench_serving flushes the cache before the measured
	// run, unasked, when SGLANG_IS_IN_CI is set (its backends whose name
	// contains "sglang").
	FlushCacheInCI bool
	// AcceptLength: bench_serving reports the server's speculative accept
	// length, read from its server info after the run (the sglang names).
	AcceptLength bool
	// ServerInfoTimed: bench_serving reads the server info before it stops
	// the clock, so that, under its compat option, the read counts in the
	// run's duration (the sglang names).
	ServerInfoTimed bool
	// CacheReportDetails: --cache-report asks the server for its cache
	// tiers' split (return_cached_tokens_details in the body: sglang's
	// OpenAI-style routes, whose answers carry sglext).
	CacheReportDetails bool
	// SamplingFlags: the CLI's --temperature and --top-p are sent
	// (sglang's /generate as bench_serving sends them, the OpenAI routes
	// as vLLM's bench serve does).
	SamplingFlags bool
	// VLLMSampling: vLLM's other sampling flags (top_k, min_p, the
	// penalties) go in the extra body, as vLLM sends them on its
	// OpenAI-compatible backends only (chat and completions).
	VLLMSampling bool
	// ChatTemplateKwargs: the body may carry chat_template_kwargs (OpenAI
	// chat).
	ChatTemplateKwargs bool
	// LogprobFields: sglang's logprob and routed-expert flags go in the
	// body (sglang's /generate).
	LogprobFields bool
	// LogprobsCount: --return-logprob with --top-logprobs-num sends
	// logprobs=<n> (OpenAI completions).
	LogprobsCount bool
	// TextChunks: bench_serving's request function for this backend
	// fills text_chunks (its completions and chat functions).
	TextChunks bool
	// SpecAccept: bench_serving's request function reads a request's
	// spec_accept_length from every answer (its /generate function), and
	// SpecAcceptUnstreamed from a non-streamed one only (its chat
	// function, from choices[0].meta_info). See ReadsSpecAccept.
	SpecAccept, SpecAcceptUnstreamed bool
	// APIRoot is the path under which the server's own documentation gives
	// its base URL (ollama: http://host:11434/api). Every path here is
	// written from the server's root, so a base URL ending in it is taken
	// as the root, as a trailing /v1 is (BaseURL, ReadyURL, and the
	// backend's own requests).
	APIRoot string
	// Embedding marks embedding backends (bench_serving's
	// sglang-embedding and vllm-embedding, and openai-embeddings: no
	// output tokens, so the table has no output, TTFT, ITL or TPOT rows).
	Embedding bool
	// APIKeyHeader is a header that carries the API key itself, sent
	// beside the bearer token: Anthropic's API authenticates with
	// x-api-key, while vLLM's --api-key check reads Authorization.
	APIKeyHeader string

	// unsupported, when set, is why a name bench_serving lists is
	// refused: LookupBackend answers with it, and the name is in no list
	// of accepted ones.
	unsupported string
	newBackend  func() Backend
}

// ReadsSpecAccept reports whether bench_serving's request function reads
// spec_accept_length for a request streamed or not.
func (b BackendInfo) ReadsSpecAccept(stream bool) bool {
	return b.SpecAccept || b.SpecAcceptUnstreamed && !stream
}

// BaseURL is NormalizeBaseURL for this backend: it also takes a base URL
// that ends in the backend's APIRoot as the server's root.
func (b BackendInfo) BaseURL(raw string) (string, error) {
	u, err := NormalizeBaseURL(raw)
	if err != nil {
		return "", err
	}
	return trimAPIRoot(u, b.APIRoot), nil
}

// targetBaseURL is BackendInfo.BaseURL for a config target's url: the
// daemon's targets and the CLI's flags take the same base URLs. Its error
// does not quote raw; config names the field.
func targetBaseURL(backend, raw string) (string, error) {
	u, err := config.NormalizeBaseURL(raw)
	if err != nil {
		return "", err
	}
	if info, lerr := LookupBackend(backend); lerr == nil {
		u = trimAPIRoot(u, info.APIRoot)
	}
	return u, nil
}

// trimAPIRoot removes root from the end of base, when root is set.
func trimAPIRoot(base, root string) string {
	if root == "" {
		return base
	}
	return strings.TrimSuffix(strings.TrimRight(base, "/"), root)
}

// ReadyURL is the URL the readiness check polls for a base URL.
func (b BackendInfo) ReadyURL(base string) string { return trimAPIRoot(base, b.APIRoot) + b.ReadyPath }

// FlushCacheURL is the URL that flushes the server's prefix cache, with
// the wait the server may take when the endpoint takes one.
func (b BackendInfo) FlushCacheURL(base string, timeout time.Duration) string {
	u := trimAPIRoot(base, b.APIRoot) + b.FlushCachePath
	if b.FlushCacheTimeout {
		u += "?timeout=" + strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
	}
	return u
}

// New returns a fresh Backend for this name.
func (b BackendInfo) New() Backend { return b.newBackend() }

// Protocols.
const (
	ProtocolSGLangGenerate    = "sglang-generate"
	ProtocolOpenAICompletions = "openai-completions"
	ProtocolOpenAIChat        = "openai-chat"
	ProtocolTRT               = "trt-generate-stream"
	ProtocolTruss             = "truss"
	ProtocolOllama            = "ollama"
	ProtocolOpenAIResponses   = "openai-responses"
	ProtocolAnthropic         = "anthropic-messages"
	ProtocolOpenAIEmbeddings  = "openai-embeddings"
)

func newSGLang() Backend      { return sglangGenerate{} }
func newCompletions() Backend { return openAICompletions{path: pathCompletions} }
func newChat() Backend        { return openAIChat{} }
func newTRT() Backend         { return trtGenerateStream{} }
func newTruss() Backend       { return truss{} }
func newOllama() Backend      { return ollama{} }
func newOllamaChat() Backend  { return ollama{chat: true} }
func newResponses() Backend   { return openAIResponses{} }
func newAnthropic() Backend   { return anthropic{} }
func newEmbeddings() Backend  { return openAIEmbeddings{} }

// The traits every name of a protocol shares; the table below adds each
// name's own.
var (
	generateTraits = BackendInfo{Protocol: ProtocolSGLangGenerate, Path: pathGenerate, Images: true, ResponseFormat: true,
		SamplingFlags: true, LogprobFields: true, SpecAccept: true, newBackend: newSGLang}
	completionsTraits = BackendInfo{Protocol: ProtocolOpenAICompletions, Path: pathCompletions, ResponseFormat: true,
		SamplingFlags: true, VLLMSampling: true, LogprobsCount: true, TextChunks: true, newBackend: newCompletions}
	chatTraits = BackendInfo{Protocol: ProtocolOpenAIChat, Path: pathChat, Chat: true, Images: true, Audio: true, ResponseFormat: true, Tools: true,
		SamplingFlags: true, VLLMSampling: true, ChatTemplateKwargs: true, TextChunks: true, SpecAcceptUnstreamed: true, newBackend: newChat}
	embeddingsTraits = BackendInfo{Protocol: ProtocolOpenAIEmbeddings, Path: pathEmbeddings, Embedding: true, newBackend: newEmbeddings}
)

// with returns base with edit applied: a protocol's traits with a name's.
func with(base BackendInfo, edit func(*BackendInfo)) BackendInfo {
	edit(&base)
	return base
}

// sglangName adds what bench_serving does for every backend whose name
// contains "sglang": port 30000, the timed /flush_cache, the flush under
// SGLANG_IS_IN_CI and the server info's accept length and timing.
func sglangName(b *BackendInfo) {
	b.DefaultPort = 30000
	b.ReadyPath, b.FlushCachePath, b.FlushCacheTimeout = pathModels, pathFlushCache, true
	b.FlushCacheInCI, b.AcceptLength, b.ServerInfoTimed = true, true, true
}

// openAIServer is an OpenAI-style server's readiness and cache flush,
// with the flush endpoint given.
func openAIServer(port int, flush string) func(*BackendInfo) {
	return func(b *BackendInfo) { b.DefaultPort, b.ReadyPath, b.FlushCachePath = port, pathModels, flush }
}

// backends maps every --backend name bench_serving lists to its protocol
// and traits, as blackbox_exporter's Probers map does, plus ollama's,
// OpenAI's and Anthropic's own APIs. It is the one list of backend names:
// config and the commands ask it.
var backends = map[string]BackendInfo{
	"sglang":        with(generateTraits, func(b *BackendInfo) { sglangName(b); b.SplitChunkGaps, b.InputIDs = true, true }),
	"sglang-native": with(generateTraits, func(b *BackendInfo) { sglangName(b); b.SplitChunkGaps = true }),
	// sglang's completions route takes image_data too.
	"sglang-oai":      with(completionsTraits, func(b *BackendInfo) { sglangName(b); b.Images, b.CacheReportDetails = true, true }),
	"vllm":            with(completionsTraits, openAIServer(8000, pathResetPrefixCache)),
	"lmdeploy":        with(completionsTraits, openAIServer(23333, pathFlushCache)),
	"openai":          with(completionsTraits, openAIServer(8000, pathFlushCache)),
	"sglang-oai-chat": with(chatTraits, func(b *BackendInfo) { sglangName(b); b.CacheReportDetails = true }),
	"vllm-chat":       with(chatTraits, openAIServer(30000, pathResetPrefixCache)),
	"lmdeploy-chat":   with(chatTraits, openAIServer(30000, pathFlushCache)),
	"openai-chat":     with(chatTraits, openAIServer(8000, pathFlushCache)),
	"trt": {Protocol: ProtocolTRT, Path: pathTRT, DefaultPort: 8000, NoAuth: true, ModelRequired: true, NoModelList: true,
		ReadyPath: "", FlushCachePath: pathFlushCache, newBackend: newTRT},
	"truss": {Protocol: ProtocolTruss, Path: pathTruss, DefaultPort: 8080, ModelRequired: true,
		ReadyPath: pathModels, FlushCachePath: pathFlushCache, newBackend: newTruss},
	// Not bench_serving's: ollama's native API (its OpenAI routes work with
	// openai and openai-chat). 11434 is ollama's port.
	"ollama": {Protocol: ProtocolOllama, Path: pathOllamaGenerate, DefaultPort: 11434, APIRoot: ollamaAPIRoot, ResponseFormat: true,
		ReadyPath: pathModels, FlushCachePath: pathFlushCache, newBackend: newOllama},
	"ollama-chat": {Protocol: ProtocolOllama, Path: pathOllamaChat, Chat: true, DefaultPort: 11434, APIRoot: ollamaAPIRoot, ResponseFormat: true, Tools: true,
		ReadyPath: pathModels, FlushCachePath: pathFlushCache, newBackend: newOllamaChat},
	// Not bench_serving's either: OpenAI's Responses API and Anthropic's
	// Messages API, which vLLM, sglang (Responses) and ollama serve beside
	// their chat route. Both carry a conversation, so they replay
	// multi-turn datasets. 8000 is vLLM's port.
	"openai-responses": {Protocol: ProtocolOpenAIResponses, Path: pathResponses, Chat: true, DefaultPort: 8000,
		ReadyPath: pathModels, FlushCachePath: pathFlushCache, newBackend: newResponses},
	"anthropic": {Protocol: ProtocolAnthropic, Path: pathMessages, Chat: true, DefaultPort: 8000, APIKeyHeader: anthropicAPIKeyHeader,
		ReadyPath: pathModels, FlushCachePath: pathFlushCache, newBackend: newAnthropic},
	// Embeddings: bench_serving's two names and the plain OpenAI one, all
	// /v1/embeddings. sglang's embedding answers carry sglext as its
	// other OpenAI-style routes do.
	"sglang-embedding":  with(embeddingsTraits, func(b *BackendInfo) { sglangName(b); b.CacheReportDetails = true }),
	"vllm-embedding":    with(embeddingsTraits, openAIServer(8000, pathResetPrefixCache)),
	"openai-embeddings": with(embeddingsTraits, openAIServer(8000, pathFlushCache)),
	// bench_serving lists gserver among its backends, but its request
	// function is `raise NotImplementedError()` (sglang
	// python/sglang/benchmark/serving.py at 00f9ec47,
	// async_request_gserver): its run fails at the first (warm-up)
	// request with a bare NotImplementedError. It is refused before
	// anything is sent, naming the same exception.
	"gserver": {unsupported: "NotImplementedError (bench_serving's gserver request function raises it; there is no gserver client)"},
}

// UnsupportedBackendError is a backend name bench_serving lists that
// servingprobe refuses, with why.
type UnsupportedBackendError struct{ Name, Why string }

func (e *UnsupportedBackendError) Error() string {
	return "backend " + e.Name + " is not supported: " + e.Why
}

// LookupBackend returns the BackendInfo for a --backend name.
func LookupBackend(name string) (BackendInfo, error) {
	b, ok := backends[name]
	if ok && b.unsupported != "" {
		return BackendInfo{}, &UnsupportedBackendError{Name: name, Why: b.unsupported}
	}
	if !ok {
		return BackendInfo{}, fmt.Errorf("unknown backend %q (known: %v)", name, BackendNames())
	}
	b.Name = name
	return b, nil
}

// ConfigChecks are the checks a config loaded for probes needs beyond
// config's own: its targets' backend names are this package's one list
// (config may not import it). Every load of the daemon's and probe's
// config goes through ConfigChecks.Load, so serve, reload, check-config
// and probe refuse the same files, each problem at its place in the file.
var ConfigChecks = config.Checks{Backend: CheckBackend, BaseURL: targetBaseURL, Schema: CheckSchema}

// CheckBackend returns why name is not a backend servingprobe speaks: an
// unknown name with the list, or an *UnsupportedBackendError.
func CheckBackend(name string) error {
	_, err := LookupBackend(name)
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*UnsupportedBackendError](err); ok {
		return err
	}
	return fmt.Errorf("unknown backend %q (one of %s)", name, strings.Join(BackendNames(), ", "))
}

// NewBackend returns the Backend for a --backend name.
func NewBackend(name string) (Backend, error) {
	b, err := LookupBackend(name)
	if err != nil {
		return nil, err
	}
	return b.New(), nil
}

// DefaultPort returns bench_serving's default port for a backend name.
func DefaultPort(name string) (int, bool) {
	b, err := LookupBackend(name)
	return b.DefaultPort, err == nil
}

// BackendNames lists the accepted --backend names, sorted.
func BackendNames() []string {
	names := make([]string, 0, len(backends))
	for n, b := range backends {
		if b.unsupported == "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

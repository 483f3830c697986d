package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/config"
)

// ClientOptions tune the HTTP client for measurement.
type ClientOptions struct {
	// Concurrency is the most requests that will be in flight at once; the
	// idle pool is never smaller, so a benchmark does not reconnect.
	Concurrency int
	// H2C speaks HTTP/2 without TLS (prior knowledge) to http:// targets.
	// HTTP/2 over TLS follows the target's enable_http2.
	H2C bool
	// UserAgent, if set, replaces Go's.
	UserAgent string
	// NewConnection turns keep-alives off: every request dials its own
	// connection, as bench_serving's per-request aiohttp session does
	// (--compat new-connection).
	NewConnection bool
	// UserClock stamps arrivals with the process's clock when a read
	// returns, and starts requests at the HTTP call, instead of the
	// kernel's receive times and the request's write (--compat
	// user-clock).
	UserClock bool
	// DialContext, if set, makes every connection instead of the
	// network's dialer; the connections it returns are not kernel-stamped,
	// so results are stamped by the user clock. It exists for tests that
	// run a client and a server over in-memory connections in a
	// testing/synctest bubble (llmtest.PipeListener), where sockets would
	// put real time into a test of fake time; production leaves it nil.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewClient builds the HTTP client for a target from its http_client_config
// (auth, TLS, proxy, headers) with config.NewClientFromConfig, then tunes
// the transport for measurement: keep-alives on, no transparent
// compression (prometheus/common already disables it; requests also send
// Accept-Encoding: identity), no cap on connections per host, an idle pool
// at least as large as the concurrency, HTTP/1.1 unless HTTP/2 is asked for.
//
// Timeouts are not set on the client: Run's caller bounds each request with
// a context deadline from the target's timeout, which also covers the body.
func NewClient(t *config.Target, o ClientOptions) (*http.Client, error) {
	cfg := t.HTTPClientConfig
	opts := []promconfig.HTTPClientOption{promconfig.WithIdleConnTimeout(90 * time.Second)}
	if o.NewConnection {
		// prometheus/common builds the transport; asking it is the one
		// way that also holds when auth or headers wrap the transport.
		opts = append(opts, promconfig.WithKeepAlivesDisabled())
	}
	switch {
	case o.DialContext != nil:
		opts = append(opts, promconfig.WithDialContextFunc(o.DialContext))
	case !o.UserClock:
		opts = append(opts, promconfig.WithDialContextFunc(dialStamped))
	}
	// The user agent is added after tuning: given to prometheus/common it
	// would wrap the transport, which then could not be tuned.
	name := t.Name
	if name == "" {
		name = "servingprobe"
	}
	c, err := promconfig.NewClientFromConfig(cfg, name, opts...)
	if err != nil {
		return nil, fmt.Errorf("http client for target %q: %w", t.Name, err)
	}
	if c.CheckRedirect == nil { // follow_redirects: true
		// Only on the target's host: the credentials and headers of the
		// config are added to every request, redirected ones included.
		c.CheckRedirect = config.CheckRedirect(maxRedirects)
	}
	// prometheus/common builds the *http.Transport itself and returns it
	// bare unless auth, headers or file-based TLS wrap it. Tune it when we
	// can reach it.
	tr, bare := c.Transport.(*http.Transport)
	switch {
	case bare:
		if o.Concurrency > tr.MaxIdleConnsPerHost {
			tr.MaxIdleConnsPerHost = o.Concurrency
			tr.MaxIdleConns = max(tr.MaxIdleConns, o.Concurrency)
		}
		tr.MaxConnsPerHost = 0
		if o.H2C {
			var p http.Protocols
			p.SetUnencryptedHTTP2(true)
			tr.Protocols = &p
		}
	case o.H2C:
		return nil, fmt.Errorf("target %q: h2c cannot be combined with authentication, headers or file-based TLS in http_client_config", t.Name)
	default:
		// Wrapped by auth, headers or file-based TLS: the idle pool stays
		// at prometheus/common's 1000 per host; connections beyond it are
		// closed when idle and redialled (the redial shows in Result.Trace).
	}
	if o.UserAgent != "" {
		c.Transport = promconfig.NewUserAgentRoundTripper(o.UserAgent, c.Transport)
	}
	return c, nil
}

// DetectModel asks an OpenAI-compatible server for its models and returns
// the first id, as bench_serving does when --model is unset.
func DetectModel(ctx context.Context, c *http.Client, baseURL string) (string, error) {
	return DetectModelWithHeaders(ctx, c, baseURL, nil, nil)
}

// DetectModelWithHeaders is DetectModel sending extra headers (an API key
// that is not in the client's config), with red redacting the server's
// answer in errors. The id it returns has passed red.Label: it becomes
// the model label of every series of the target, so an id that is not
// shaped like a model name, or that holds a credential, is an error
// (naming neither the id nor the secret), not a model.
func DetectModelWithHeaders(ctx context.Context, c *http.Client, baseURL string, headers map[string]string, red *config.Redactor) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/v1/models", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept-Encoding", "identity")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("detect model: %w", red.RedactError(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", fmt.Errorf("detect model: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("detect model: %w", &StatusError{Code: resp.StatusCode, Body: TruncateUTF8(red.Redact(strings.TrimSpace(string(b))), maxErrorBody)})
	}
	var m struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("detect model: decode /v1/models: %w", err)
	}
	if len(m.Data) == 0 || m.Data[0].ID == "" {
		return "", fmt.Errorf("detect model: /v1/models lists no model")
	}
	if _, err := red.Label(m.Data[0].ID); err != nil {
		return "", fmt.Errorf("detect model: GET /v1/models names as its first model %v, which is not used: set the model", err)
	}
	if len(m.Data) > 1 {
		// Say which one and why: a server serving several models (ollama,
		// a router) would otherwise be measured on one picked silently.
		// Only ids shaped like model names are named.
		ids := make([]string, 0, min(len(m.Data), maxListedModels))
		hidden := 0
		for _, d := range m.Data {
			if _, err := red.Label(d.ID); err != nil {
				hidden++
				continue
			}
			if len(ids) < maxListedModels {
				ids = append(ids, d.ID)
			}
		}
		return m.Data[0].ID, &SeveralModelsError{Picked: m.Data[0].ID, All: ids, Count: len(m.Data), Hidden: hidden}
	}
	return m.Data[0].ID, nil
}

// maxListedModels bounds the ids a SeveralModelsError names: a router may
// list hundreds.
const maxListedModels = 16

// SeveralModelsError is returned, with the first model, when /v1/models
// lists more than one: the first is used, as bench_serving does, and the
// caller says so. It is not a failure.
type SeveralModelsError struct {
	Picked string
	// All holds the listed ids that pass config.Redactor.Label, at most
	// maxListedModels of them; Count is how many the server listed, Hidden
	// how many failed it.
	All           []string
	Count, Hidden int
}

func (e *SeveralModelsError) Error() string {
	names := strings.Join(e.All, ", ")
	if rest := e.Count - len(e.All); rest > 0 {
		names += fmt.Sprintf(" and %d more", rest)
		if e.Hidden > 0 {
			names += fmt.Sprintf(", %d of them not shaped like model ids", e.Hidden)
		}
	}
	return fmt.Sprintf("GET /v1/models lists %d models (%s); using the first, %q, as bench_serving does: set the model to choose",
		e.Count, names, e.Picked)
}

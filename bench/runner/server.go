package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

// maxControlBody bounds what the control endpoints (/model_info,
// /server_info, profiling) may send back.
const maxControlBody = 4 << 20

// control sends one non-measured request and returns the body of a 200.
// controlTimeout bounds one control request; flushing a cache or starting
// a profiler can take a while, an answer later than this will not come.
const controlTimeout = 5 * time.Minute

func control(ctx context.Context, c *http.Client, method, u string, body any, headers map[string]string) ([]byte, int, error) {
	// A control request (server_info, model_info, flush_cache, profiling)
	// to a server that stalls must not hang the bench after its run.
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxControlBody))
	if err != nil {
		return nil, resp.StatusCode, err
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return b, resp.StatusCode, fmt.Errorf("%s %s: HTTP %d %s", method, u, resp.StatusCode, msg)
	}
	return b, resp.StatusCode, nil
}

// readyCheck polls GET the backend's ReadyURL ({base}/v1/models; the base
// URL itself for trt) once a second until it answers 200, for at most
// timeout (newest sglang).
func readyCheck(ctx context.Context, c *http.Client, base, backend string, timeout time.Duration, headers map[string]string, red *config.Redactor, logger log.Logger) error {
	if timeout <= 0 {
		return nil
	}
	info, err := prober.LookupBackend(backend)
	if err != nil {
		return err
	}
	u := info.ReadyURL(base)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// last keeps the most recent answer that is not the check's own
	// deadline, so that "connection refused" is what the user reads.
	var last error
	start, said := time.Now(), time.Time{}
	for {
		_, _, err := control(ctx, c, http.MethodGet, u, nil, headers)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = red.RedactError(err) // the answer may echo the credentials
		}
		if now := time.Now(); said.IsZero() || now.Sub(said) >= 10*time.Second {
			// Say what is being waited for, as bench_serving prints, rather
			// than a minute of silence.
			level.Info(logger).Log("msg", "Waiting for the server", "url", u, "err", last,
				"waited", now.Sub(start).Round(time.Second), "gives_up_after", timeout, "flag", "--ready-check-timeout-sec")
			said = now
		}
		select {
		case <-ctx.Done():
			if context.Cause(ctx) != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err()
			}
			return fmt.Errorf("server not ready after %s: GET %s: %w (--ready-check-timeout-sec; 0 skips the check)", timeout, u, last)
		case <-tick.C:
		}
	}
}

// modelInfoTokenizer asks GET {base}/model_info for tokenizer_path, else
// model_path, as newest sglang does when --tokenizer is unset.
func modelInfoTokenizer(ctx context.Context, c *http.Client, base string, headers map[string]string) (string, error) {
	b, _, err := control(ctx, c, http.MethodGet, base+"/model_info", nil, headers)
	if err != nil {
		return "", err
	}
	var mi struct {
		TokenizerPath string `json:"tokenizer_path"`
		ModelPath     string `json:"model_path"`
	}
	if err := json.Unmarshal(b, &mi); err != nil {
		return "", fmt.Errorf("decode /model_info: %w", err)
	}
	if mi.TokenizerPath != "" {
		return mi.TokenizerPath, nil
	}
	if mi.ModelPath != "" {
		return mi.ModelPath, nil
	}
	return "", errors.New("/model_info names no tokenizer_path or model_path")
}

// flushCache is POST to the backend's FlushCacheURL: /flush_cache (with
// ?timeout= for sglang backends) or /reset_prefix_cache for vllm backends.
func flushCache(ctx context.Context, c *http.Client, base, backend string, timeout time.Duration, headers map[string]string) error {
	info, err := prober.LookupBackend(backend)
	if err != nil {
		return fmt.Errorf("flush cache: %w", err)
	}
	_, _, err = control(ctx, c, http.MethodPost, info.FlushCacheURL(base, timeout), nil, headers)
	if err != nil {
		return fmt.Errorf("flush cache: %w", err)
	}
	return nil
}

// profileURLs are the servers to profile: the base URL, or with
// --pd-separated the prefill or decode URLs.
func (p Profile) urls(base string) []string {
	if !p.PDSeparated {
		return []string{base}
	}
	out := append(append([]string{}, p.PrefillURLs...), p.DecodeURLs...)
	if len(out) == 0 {
		return []string{base}
	}
	for i := range out {
		out[i] = strings.TrimRight(out[i], "/")
	}
	return out
}

// startBody is the JSON of POST /start_profile, as bench_serving sends it.
func (p Profile) startBody() map[string]any {
	b := map[string]any{
		"activities":       p.Activities,
		"profile_by_stage": p.ByStage,
		"profile_stages":   p.Stages,
	}
	if p.NumSteps >= 0 {
		b["num_steps"] = p.NumSteps
	}
	if p.Steps >= 0 {
		b["num_steps"] = p.Steps
	}
	if p.StartStep >= 0 {
		b["start_step"] = p.StartStep
	}
	if p.OutputDir != "" {
		b["output_dir"] = p.OutputDir
	}
	if p.Prefix != "" {
		b["profile_prefix"] = p.Prefix
	}
	return b
}

// startProfile asks each server to start its profiler. A server that
// refuses (a 404 from one without profiling, vLLM without
// VLLM_TORCH_PROFILER_DIR) gets a warning and the run goes on, as
// bench_serving's goes on without printing "Profiler started"; only a
// cancelled run stops here.
func startProfile(ctx context.Context, c *http.Client, base string, p Profile, logger log.Logger) error {
	for _, u := range p.urls(base) {
		if _, _, err := control(ctx, c, http.MethodPost, u+"/start_profile", p.startBody(), nil); err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			profileWarn(logger, "Profiler not started; the run goes on without it", u, err)
		}
	}
	return nil
}

// stopProfile is skipped when the server stops by itself after a number
// of steps. A refusal is a warning, as at the start.
func stopProfile(ctx context.Context, c *http.Client, base string, p Profile, logger log.Logger) error {
	if p.NumSteps >= 0 || p.Steps >= 0 {
		return nil
	}
	for _, u := range p.urls(base) {
		if _, _, err := control(ctx, c, http.MethodPost, u+"/stop_profile", map[string]any{}, nil); err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			profileWarn(logger, "Profiler not stopped", u, err)
		}
	}
	return nil
}

// profileWarn logs a profiler call's failure with the server's URL, its
// password redacted there and in the error that quotes it.
func profileWarn(logger log.Logger, msg, u string, err error) {
	red := config.RedactURL(u)
	level.Warn(logger).Log("msg", msg, "url", red, "err", strings.ReplaceAll(err.Error(), u, red))
}

// serverInfo is GET /server_info: the raw JSON (nil unless 200 with a JSON
// body) and sglang's accept length, internal_states[0].avg_spec_accept_length
// (decode[0]'s under PD disaggregation). Errors are not fatal: sglang
// crashes here after printing the table, we record null.
func serverInfo(ctx context.Context, c *http.Client, base string, headers map[string]string) (json.RawMessage, float64) {
	b, _, err := control(ctx, c, http.MethodGet, base+"/server_info", nil, headers)
	if err != nil || !json.Valid(b) {
		return nil, 0
	}
	var si struct {
		InternalStates []struct {
			AvgSpecAcceptLength float64 `json:"avg_spec_accept_length"`
		} `json:"internal_states"`
		Decode []struct {
			InternalStates []struct {
				AvgSpecAcceptLength float64 `json:"avg_spec_accept_length"`
			} `json:"internal_states"`
		} `json:"decode"`
	}
	_ = json.Unmarshal(b, &si)
	states := si.InternalStates
	if len(si.Decode) > 0 {
		states = si.Decode[0].InternalStates
	}
	var accept float64
	if len(states) > 0 {
		accept = states[0].AvgSpecAcceptLength
	}
	return json.RawMessage(bytes.TrimSpace(b)), accept
}

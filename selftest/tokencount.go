package selftest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// The token-count check: a server streams one token per chunk, every
// chunk's text "tok ", which the Qwen3 tokenizer encodes as two ids on its
// own. Counting a chunk by retokenizing it alone read half the server's
// ITL; the per-event counts now add up to the server's count (or to the
// whole text's, counted once). The check measures the median per-token ITL
// with the client path the bench uses (a Qwen3 counter), with and without
// the server's usage, against the server's own median gap between its
// chunk writes, and fails past tokenCountTolerance.

// tokenCountTolerance is the largest relative error the median may have.
const tokenCountTolerance = 0.02

// TokenCountResult is one variant of the check.
type TokenCountResult struct {
	Usage              bool
	ServerITL          time.Duration // median gap between the server's chunk writes
	ClientITL          time.Duration // median per-token ITL measured
	OldRuleITL         time.Duration // what retokenizing each chunk alone gave
	Samples, Requests  int
	EventTokensSource  prober.TokenSource
	OutputTokensSource prober.TokenSource
}

// Err is the relative error of the client's median.
func (r TokenCountResult) Err() float64 {
	return float64(r.ClientITL-r.ServerITL) / float64(r.ServerITL)
}

// splitChunkServer streams n chunks of "tok " gap apart on /v1/chat/completions
// and records when it wrote each.
//
// It is its own small server, not the simulator, because the check needs a
// chunk text that the tokenizer, given that text alone, splits into more ids
// than the one token the server says it carries. The simulator cannot send
// one: its output vocabulary (simulator/tokens.go) is made of whole tokens
// with their leading space (" the", " model"), chosen so that its text
// retokenizes to exactly the count it reports, alone or joined. Against it,
// the retired per-chunk rule would count right too and the check would pass
// whatever the client did. Nor can it be the test fakes' scripted stream
// (llmtest): selftest is a product command, and product code does not
// import test fixtures.
type splitChunkServer struct {
	n     int
	gap   time.Duration
	usage bool

	mu   sync.Mutex
	gaps []time.Duration
}

func (s *splitChunkServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	var prev time.Time
	var gaps []time.Duration
	write := func(data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		fl.Flush()
	}
	for i := range s.n {
		if i > 0 {
			time.Sleep(s.gap)
		}
		now := time.Now()
		write(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}`)
		if !prev.IsZero() {
			gaps = append(gaps, now.Sub(prev))
		}
		prev = now
	}
	write(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`)
	if s.usage {
		write(`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":` + strconv.Itoa(s.n) + `}}`)
	}
	write("[DONE]")
	s.mu.Lock()
	s.gaps = append(s.gaps, gaps...)
	s.mu.Unlock()
}

func medianDuration(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

// runTokenCount runs the check: requests requests of tokens tokens gap
// apart, with and without the server's usage.
func runTokenCount(ctx context.Context, requests, tokens int, gap time.Duration) ([]TokenCountResult, error) {
	tok, err := tokenizer.Default()
	if err != nil {
		return nil, err
	}
	counter := prober.TokenizerCounter{Tokenizer: tok}
	perChunk, err := counter.Count("tok ")
	if err != nil {
		return nil, err
	}
	var out []TokenCountResult
	for _, usage := range []bool{true, false} {
		srv := &splitChunkServer{n: tokens, gap: gap, usage: usage}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		p := &prober.Prober{
			Client: &http.Client{}, Backend: mustBackend("vllm-chat"), Name: "vllm-chat", Counter: counter,
			Options: prober.RequestOptions{BaseURL: "http://" + ln.Addr().String(), Model: "m", Stream: true, IncludeUsage: true},
		}
		res := TokenCountResult{Usage: usage}
		var itls []float64
		for range requests {
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			r := p.Run(rctx, datasets.Prompt{Text: "x", OutputLen: tokens}, time.Now())
			cancel()
			if r.Outcome != prober.OutcomeSuccess {
				hs.Close()
				return nil, fmt.Errorf("token-count request: %s: %s", r.Outcome, r.Err)
			}
			itls = r.AppendITLs(itls, false)
			res.Requests++
			res.EventTokensSource, res.OutputTokensSource = r.EventTokensSource, r.OutputTokensSource
		}
		hs.Close()
		slices.Sort(itls)
		res.Samples = len(itls)
		res.ClientITL = time.Duration(itls[len(itls)/2] * 1e9)
		srv.mu.Lock()
		res.ServerITL = medianDuration(srv.gaps)
		srv.mu.Unlock()
		// The old rule split each gap over the chunk's own retokenized count.
		res.OldRuleITL = res.ServerITL / time.Duration(max(perChunk, 1))
		out = append(out, res)
	}
	return out, nil
}

func mustBackend(name string) prober.Backend {
	b, err := prober.NewBackend(name)
	if err != nil {
		panic(err)
	}
	return b
}

package simulator

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// discardWriter is a ResponseWriter that costs nothing, so that server-side
// benchmarks measure the simulator alone.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

func zeroITLConfig(coalesce bool) Config {
	c := fastConfig()
	c.Coalesce = coalesce
	c.MaxRunningRequests = 0
	c.TruthSize = 0
	return c
}

const benchTokens = 4096

// BenchmarkServerZeroITL is the simulator's own cost per streamed token,
// without a socket.
func BenchmarkServerZeroITL(b *testing.B) {
	for _, ep := range []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":` + strconv.Itoa(benchTokens) + `,"ignore_eos":true,"stream":true}`},
		{"completions", "/v1/completions", `{"prompt":"hi","max_tokens":` + strconv.Itoa(benchTokens) + `,"ignore_eos":true,"stream":true}`},
		{"trt", "/v2/models/ensemble/generate_stream", `{"text_input":"hi","max_tokens":` + strconv.Itoa(benchTokens) + `,"end_id":-1}`},
	} {
		for _, coalesce := range []bool{false, true} {
			b.Run(ep.name+"/coalesce="+strconv.FormatBool(coalesce), func(b *testing.B) {
				s := newServer(b, zeroITLConfig(coalesce))
				h := s.Handler()
				b.ReportAllocs()
				for b.Loop() {
					req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, ep.path, strings.NewReader(ep.body))
					h.ServeHTTP(&discardWriter{h: http.Header{}}, req)
				}
				b.ReportMetric(float64(b.N*benchTokens)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

// BenchmarkLoopbackZeroITLCoalesced streams over a real loopback socket to a
// client that only reads bytes: the coalesced zero-ITL path that the client
// capacity measurements of servingprobe selftest rely on.
func BenchmarkLoopbackZeroITLCoalesced(b *testing.B) {
	for _, coalesce := range []bool{true, false} {
		b.Run("coalesce="+strconv.FormatBool(coalesce), func(b *testing.B) {
			s := newServer(b, zeroITLConfig(coalesce))
			ts := startLoopback(b, s)
			body := `{"prompt":"hi","max_tokens":` + strconv.Itoa(benchTokens) + `,"ignore_eos":true,"stream":true}`
			buf := make([]byte, 64<<10)
			for b.Loop() {
				resp := post(b, ts.Client(), ts.URL+"/v1/completions", body)
				for {
					_, err := resp.Body.Read(buf)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				resp.Body.Close()
			}
			b.ReportMetric(float64(b.N*benchTokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// TestZeroITLAllocations pins the zero-ITL decode loop at no allocation per
// token: allocations per request must not grow with the output length.
func TestZeroITLAllocations(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		s := newServer(t, zeroITLConfig(coalesce))
		h := s.Handler()
		allocs := func(n int) float64 {
			body := `{"prompt":"hi","max_tokens":` + strconv.Itoa(n) + `,"ignore_eos":true,"stream":true}`
			return testing.AllocsPerRun(20, func() {
				req, _ := http.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
				h.ServeHTTP(&discardWriter{h: http.Header{}}, req)
			})
		}
		small, large := allocs(10), allocs(5000)
		if large > small+2 {
			t.Errorf("coalesce=%v: %v allocations for 10 tokens, %v for 5000; the decode loop allocates per token", coalesce, small, large)
		}
	}
}

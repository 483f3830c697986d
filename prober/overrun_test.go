package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
)

func TestOverrunLimit(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 0}, {-1, 0}, {1, 33}, {20, 52}, {32, 64}, {100, 200},
	} {
		if got := OverrunLimit(tc.n); got != tc.want {
			t.Errorf("OverrunLimit(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// TestOverrunCutsStream: a chat server that ignores every length field (as
// ollama's OpenAI route ignores max_completion_tokens) streams one token per
// chunk until the client goes away. The prober must cut it shortly past the
// requested length, with an outcome of its own, and the server must see the
// connection close.
func TestOverrunCutsStream(t *testing.T) {
	const n = 20
	gone := make(chan int, 1)
	bodies := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		bodies <- body
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i := 0; ; i++ {
			_, err := fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t%d\"},\"finish_reason\":null}]}\n\n", i)
			f.Flush()
			if err != nil || r.Context().Err() != nil {
				gone <- i
				return
			}
			time.Sleep(time.Millisecond) // a server's decode step; keeps the loop from spinning
		}
	}))
	defer srv.Close()

	p := &Prober{
		Client:  srv.Client(),
		Backend: openAIChat{},
		Name:    "openai-chat",
		Options: RequestOptions{BaseURL: srv.URL, Model: "m", Stream: true, IgnoreEOS: true},
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res := p.Run(ctx, datasets.Prompt{Text: "hi", OutputLen: n}, time.Time{})

	if res.Outcome != OutcomeOverrun {
		t.Fatalf("Run() outcome = %q (%s), want %q", res.Outcome, res.Err, OutcomeOverrun)
	}
	if got, want := len(res.Events), OverrunLimit(n)+1; got != want {
		t.Errorf("Run() kept %d events, want %d (cut at the first past the limit)", got, want)
	}
	body := <-bodies
	if body["max_tokens"] != float64(n) || body["max_completion_tokens"] != float64(n) {
		t.Errorf("request body max_tokens = %v, max_completion_tokens = %v, want both %d", body["max_tokens"], body["max_completion_tokens"], n)
	}
	select {
	case <-gone:
	case <-ctx.Done():
		t.Fatal("the server kept streaming after the client cut the stream")
	}
}

// TestOverrunNotOnHonouredLength: a stream that stops at the requested
// length is not cut, even when the limit is close.
func TestOverrunNotOnHonouredLength(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 2 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t%d\"},\"finish_reason\":null}]}\n\n", i)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	p := &Prober{Client: srv.Client(), Backend: openAIChat{}, Options: RequestOptions{BaseURL: srv.URL, Model: "m", Stream: true}}
	res := p.Run(t.Context(), datasets.Prompt{Text: "hi", OutputLen: 2}, time.Time{})
	if res.Outcome != OutcomeSuccess {
		t.Errorf("Run() outcome = %q (%s), want success", res.Outcome, res.Err)
	}
}

func TestStallLimits(t *testing.T) {
	for _, tc := range []struct {
		n, events int
		bytes     int64
	}{
		{0, 64, 1 << 20}, {1, 64, 1 << 20}, {100, 200, 200 * 8 << 10}, {1000, 2000, 2000 * 8 << 10},
	} {
		if e, b := StallLimits(tc.n); e != tc.events || b != tc.bytes {
			t.Errorf("StallLimits(%d) = %d, %d; want %d, %d", tc.n, e, b, tc.events, tc.bytes)
		}
	}
}

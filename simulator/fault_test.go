package simulator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

const chatStreamBody = `{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`

func TestStatusFaults(t *testing.T) {
	for _, tc := range []struct {
		fault      Fault
		path, body string
		status     int
		retry      string
		wantBody   string
	}{
		{Fault500, "/v1/chat/completions", chatStreamBody, 500, "", `{"error":{"message":"Internal Server Error (simulated)","type":"InternalServerError","param":null,"code":500}}`},
		{Fault401, "/v1/chat/completions", chatStreamBody, 401, "", `{"error":{"message":"Unauthorized (simulated)","type":"AuthenticationError","param":null,"code":401}}`},
		{Fault403, "/v1/completions", `{"prompt":"hi","max_tokens":3}`, 403, "", `{"error":{"message":"Forbidden (simulated)","type":"PermissionDeniedError","param":null,"code":403}}`},
		{Fault503, "/generate", `{"text":"hi","stream":true}`, 503, "", `{"error":{"message":"Service Unavailable (simulated)"}}`},
		{Fault429, "/v2/models/ensemble/generate_stream", `{"text_input":"hi","max_tokens":3}`, 429, "2", `{"error":"Too Many Requests (simulated)"}`},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			cfg := fastConfig()
			cfg.RetryAfter = 1500 * time.Millisecond
			s := newServer(t, cfg)
			ts := startLoopback(t, s)
			resp := post(t, ts.Client(), ts.URL+tc.path, tc.body, FaultHeader, string(tc.fault), RequestIDHeader, "f1")
			body := string(readAll(t, resp))
			if resp.StatusCode != tc.status || body != tc.wantBody || resp.Header.Get("Retry-After") != tc.retry {
				t.Errorf("got %d Retry-After %q %s; want %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body, tc.status, tc.retry, tc.wantBody)
			}
			tr, err := s.WaitTruth(context.Background(), "f1")
			if err != nil || tr.Fault != tc.fault {
				t.Errorf("truth fault = %q, %v; want %q", tr.Fault, err, tc.fault)
			}
		})
	}
}

func TestHeaderFaultsDisabled(t *testing.T) {
	cfg := fastConfig()
	cfg.HeaderFaults = false
	s := newServer(t, cfg)
	ts := startLoopback(t, s)
	resp := post(t, ts.Client(), ts.URL+"/v1/chat/completions", chatStreamBody, FaultHeader, "500")
	events := sseEvents(t, readAll(t, resp))
	if resp.StatusCode != 200 || events[len(events)-1] != "[DONE]" {
		t.Errorf("with header faults off got %d ending %q, want a normal stream", resp.StatusCode, events[len(events)-1])
	}
}

func TestFaultRates(t *testing.T) {
	cfg := fastConfig()
	cfg.FaultRates = map[Fault]float64{Fault500: 0.5, Fault503: 0.5}
	s := newServer(t, cfg)
	ts := startLoopback(t, s)
	got := map[int]int{}
	for range 40 {
		resp := post(t, ts.Client(), ts.URL+"/v1/completions", `{"prompt":"hi","max_tokens":1}`)
		readAll(t, resp)
		got[resp.StatusCode]++
	}
	if got[200] != 0 || got[500] == 0 || got[503] == 0 {
		t.Errorf("status counts = %v; want only 500 and 503, both present", got)
	}
}

// TestStreamFaults checks what a client reading each stream sees.
func TestStreamFaults(t *testing.T) {
	for _, tc := range []struct {
		fault Fault
		path  string
		body  string
		check func(t *testing.T, body []byte, err error)
	}{
		{FaultResetMidStream, "/v1/chat/completions", chatStreamBody, func(t *testing.T, body []byte, err error) {
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("read error = %v, want connection reset", err)
			}
			if !strings.Contains(string(body), `"delta":{"content":`) || strings.Contains(string(body), "[DONE]") {
				t.Errorf("body before the reset = %q, want some tokens and no [DONE]", body)
			}
		}},
		{FaultMalformedChunk, "/v1/chat/completions", chatStreamBody, func(t *testing.T, body []byte, err error) {
			events := sseEvents(t, body)
			bad := 0
			for _, ev := range events[:len(events)-1] {
				if !jsonValid(ev) {
					bad++
				}
			}
			if err != nil || bad != 1 || events[len(events)-1] != "[DONE]" {
				t.Errorf("err %v, %d malformed events, last %q; want one malformed event in a complete stream", err, bad, events[len(events)-1])
			}
		}},
		{FaultErrorInStream, "/v1/completions", `{"prompt":"hi","max_tokens":8,"ignore_eos":true,"stream":true}`, func(t *testing.T, body []byte, err error) {
			events := sseEvents(t, body)
			n := len(events)
			want := `{"error": {"message": "simulated engine failure", "type": "InternalServerError", "param": null, "code": 500}}`
			if err != nil || n != 6 || events[n-2] != want || events[n-1] != "[DONE]" {
				t.Errorf("err %v, events %q; want 4 token chunks, vLLM's error and [DONE]", err, events)
			}
		}},
		{FaultErrorInStream, "/generate", `{"text":"hi","sampling_params":{"max_new_tokens":8,"ignore_eos":true},"stream":true}`, func(t *testing.T, body []byte, err error) {
			events := sseEvents(t, body)
			n := len(events)
			if err != nil || n != 6 || events[n-2] != `{"error":{"message":"simulated engine failure"}}` || events[n-1] != "[DONE]" {
				t.Errorf("err %v, events %q; want sglang's error then [DONE]", err, events)
			}
		}},
		{FaultErrorInStream, "/v2/models/ensemble/generate_stream", `{"text_input":"hi","max_tokens":8,"end_id":1048576}`, func(t *testing.T, body []byte, err error) {
			events := sseEvents(t, body)
			if err != nil || len(events) != 5 || events[4] != `{"error":"simulated engine failure"}` {
				t.Errorf("err %v, events %q; want Triton's error last", err, events)
			}
		}},
		{FaultAbortInStream, "/v1/completions", `{"prompt":"hi","max_tokens":8,"ignore_eos":true,"stream":true}`, func(t *testing.T, body []byte, err error) {
			events := sseEvents(t, body)
			n := len(events)
			if err != nil || n < 2 || !strings.Contains(events[n-2], `"finish_reason":"abort"`) || events[n-1] != "[DONE]" {
				t.Errorf("err %v, events %q; want vLLM's abort finish then [DONE]", err, events)
			}
		}},
		{FaultAbortInStream, "/generate", `{"text":"hi","sampling_params":{"max_new_tokens":8,"ignore_eos":true},"stream":true}`, func(t *testing.T, body []byte, err error) {
			events := sseEvents(t, body)
			n := len(events)
			if err != nil || n != 6 || !strings.Contains(events[n-2], `"finish_reason":{"type":"abort","message":"simulated abort","status_code":503`) || events[n-1] != "[DONE]" {
				t.Errorf("err %v, events %q; want sglang's abort with status 503 then [DONE]", err, events)
			}
		}},
		{FaultNoDone, "/v1/chat/completions", chatStreamBody, func(t *testing.T, body []byte, err error) {
			events := sseEvents(t, body)
			last := object(t, events[len(events)-1])
			if err != nil || last["usage"] == nil || strings.Contains(string(body), "[DONE]") {
				t.Errorf("err %v, last event %v; want a clean end after the usage chunk and no [DONE]", err, last)
			}
		}},
		{FaultHTML200, "/v1/chat/completions", chatStreamBody, func(t *testing.T, body []byte, err error) {
			if err != nil || string(body) != gatewayErrorPage {
				t.Errorf("err %v, body %q; want the gateway's HTML page", err, body)
			}
		}},
		{FaultJSONNotStream, "/v1/chat/completions", chatStreamBody, func(t *testing.T, body []byte, err error) {
			o := object(t, string(body))
			if err != nil || o["object"] != "chat.completion" || o["usage"] == nil {
				t.Errorf("err %v, body %s; want one whole chat.completion with usage", err, body)
			}
		}},
		{FaultTruncate, "/generate", `{"text":"hi","sampling_params":{"max_new_tokens":8,"ignore_eos":true},"stream":true}`, func(t *testing.T, body []byte, err error) {
			events := sseEvents(t, body)
			meta := object(t, events[len(events)-1])["meta_info"].(map[string]any)
			if err != nil || len(events) != 4 || meta["finish_reason"] != nil {
				t.Errorf("err %v, %d events, last meta %v; want 4 unfinished events and a clean end", err, len(events), meta)
			}
		}},
	} {
		t.Run(string(tc.fault)+tc.path, func(t *testing.T) {
			s := newServer(t, fastConfig())
			ts := startLoopback(t, s)
			resp := post(t, ts.Client(), ts.URL+tc.path, tc.body, FaultHeader, string(tc.fault))
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			tc.check(t, body, err)
		})
	}
}

// TestStallFaults checks that a stall holds exactly where it says, by
// watching what the client has received when its deadline fires.
func TestStallFaults(t *testing.T) {
	for _, tc := range []struct {
		fault       Fault
		wantHeaders bool
		wantTokens  bool
	}{
		{FaultStallBeforeHeaders, false, false},
		{FaultStallAfterHeaders, true, false},
		{FaultStallMidStream, true, true},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			s := newServer(t, fastConfig())
			ts := startLoopback(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(chatStreamBody))
			req.Header.Set(FaultHeader, string(tc.fault))
			req.Header.Set(RequestIDHeader, "stalled")
			type result struct {
				resp *http.Response
				err  error
			}
			got := make(chan result, 1)
			go func() {
				resp, err := ts.Client().Do(req)
				got <- result{resp, err}
			}()
			var resp *http.Response
			select {
			case r := <-got:
				if !tc.wantHeaders {
					t.Fatalf("got a response (%v) from a server stalling before headers", r.err)
				}
				resp = r.resp
			case <-time.After(200 * time.Millisecond): // real socket: a tolerance, not a measurement
				if tc.wantHeaders {
					t.Fatalf("no headers within 200ms")
				}
			}
			if resp != nil {
				buf := make([]byte, 64<<10)
				var seen []byte
				readDone := make(chan struct{})
				go func() {
					defer close(readDone)
					for {
						n, err := resp.Body.Read(buf)
						seen = append(seen, buf[:n]...)
						if err != nil {
							return
						}
					}
				}()
				time.Sleep(200 * time.Millisecond)
				cancel()
				<-readDone
				resp.Body.Close()
				hasTokens := strings.Contains(string(seen), `"delta":{"content":" `)
				if hasTokens != tc.wantTokens || strings.Contains(string(seen), "[DONE]") {
					t.Errorf("received %q; want tokens %v and no [DONE]", seen, tc.wantTokens)
				}
			} else {
				cancel()
				<-got
			}
			// The handler must notice the client leaving and finish.
			wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer wcancel()
			if _, err := s.WaitTruth(wctx, "stalled"); err != nil {
				t.Errorf("handler did not finish after the client left: %v", err)
			}
		})
	}
}

func jsonValid(s string) bool {
	return jsonValidBytes([]byte(s))
}

package simulator

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fastConfig is DefaultConfig without any waiting, for framing tests.
func fastConfig() Config {
	c := DefaultConfig()
	c.TTFT, c.TTFTJitter, c.PrefillPerToken, c.ITL, c.ITLJitter = 0, 0, 0, 0, 0
	return c
}

func newServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// startLoopback serves s on a real loopback socket.
func startLoopback(t testing.TB, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Client().CloseIdleConnections()
		ts.Close()
	})
	return ts
}

func post(t testing.TB, client *http.Client, url, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

// sseEvents splits an SSE body into the payloads of its "data: " lines,
// failing on anything real servers would not send.
func sseEvents(t testing.TB, body []byte) []string {
	t.Helper()
	if len(body) == 0 {
		return nil
	}
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", tail(body))
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		payload, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(payload, "\n") {
			t.Fatalf("event %q is not one data: line", ev)
		}
		out = append(out, payload)
	}
	return out
}

func tail(b []byte) []byte {
	if len(b) > 80 {
		return b[len(b)-80:]
	}
	return b
}

func readAll(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return b
}

// object decodes one JSON object, keeping numbers exact.
func object(t testing.TB, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("event %q is not a JSON object: %v", s, err)
	}
	return m
}

// countTokens counts vocabulary tokens in text: each has one leading space.
func countTokens(text string) int { return strings.Count(text, " ") }

func num(t testing.TB, v any) int {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return int(i)
}

func jsonNumber(n int) json.Number { return json.Number(strconv.Itoa(n)) }

func jsonValidBytes(b []byte) bool { return json.Valid(b) }

type responseRecorder = httptest.ResponseRecorder

func newRecorder() *responseRecorder { return httptest.NewRecorder() }

func newGet(path string) *http.Request { return httptest.NewRequest(http.MethodGet, path, nil) }

func newPost(path, body string) *http.Request {
	return httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
}

package exporter

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-kit/log/level"

	promconfig "github.com/prometheus/common/config"
	"github.com/servingprobe/servingprobe/config"
)

func TestProbeLogFormatsLater(t *testing.T) {
	var l probeLog
	buf := []byte("before")
	_ = level.Debug(&l).Log("msg", "Probe result", "outcome", "success", "ttft_seconds", 0.25, "err", errors.New("x y"), "raw", buf)
	copy(buf, "AFTER!") // a mutable value must show as it was when logged
	_ = l.Log("msg", "second")
	got := l.String()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), got)
	}
	want := regexp.MustCompile(`^ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z level=debug msg="Probe result" outcome=success ttft_seconds=0.25 err="x y" raw=before$`)
	if !want.MatchString(lines[0]) {
		t.Errorf("line 1 = %q, want it to match %s", lines[0], want)
	}
	if !strings.HasSuffix(lines[1], " msg=second") || !strings.HasPrefix(lines[1], "ts=") {
		t.Errorf("line 2 = %q", lines[1])
	}
}

func TestProbeLogBounded(t *testing.T) {
	var l probeLog
	for range maxProbeLogRecords + 10 {
		_ = l.Log("msg", "line")
	}
	got := l.String()
	if n := strings.Count(got, "msg=line"); n != maxProbeLogRecords {
		t.Errorf("%d lines kept, want %d", n, maxProbeLogRecords)
	}
	if !strings.HasSuffix(got, "[log truncated]\n") {
		t.Errorf("no truncation marker: %q", got[len(got)-40:])
	}

	var big probeLog
	_ = big.Log("msg", strings.Repeat("x", 2*maxProbeLogBytes))
	if got := big.String(); len(got) > maxProbeLogBytes+len("\n[log truncated]\n") || !strings.HasSuffix(got, "[log truncated]\n") {
		t.Errorf("a %d-byte record gave %d bytes", 2*maxProbeLogBytes, len(got))
	}
}

func TestHistoryFormatsLogRedacted(t *testing.T) {
	h := NewHistory(4)
	var l probeLog
	_ = l.Log("msg", "echoed", "body", "Bearer hunter2hunter2")
	red := config.NewRedactor(&config.Config{Targets: []config.Target{{HTTPClientConfig: promconfig.HTTPClientConfig{BearerToken: "hunter2hunter2"}}}})
	h.Add(HistoryEntry{Success: true, logs: &l, red: red})
	got := h.List()
	if len(got) != 1 || !strings.Contains(got[0].Log, "msg=echoed") || strings.Contains(got[0].Log, "hunter2hunter2") {
		t.Errorf("Log = %q, want the line with the secret redacted", got[0].Log)
	}
}

// TestHistoryEntrySanitized: the generated text, the error and the model a
// server sent reach the history redacted before they are cut, so a token
// across the text's cut, \u-escaped, or minus its last characters shows
// none of its 8-byte runs.
func TestHistoryEntrySanitized(t *testing.T) {
	const tok = "sk-hist-4f9c2a7e1b8d6053aa7c9e1"
	red := config.NewRedactor(&config.Config{Targets: []config.Target{{HTTPClientConfig: promconfig.HTTPClientConfig{BearerToken: tok}}}})
	for _, tc := range []struct {
		name, text, err, model string
	}{
		{"text across the cut", strings.Repeat("x", maxHistoryText-10) + tok, "", "m"},
		{"escaped error", "", `401: {"error":"\u0073k-hist-4f9c2a7e1b8d6053aa7c9e1"}`, "m"},
		{"near-token model", "", "", tok[:len(tok)-2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := successResult("a", "m", tc.model)
			r.GeneratedText, r.Err = tc.text, tc.err
			e := entryOf(r, tc.model, ModeProbe, nil, red)
			all := e.Text + "|" + e.Error + "|" + e.Model
			if !strings.Contains(all, config.Placeholder) {
				t.Errorf("entry %q has no %s: the case planted nothing", all, config.Placeholder)
			}
			for i := 0; i+8 <= len(tok); i++ {
				if strings.Contains(all, tok[i:i+8]) {
					t.Errorf("entry %q holds %q of the token", all, tok[i:i+8])
				}
			}
			if len(e.Text) > maxHistoryText+len("…") {
				t.Errorf("Text is %d bytes, want at most %d", len(e.Text), maxHistoryText)
			}
		})
	}
}

// A server-supplied value (finish reason, model id) can be megabytes: the
// capture keeps a bounded copy, not the value.
func TestProbeLogBoundsRetainedBytes(t *testing.T) {
	var l probeLog
	for i := range 20 {
		_ = l.Log("msg", "Probe result", "finish_reason", strings.Repeat(string(rune('a'+i)), 4<<20))
	}
	kept := 0
	for _, r := range l.recs {
		for _, v := range r.kv {
			if s, ok := v.(string); ok {
				kept += len(s)
			}
		}
	}
	if kept > 2*maxProbeLogBytes+64 {
		t.Errorf("capture keeps %d bytes of strings, want at most about %d", kept, 2*maxProbeLogBytes)
	}
	if got := l.String(); len(got) > maxProbeLogBytes+len("\n[log truncated]\n") || !strings.HasSuffix(got, "[log truncated]\n") {
		t.Errorf("String() = %d bytes, want the bounded log with the marker", len(got))
	}
}

// A short value sliced from a large response must not keep the response
// alive through the history: the capture holds its own copy.
func TestProbeLogCopiesStrings(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	short := big[:16]
	var l probeLog
	_ = l.Log("model", short)
	got, _ := l.recs[0].kv[1].(string)
	if got != short || unsafe.StringData(got) == unsafe.StringData(big) {
		t.Errorf("captured %q sharing the original's memory: %v", got, unsafe.StringData(got) == unsafe.StringData(big))
	}
}

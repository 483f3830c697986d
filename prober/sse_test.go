package prober

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// chunkedReader returns one scripted chunk per Read and advances a fake
// clock by one second per Read, so each event's stamp names the Read that
// completed it.
type chunkedReader struct {
	chunks []string
	clock  *fakeClock
	err    error // returned after the chunks (io.EOF when nil)
}

type fakeClock struct{ reads int }

func (c *fakeClock) now() time.Time { return time.Unix(int64(c.reads), 0) }

func (r *chunkedReader) Read(p []byte) (int, error) {
	r.clock.reads++
	if len(r.chunks) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	if r.chunks[0] == "" {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

type readEvent struct {
	Event string
	Data  string
	Read  int // which Read (1-based) completed it
}

func readAll(t *testing.T, format StreamFormat, lim Limits, chunks []string, tailErr error) (evs []readEvent, reads int, comments int, err error) {
	t.Helper()
	clock := &fakeClock{}
	sr := NewStreamReader(&chunkedReader{chunks: chunks, clock: clock, err: tailErr}, format, lim, clock.now)
	var out []readEvent
	for {
		ev, at, err := sr.Next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, clock.reads, sr.Comments(), err
		}
		out = append(out, readEvent{ev.Event, string(ev.Data), int(at.Unix())})
	}
}

func TestStreamReader(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	for _, tc := range []struct {
		name     string
		format   StreamFormat
		lim      Limits
		chunks   []string
		tailErr  error
		want     []readEvent
		wantErr  error
		comments int
		// lastRead: the single event's stamp is the last Read that
		// returned data (how many Reads depends on buffer sizes).
		lastRead bool
	}{
		{
			name:   "events in one read share its arrival",
			chunks: []string{"data: a\n\ndata: b\n\n", "data: c\n\n"},
			want:   []readEvent{{Data: "a", Read: 1}, {Data: "b", Read: 1}, {Data: "c", Read: 2}},
		},
		{
			name:   "event split across reads is stamped by the read that ends its data",
			chunks: []string{"da", "ta: {\"x\"", ":1}\n", "\n"},
			want:   []readEvent{{Data: `{"x":1}`, Read: 3}},
		},
		{
			name:   "multi-line data joined with LF; event, id, retry tolerated",
			chunks: []string{"event: message\nid: 7\nretry: 10\ndata: a\ndata:b\ndata:  c\n\n"},
			want:   []readEvent{{Event: "message", Data: "a\nb\n c", Read: 1}},
		},
		{
			name:     "comments are keep-alives, not events",
			chunks:   []string{": ping\n\n", ":\n\ndata: x\n\n"},
			want:     []readEvent{{Data: "x", Read: 2}},
			comments: 2,
		},
		{
			name:   "CRLF",
			chunks: []string{"data: a\r\n\r\ndata: b\r\n\r\n"},
			want:   []readEvent{{Data: "a", Read: 1}, {Data: "b", Read: 1}},
		},
		{
			name:   "CRLF split between reads",
			chunks: []string{"data: a\r", "\n\r", "\ndata: b\r\n\r\n"},
			// "a" ends with the CR of read 1; the blank line only dispatches it.
			want: []readEvent{{Data: "a", Read: 1}, {Data: "b", Read: 3}},
		},
		{
			name:   "CR only",
			chunks: []string{"data: a\r\rdata: b\r\r"},
			want:   []readEvent{{Data: "a", Read: 1}, {Data: "b", Read: 1}},
		},
		{
			name:   "data lines without the final blank line are delivered at EOF",
			chunks: []string{"data: a\n\ndata: [DONE]\n"},
			want:   []readEvent{{Data: "a", Read: 1}, {Data: "[DONE]", Read: 1}},
		},
		{
			name:    "a partial line at EOF is a cut stream",
			chunks:  []string{"data: a\n\ndata: {\"te"},
			want:    []readEvent{{Data: "a", Read: 1}},
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:    "read error surfaces",
			chunks:  []string{"data: a\n\n"},
			tailErr: errors.New("connection reset by peer"),
			want:    []readEvent{{Data: "a", Read: 1}},
			wantErr: errors.New("connection reset by peer"),
		},
		{
			name:     "a multi-megabyte-class line grows the buffer",
			chunks:   []string{"data: " + big[:30_000], big[30_000:], "\n\n"},
			want:     []readEvent{{Data: big}},
			lastRead: true,
		},
		{
			name:    "an event over the limit is an error",
			lim:     Limits{MaxEventBytes: 1000},
			chunks:  []string{"data: " + big + "\n\n"},
			wantErr: ErrEventTooLarge,
		},
		{
			name:    "multi-line data over the limit is an error",
			lim:     Limits{MaxEventBytes: 10},
			chunks:  []string{"data: 123456\ndata: 123456\n\n"},
			wantErr: ErrEventTooLarge,
		},
		{
			name:     "an over-long comment is skipped, not buffered",
			lim:      Limits{MaxEventBytes: 1000},
			chunks:   []string{": " + big + "\n\ndata: x\n\n"},
			want:     []readEvent{{Data: "x"}},
			lastRead: true,
		},
		{
			name:    "the response limit stops an endless stream",
			lim:     Limits{MaxResponseBytes: 20},
			chunks:  []string{"data: a\n\n", "data: b\n\n", "data: c\n\n"},
			want:    []readEvent{{Data: "a", Read: 1}, {Data: "b", Read: 2}},
			wantErr: ErrResponseTooLarge,
		},
		{
			name:   "NDJSON sniffed from the first byte",
			chunks: []string{"\n{\"a\":1}\n{\"b\":", "2}\n", "{\"c\":3}"},
			want:   []readEvent{{Data: `{"a":1}`, Read: 1}, {Data: `{"b":2}`, Read: 2}, {Data: `{"c":3}`, Read: 3}},
		},
		{
			name:   "whole JSON body is one event stamped at its last byte",
			format: FormatJSON,
			chunks: []string{"{\n  \"a\":", " 1\n}\n"},
			want:   []readEvent{{Data: "{\n  \"a\": 1\n}", Read: 2}},
		},
		{
			name:   "empty body",
			chunks: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reads, comments, err := readAll(t, tc.format, tc.lim, tc.chunks, tc.tailErr)
			if tc.lastRead {
				tc.want[0].Read = reads - 1 // the final Read returned EOF
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tc.wantErr != nil && (err == nil || (!errors.Is(err, tc.wantErr) && err.Error() != tc.wantErr.Error())):
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if comments != tc.comments {
				t.Errorf("comments = %d, want %d", comments, tc.comments)
			}
		})
	}
}

func TestFormatFor(t *testing.T) {
	for _, tc := range []struct {
		ct     string
		stream bool
		want   StreamFormat
	}{
		{"text/event-stream; charset=utf-8", true, FormatSSE},
		{"application/x-ndjson", true, FormatNDJSON},
		{"application/json", false, FormatJSON},
		{"application/json", true, FormatAuto},
		{"", true, FormatAuto},
	} {
		if got := FormatFor(tc.ct, tc.stream); got != tc.want {
			t.Errorf("FormatFor(%q, %v) = %v, want %v", tc.ct, tc.stream, got, tc.want)
		}
	}
}

// TestStreamReaderSteadyStateAllocs pins the reader's allocation target:
// once its buffers are warm, reading an event allocates nothing.
func TestStreamReaderSteadyStateAllocs(t *testing.T) {
	ev := "data: {\"choices\":[{\"index\":0,\"text\":\" tok\",\"finish_reason\":null}]}\n\n"
	body := strings.NewReader("")
	sr := NewStreamReader(body, FormatSSE, Limits{}, time.Now)
	payload := strings.Repeat(ev, 64)
	allocs := testing.AllocsPerRun(100, func() {
		body.Reset(payload)
		sr.Reset(body, FormatSSE, Limits{}, time.Now)
		for {
			if _, _, err := sr.Next(); err != nil {
				break
			}
		}
	})
	if allocs != 0 {
		t.Errorf("allocs per 64 events = %v, want 0", allocs)
	}
}

func BenchmarkStreamReader(b *testing.B) {
	ev := "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" tok\",\"finish_reason\":null}]}\n\n"
	payload := strings.Repeat(ev, 1024)
	body := strings.NewReader(payload)
	sr := NewStreamReader(body, FormatSSE, Limits{}, time.Now)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(payload)
		sr.Reset(body, FormatSSE, Limits{}, time.Now)
		for {
			if _, _, err := sr.Next(); err != nil {
				break
			}
		}
	}
}

package exporter

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-logfmt/logfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// probeLog captures one probe's log records at every level, for the
// history and /probe?debug. Records are kept unformatted: a probe pays for
// one slice copy per line, and logfmt formatting, which cost about a tenth
// of a 32-token probe's CPU, happens only when someone reads the history.
type probeLog struct {
	mu   sync.Mutex
	recs []logRecord
	size int // estimated formatted bytes of recs
	cut  bool
}

type logRecord struct {
	ts time.Time
	kv []any
}

// maxProbeLogRecords and maxProbeLogBytes bound one probe's captured log.
const (
	maxProbeLogRecords = 64
	maxProbeLogBytes   = 16 << 10
)

// Log implements log.Logger. Values of other than plain immutable types are
// rendered now, so that formatting later shows them as they were. Strings
// are cut to maxProbeLogBytes and copied, and records stop once their text
// passes that size: a server-supplied value (a finish reason, a model id)
// must not keep megabytes alive in the history.
func (l *probeLog) Log(kv ...any) error {
	ts := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recs) >= maxProbeLogRecords || l.size > maxProbeLogBytes {
		l.cut = true
		return nil
	}
	c := make([]any, len(kv))
	for i, v := range kv {
		var str string
		switch v := v.(type) {
		case nil, bool, int, int64, int32, uint64, uint32, float64, float32, time.Time, time.Duration:
			c[i] = v
			l.size += 24
			continue
		case string:
			str = v
		case []byte:
			str = string(v) // as logfmt writes bytes
		default:
			str = fmt.Sprint(v)
		}
		if len(str) > maxProbeLogBytes {
			str, l.cut = prober.TruncateUTF8(str, maxProbeLogBytes), true // a new string
		} else if _, ok := v.(string); ok {
			str = strings.Clone(str) // it may be a slice of a large server response
		}
		c[i] = str
		l.size += len(str) + 4
	}
	l.recs = append(l.recs, logRecord{ts, c})
	return nil
}

// String formats the records as logfmt lines, each starting with its UTC
// timestamp, as go-kit's DefaultTimestampUTC writes it.
func (l *probeLog) String() string {
	l.mu.Lock()
	recs, cut := l.recs, l.cut
	l.mu.Unlock()
	var b bytes.Buffer
	enc := logfmt.NewEncoder(&b)
	for _, r := range recs {
		_ = enc.EncodeKeyval("ts", r.ts.UTC().Format(time.RFC3339Nano))
		_ = enc.EncodeKeyvals(r.kv...)
		_ = enc.EndRecord()
		if b.Len() > maxProbeLogBytes {
			b.Truncate(maxProbeLogBytes)
			cut = true
			break
		}
	}
	if cut {
		b.WriteString("\n[log truncated]\n")
	}
	return b.String()
}

// teeLogger sends every record to the capture buffer (unfiltered) and to
// the probe logger (which applies --log.prober).
type teeLogger struct{ capture, out log.Logger }

func (t teeLogger) Log(kv ...any) error {
	_ = t.capture.Log(kv...)
	return t.out.Log(kv...)
}

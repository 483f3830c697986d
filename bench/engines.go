package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/servingprobe/servingprobe/prober"
)

// EngineNotes are what the servers did that bench_serving's numbers do not
// show: requests sent again because a kept-alive connection closed before
// answering, and successes that stopped short of the output asked for.
// Every count comes from the per-request results (prober.Result's
// ConnRetries, OutputTokens, RequestedOutputTokens and FinishReason). It
// is nil in a Summary when there is nothing to note, so that the table and
// the record of other runs stay as they were.
type EngineNotes struct {
	// ConnRetries counts the requests sent a second time, on a new
	// connection, because the kept-alive one they first went out on
	// closed before any response byte (prober.Result.ConnRetries).
	ConnRetries int `json:"conn_retries,omitempty"`
	// Short counts the successes whose output was shorter than their
	// requested length; ShortOutputTokens is their output and
	// ShortRequestedTokens what they asked for, so the shortfall is the
	// difference. ShortFinish counts those successes by finish reason as
	// the server stated it (ShortFinishKey: bounded and cleaned).
	Short                int            `json:"short,omitempty"`
	ShortOutputTokens    int            `json:"short_output_tokens,omitempty"`
	ShortRequestedTokens int            `json:"short_requested_tokens,omitempty"`
	ShortFinish          map[string]int `json:"short_finish_reasons,omitempty"`
}

// maxFinishReasons bounds the distinct finish reasons kept: a server's
// string never grows the summary without bound.
const maxFinishReasons = 8

// ShortFinishKey is the key a server's finish reason is counted under:
// the reason itself when it is a short word of lower-case letters, digits,
// '_' or '-'; "none" when the server stated none; "other" for anything
// else.
func ShortFinishKey(reason string) string {
	if reason == "" {
		return "none"
	}
	if len(reason) > 32 {
		return "other"
	}
	for _, c := range reason {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return "other"
		}
	}
	return reason
}

// engineTally counts EngineNotes as results are added.
type engineTally struct{ n EngineNotes }

// add counts one result; ok says it succeeded, output is its output count
// as the summary counts it.
func (t *engineTally) add(r *prober.Result, ok bool, output int) {
	t.n.ConnRetries += r.ConnRetries
	if !ok || r.RequestedOutputTokens <= 0 || output >= r.RequestedOutputTokens {
		return
	}
	t.n.Short++
	t.n.ShortOutputTokens += output
	t.n.ShortRequestedTokens += r.RequestedOutputTokens
	t.finish(ShortFinishKey(r.FinishReason), 1)
}

func (t *engineTally) finish(key string, n int) {
	if t.n.ShortFinish == nil {
		t.n.ShortFinish = make(map[string]int)
	}
	if _, ok := t.n.ShortFinish[key]; !ok && len(t.n.ShortFinish) >= maxFinishReasons-1 && key != "other" {
		key = "other"
	}
	t.n.ShortFinish[key] += n
}

// merge adds a shard's notes.
func (t *engineTally) merge(e *EngineNotes) {
	if e == nil {
		return
	}
	t.n.ConnRetries += e.ConnRetries
	t.n.Short += e.Short
	t.n.ShortOutputTokens += e.ShortOutputTokens
	t.n.ShortRequestedTokens += e.ShortRequestedTokens
	for _, k := range slices.Sorted(maps.Keys(e.ShortFinish)) {
		t.finish(k, e.ShortFinish[k])
	}
}

// notes are the summary's EngineNotes, nil when there is nothing to note.
func (t *engineTally) notes() *EngineNotes {
	if t.n.ConnRetries == 0 && t.n.Short == 0 {
		return nil
	}
	n := t.n
	n.ShortFinish = maps.Clone(t.n.ShortFinish)
	return &n
}

// finishText is "length 20, stop 3": the counts, largest first.
func (e *EngineNotes) finishText() string {
	keys := slices.Collect(maps.Keys(e.ShortFinish))
	slices.SortFunc(keys, func(a, b string) int {
		if d := e.ShortFinish[b] - e.ShortFinish[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + strconv.Itoa(e.ShortFinish[k])
	}
	return strings.Join(parts, ", ")
}

// writeEngineNotes writes the notes' rows in servingprobe's block.
func (s *Summary) writeEngineNotes(t *tableWriter) {
	e := s.Engine
	if e == nil {
		return
	}
	if e.ConnRetries > 0 {
		// Said in words: a keep-alive bug of the server's is not its
		// failure rate, and the user can avoid the retries.
		t.int("Retried on a new connection:", e.ConnRetries)
		t.row("  why:", "a kept-alive connection closed before answering; --compat new-connection avoids reuse")
	}
	if e.Short > 0 {
		t.int("Outputs shorter than asked:", e.Short)
		t.row("  output tokens of those:", fmt.Sprintf("%d of %d asked", e.ShortOutputTokens, e.ShortRequestedTokens))
		t.row("  finish reasons of those:", e.finishText())
	}
}

// engineFields are the notes' keys in the record's servingprobe object:
// none when there is nothing to note.
func (s *Summary) engineFields() []field {
	e := s.Engine
	if e == nil {
		return nil
	}
	var out []field
	if e.ConnRetries > 0 {
		out = append(out, field{"conn_retries", e.ConnRetries})
	}
	if e.Short > 0 {
		fr := record{}
		for _, k := range slices.Sorted(maps.Keys(e.ShortFinish)) {
			fr = append(fr, field{k, e.ShortFinish[k]})
		}
		out = append(out, field{"short_outputs", record{
			{"requests", e.Short},
			{"output_tokens", e.ShortOutputTokens},
			{"requested_tokens", e.ShortRequestedTokens},
			{"finish_reasons", fr},
		}})
	}
	return out
}

// parseEngineNotes reads engineFields back from the record's servingprobe
// object.
func (s *Summary) parseEngineNotes(sp map[string]json.RawMessage) error {
	var t engineTally
	if raw, ok := present(sp["conn_retries"]); ok {
		if err := json.Unmarshal(raw, &t.n.ConnRetries); err != nil {
			return fmt.Errorf("servingprobe.conn_retries: %w", err)
		}
	}
	if raw, ok := present(sp["short_outputs"]); ok {
		var so struct {
			Requests        int            `json:"requests"`
			OutputTokens    int            `json:"output_tokens"`
			RequestedTokens int            `json:"requested_tokens"`
			FinishReasons   map[string]int `json:"finish_reasons"`
		}
		if err := json.Unmarshal(raw, &so); err != nil {
			return fmt.Errorf("servingprobe.short_outputs: %w", err)
		}
		if so.Requests <= 0 || so.OutputTokens >= so.RequestedTokens {
			return fmt.Errorf("servingprobe.short_outputs: %d requests with %d of %d tokens asked are not short", so.Requests, so.OutputTokens, so.RequestedTokens)
		}
		t.n.Short, t.n.ShortOutputTokens, t.n.ShortRequestedTokens = so.Requests, so.OutputTokens, so.RequestedTokens
		for _, k := range slices.Sorted(maps.Keys(so.FinishReasons)) {
			t.finish(ShortFinishKey(k), so.FinishReasons[k])
		}
	}
	s.Engine = t.notes()
	return nil
}

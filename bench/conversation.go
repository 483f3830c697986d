package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/servingprobe/servingprobe/prober"
)

// MaxTurnRows bounds the turns a summary keeps apart: turns beyond it are
// counted together in the last row (TurnStats.AndLater), so that an
// agentic dataset of a hundred turns does not make a hundred rows. The
// conversation dataset has at most datasets.MaxConversationTurns (8).
const MaxTurnRows = 8

// Conversations are the figures of a run of multi-turn conversations
// (a conversation dataset, or any dataset whose rows are conversations):
// each turn's requests apart, since turn 1 finds nothing of its prompt in
// the server's prefix cache (cold) and each later turn resends a history
// the cache can hold (warm); nil in the summary of a run without any.
type Conversations struct {
	// Sessions is how many conversations started (their turn 1 was
	// sent); EndedByFailure how many a failed turn ended (a failed turn
	// ends its conversation, so each has at most one).
	Sessions       int `json:"sessions"`
	EndedByFailure int `json:"ended_by_failed_turn"`
	// Turns are the turns in order, turn 1 first.
	Turns []TurnStats `json:"turns"`
}

// TurnsPerSession is the mean count of turns a conversation sent, NaN
// when none started.
func (c *Conversations) TurnsPerSession() float64 {
	if c.Sessions == 0 {
		return math.NaN()
	}
	n := 0
	for _, t := range c.Turns {
		n += t.Requests
	}
	return float64(n) / float64(c.Sessions)
}

// TurnStats are one turn's figures over a run's conversations.
type TurnStats struct {
	// Turn is the turn (1-based); AndLater says the row also holds every
	// turn after it (MaxTurnRows).
	Turn     int  `json:"turn"`
	AndLater bool `json:"and_later,omitempty"`
	// Requests is how many requests of this turn were sent, Completed how
	// many succeeded.
	Requests  int `json:"requests"`
	Completed int `json:"completed"`
	// TTFT is over the successes of the turn, in ms, by the summary's own
	// statistics (exact, or the sketch under --stats sketch).
	TTFT Stats `json:"ttft_ms"`
	// InputTokens are the successes' prompt tokens (input_lens'),
	// CachedTokens those of them the server said it took from its prefix
	// cache (prober.CachedPromptTokens; 0 where it states none, as
	// ollama).
	InputTokens  int `json:"input_tokens"`
	CachedTokens int `json:"cached_tokens"`
	// PromptEvalRequests is how many successes stated the server's prompt
	// evaluation time (ollama's prompt_eval_duration: the prefill of the
	// part of the prompt its cache did not hold), PromptEvalMs their mean
	// in ms (0 when none did).
	PromptEvalRequests int     `json:"server_prompt_eval_requests"`
	PromptEvalMs       float64 `json:"server_prompt_eval_ms_mean"`
}

// CachedPct is the share of the turn's input tokens the server said it
// cached, in percent; NaN without input tokens.
func (t TurnStats) CachedPct() float64 {
	if t.InputTokens <= 0 {
		return math.NaN()
	}
	return 100 * float64(t.CachedTokens) / float64(t.InputTokens)
}

// Name is the turn as the table and the report write it: "1 (cold)",
// "2", "8+".
func (t TurnStats) Name() string {
	s := strconv.Itoa(t.Turn)
	if t.AndLater {
		s += "+"
	}
	if t.Turn == 1 {
		s += " (cold)"
	}
	return s
}

// turnTally adds up the turns as the results arrive.
type turnTally struct {
	sketch         bool
	sessions, fail int
	turns          []turnAcc
}

type turnAcc struct {
	requests, completed, in, cached int
	ttfts                           []float64 // seconds, exact statistics
	sk                              *Sketch   // sketch statistics
	evalN                           int
	evalSum                         float64 // seconds
}

// add counts one result; turn 0 is a request of no conversation. ok and
// ttft are as the run's statistics count them (reqRec), in the unit
// they keep (seconds); in is the request's input tokens (inputTokens).
func (c *turnTally) add(r *prober.Result, ok bool, ttft float64, in int) {
	if r.Turn < 1 {
		return
	}
	if r.Turn == 1 {
		c.sessions++
	}
	if !ok {
		c.fail++
	}
	k := min(r.Turn, MaxTurnRows) - 1
	for len(c.turns) <= k {
		c.turns = append(c.turns, turnAcc{})
	}
	t := &c.turns[k]
	t.requests++
	if !ok {
		return
	}
	t.completed++
	t.in += in
	t.cached += prober.CachedPromptTokens(*r)
	if d := r.Server.PromptEvalDuration; d > 0 {
		t.evalN++
		t.evalSum += d.Seconds()
	}
	if c.sketch {
		if t.sk == nil {
			t.sk = NewSketch(SketchRelativeError)
		}
		t.sk.Add(ttft)
		return
	}
	t.ttfts = append(t.ttfts, ttft)
}

// fill sets the summary's Conversations; none when no request was a
// conversation's turn.
func (c *turnTally) fill(s *Summary) {
	if len(c.turns) == 0 {
		return
	}
	out := &Conversations{Sessions: c.sessions, EndedByFailure: c.fail}
	for k, t := range c.turns {
		ts := TurnStats{Turn: k + 1, AndLater: k+1 == MaxTurnRows, Requests: t.requests, Completed: t.completed,
			InputTokens: t.in, CachedTokens: t.cached, PromptEvalRequests: t.evalN}
		if t.evalN > 0 {
			ts.PromptEvalMs = 1000 * t.evalSum / float64(t.evalN)
		}
		switch {
		case t.sk != nil:
			ts.TTFT = t.sk.Stats()
		case len(t.ttfts) > 0:
			ts.TTFT = exactOf(t.ttfts).Stats()
		}
		out.Turns = append(out.Turns, ts)
	}
	s.Conversations = out
}

// writeConversations prints the "Conversation turns" block: the
// conversations, then per turn its TTFT, its cached share of the input
// and, where the server stated it, its prompt evaluation time.
func (s *Summary) writeConversations(t *tableWriter) {
	c := s.Conversations
	if c == nil {
		return
	}
	t.line(center("Conversation turns", '-', 50))
	t.int("Conversations:", c.Sessions)
	t.int("Ended by a failed turn:", c.EndedByFailure)
	if v := c.TurnsPerSession(); !math.IsNaN(v) {
		t.f2("Turns per conversation (mean):", v)
	}
	for _, ts := range c.Turns {
		name := "Turn " + ts.Name()
		t.row(name+" requests:", fmt.Sprintf("%d (%d ok)", ts.Requests, ts.Completed))
		t.f2(name+" median TTFT (ms):", ts.TTFT.Median)
		t.f2(name+" P99 TTFT (ms):", ts.TTFT.P99)
		if p := ts.CachedPct(); !math.IsNaN(p) {
			t.row(name+" cached input:", fmt.Sprintf("%d/%d (%.1f%%)", ts.CachedTokens, ts.InputTokens, p))
		}
		if ts.PromptEvalRequests > 0 {
			t.f2(name+" server prompt eval (ms):", ts.PromptEvalMs)
		}
	}
}

// conversationsRecord is the record's "conversations" object.
func (s *Summary) conversationsRecord(r record) record {
	c := s.Conversations
	if c == nil {
		return r
	}
	turns := make([]record, len(c.Turns))
	for i, ts := range c.Turns {
		tr := record{{"turn", ts.Turn}}
		if ts.AndLater {
			tr = append(tr, field{"and_later", true})
		}
		tr = append(tr,
			field{"requests", ts.Requests}, field{"completed", ts.Completed},
			field{"mean_ttft_ms", ts.TTFT.Mean}, field{"median_ttft_ms", ts.TTFT.Median}, field{"p99_ttft_ms", ts.TTFT.P99},
			field{"input_tokens", ts.InputTokens}, field{"cached_tokens", ts.CachedTokens},
			field{"server_prompt_eval_requests", ts.PromptEvalRequests}, field{"server_prompt_eval_ms_mean", ts.PromptEvalMs})
		turns[i] = tr
	}
	return append(r, field{"conversations", record{
		{"sessions", c.Sessions}, {"ended_by_failed_turn", c.EndedByFailure}, {"turns", turns},
	}})
}

// readConversations reads conversationsRecord's object back.
func (s *Summary) readConversations(m map[string]json.RawMessage, _ *recordView) error {
	raw, ok := m["conversations"]
	if !ok {
		return nil
	}
	var j struct {
		Sessions       int `json:"sessions"`
		EndedByFailure int `json:"ended_by_failed_turn"`
		Turns          []struct {
			Turn     int     `json:"turn"`
			AndLater bool    `json:"and_later"`
			Req      int     `json:"requests"`
			Comp     int     `json:"completed"`
			Mean     float64 `json:"mean_ttft_ms"`
			Median   float64 `json:"median_ttft_ms"`
			P99      float64 `json:"p99_ttft_ms"`
			In       int     `json:"input_tokens"`
			Cached   int     `json:"cached_tokens"`
			EvalN    int     `json:"server_prompt_eval_requests"`
			EvalMs   float64 `json:"server_prompt_eval_ms_mean"`
		} `json:"turns"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return fmt.Errorf("conversations: %w", err)
	}
	c := &Conversations{Sessions: j.Sessions, EndedByFailure: j.EndedByFailure}
	for i, t := range j.Turns {
		if t.Turn != i+1 || t.Turn > MaxTurnRows || t.Comp > t.Req || t.Comp < 0 {
			return fmt.Errorf("conversations: turns[%d]: turn %d with %d of %d requests completed", i, t.Turn, t.Comp, t.Req)
		}
		c.Turns = append(c.Turns, TurnStats{Turn: t.Turn, AndLater: t.AndLater, Requests: t.Req, Completed: t.Comp,
			TTFT: Stats{Mean: t.Mean, Median: t.Median, P99: t.P99}, InputTokens: t.In, CachedTokens: t.Cached,
			PromptEvalRequests: t.EvalN, PromptEvalMs: t.EvalMs})
	}
	s.Conversations = c
	return nil
}

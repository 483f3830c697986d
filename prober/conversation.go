package prober

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/datasets"
)

// runConversation sends one conversation probe: prompt's rounds in turn,
// the first starting with a fresh random prefix so that no prefix cache
// holds any of it (turn 1 is cold), each later one carrying the whole
// history with the server's real answers (Prompt.Round), so that a prefix
// cache can serve all of it but the newest question (the later turns are
// warm). Every request gets its own request id, and keeps p's session
// header, one id per conversation. A failed turn ends the conversation,
// as in a bench (converse). It returns the last request's Result with
// the earlier turns in Before.
func runConversation(ctx context.Context, p Prober, prompt datasets.Prompt, logger log.Logger) Result {
	prompt = withFreshPrefix(prompt)
	var done []Result
	do := func(ctx context.Context, q datasets.Prompt, at time.Time) Result {
		pp := p
		pp.Options.Headers = maps.Clone(p.Options.Headers)
		id := newRequestID()
		pp.Options.Headers[requestIDHeader] = id
		r := pp.Run(ctx, q, at)
		r.RequestID = id
		return r
	}
	// Turn 1 keeps a zero Scheduled: the scheduler sets its planned
	// tick. Later turns are sent as soon as the answer before is in.
	converse(ctx, do, prompt, time.Time{}, func(k int, _ datasets.Prompt, r Result) bool {
		r.Turn = k + 1
		logProbeResult(log.With(logger, "turn", r.Turn), r)
		done = append(done, r)
		return r.Outcome == OutcomeSuccess && ctx.Err() == nil
	})
	last := done[len(done)-1]
	last.Before = slices.Clip(done[:len(done)-1])
	return last
}

// withFreshPrefix returns p with a random tag before its first message
// and its text. A prefix cache matches a prompt from its first token, so
// a prompt that differs there shares nothing cached but the chat
// template's opening tokens: its prefill is cold, as a new user's first
// request is. The pool's prompt is shared between probes, so its
// messages are copied, never changed in place.
func withFreshPrefix(p datasets.Prompt) datasets.Prompt {
	tag := "[" + newSessionID() + "]\n"
	if p.Text != "" || len(p.Messages) == 0 {
		p.Text = tag + p.Text
	}
	if len(p.Messages) > 0 {
		p.Messages = slices.Clone(p.Messages)
		p.Messages[0].Content = tag + p.Messages[0].Content
	}
	return p
}

// newSessionID returns a random id for a conversation's session header
// and a prompt's fresh prefix: random, so that neither a cache nor a
// router has seen it before.
func newSessionID() string { return "sp-session-" + newRequestID()[len("sp-"):] }

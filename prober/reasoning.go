package prober

import (
	"strings"
	"time"
)

// The tags reasoning models write around their thinking when the server
// runs no reasoning parser (or one that leaves them in the content).
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
	// toolCallOpen ends reasoning that was never closed: Qwen3 models
	// sometimes open a tool call straight from thinking, and sglang's
	// Qwen3 parser takes the tag as the end of reasoning.
	toolCallOpen = "<tool_call>"
)

// thinkEnd returns where the reasoning at the start of text ends, when
// text is written with think tags, following sglang's reasoning parsers
// (python/sglang/srt/parser/reasoning_parser.py) and vLLM's deepseek_r1
// and qwen3 parsers:
//
//   - "<think>" at the start (after white space) opens reasoning (the
//     parsers strip it and take everything up to the close as reasoning);
//     reasoning runs to "</think>", or to "<tool_call>", or to the end of
//     the text when neither comes (a length cut in the middle of
//     thinking). An answer that only mentions the tag later is not
//     reasoning: the streaming parsers, which see the text in order, would
//     not go back over what they had already passed as the answer;
//   - "</think>" without an opening tag closes reasoning that began with
//     the text (DeepSeek-R1, and Qwen3 templates that put "<think>" in the
//     prompt);
//   - text with neither tag has no reasoning.
//
// The end is the byte offset after the closing tag (the tag is part of
// the reasoning: it is the last token of thinking); ok is false when the
// text has no reasoning.
func thinkEnd(text string) (end int, ok bool) {
	opened := strings.HasPrefix(strings.TrimLeft(text, " \t\r\n"), thinkOpen)
	if i := strings.Index(text, thinkClose); i >= 0 {
		if j := strings.Index(text, toolCallOpen); opened && j >= 0 && j < i {
			return j, true
		}
		return i + len(thinkClose), true
	}
	if !opened {
		return 0, false
	}
	if j := strings.Index(text, toolCallOpen); j >= 0 {
		return j, true
	}
	return len(text), true
}

// splitReasoning sets which output was reasoning and which the answer:
// FirstAnswer, and ReasoningTokens where the server did not state them.
//
// Events the decoder marked (reasoning fields and reasoning events) are
// taken as marked. A stream with none marked is read for think tags (see
// thinkEnd): every event whose text ends inside the reasoning is marked;
// the event that carries the closing tag is marked too when nothing
// follows the tag in it, else it is the answer's first. Per-event token
// counts must be final (after reconcileEvents), since the counted
// reasoning count adds them up.
func splitReasoning(res *Result) {
	marked := false
	for _, e := range res.Events {
		marked = marked || e.Reasoning
	}
	if !marked {
		if end, ok := thinkEnd(res.GeneratedText); ok {
			for i := range res.Events {
				if res.Events[i].TextEnd > end {
					break
				}
				res.Events[i].Reasoning, marked = true, true
			}
		}
	}
	if !marked {
		return
	}
	counted := 0
	res.FirstAnswer = time.Time{}
	for _, e := range res.Events {
		if e.Reasoning {
			counted += e.Tokens
		} else if res.FirstAnswer.IsZero() {
			res.FirstAnswer = e.At
		}
	}
	if res.ReasoningTokensSource == "" {
		res.ReasoningTokens, res.ReasoningTokensSource = counted, TokenSourceCounted
	}
}

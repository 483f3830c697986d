package simulator

import (
	"math/rand/v2"
	"strings"

	"github.com/servingprobe/servingprobe/datasets"
)

// vocab is the output vocabulary. Each entry is one token, with the leading
// space that byte-level BPE vocabularies carry, and none needs JSON escaping
// (a test checks this). The token id of vocab[i] is vocabBase+i.
var vocab = [...]string{
	" the", " of", " and", " to", " in", " a", " is", " that", " for", " it",
	" as", " was", " with", " be", " by", " on", " not", " he", " this", " are",
	" or", " his", " from", " at", " which", " but", " have", " an", " had", " they",
	" you", " were", " their", " one", " all", " we", " can", " her", " has", " there",
	" been", " if", " more", " when", " will", " would", " who", " so", " no", " time",
	" model", " token", " server", " stream", " batch", " cache", " layer", " probe", " queue", " step",
	" fast", " small", " data", " word",
}

const (
	vocabBase = 1000
	// vocabSize is the nominal vocabulary size. An end_id at or above it
	// can never be produced, which is how TensorRT-LLM clients force the
	// full length.
	vocabSize = 32000
	// eosTokenID is reported as the matched stop token by sglang.
	eosTokenID = 2
)

// nextToken draws one output token.
func nextToken(r *rand.Rand) (text string, id int) {
	i := r.IntN(len(vocab))
	return vocab[i], vocabBase + i
}

// countText counts a text prompt. It, encodeText and chatIDs are how every
// prompt is counted: with the tokenizer the simulator names as its own on /model_info
// (embeddedTokenizer, the Qwen3 tokenizer built into the binary), the way
// the real servers count them with their model's:
//
//   - a text prompt (vLLM's /v1/completions, sglang's /generate, Triton's
//     text_input, truss) is the tokenizer's encode of the text with its
//     special tokens, transformers' default (Qwen3 adds none);
//   - a chat request (vLLM's and sglang's /v1/chat/completions, ollama's
//     /api/chat) is the model's chat template rendered over the messages
//     with the generation prompt ("<|im_start|>assistant\n"), then encoded
//     without special tokens, since the template writes its own: the
//     count includes every role marker and separator, as vLLM's
//     prompt_tokens and ollama's prompt_eval_count do;
//   - ollama's /api/generate renders the prompt through the model's
//     template as one user turn (after its system message, if given),
//     unless the request is raw; for a ChatML model such as Qwen3 that is
//     the chat template's text.
//
// A prompt given as token ids is its length.
func (s *Server) countText(text string) (int, *apiError) {
	ids, e := s.encodeText(text)
	return len(ids), e
}

// encodeText is countText's encoding: the prompt's token ids, which the
// prefix cache model reads.
func (s *Server) encodeText(text string) ([]int, *apiError) {
	ids, err := s.tok.Encode(text, true)
	if err != nil {
		return nil, badRequest("tokenize the prompt: %v", err)
	}
	return ids, nil
}

// chatIDs renders messages through the chat template with the generation
// prompt and encodes the result.
func (s *Server) chatIDs(messages []datasets.Message) ([]int, *apiError) {
	text, err := s.tok.ApplyChatTemplate(messages, true)
	if err != nil {
		return nil, badRequest("apply the chat template: %v", err)
	}
	ids, err := s.tok.Encode(text, false)
	if err != nil {
		return nil, badRequest("tokenize the prompt: %v", err)
	}
	return ids, nil
}

// detokenize maps ids onto the output vocabulary: it inverts the output
// token ids the simulator reports (vocabBase+i), not the tokenizer's.
func detokenize(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		i := id - vocabBase
		if i < 0 {
			i = -i
		}
		b.WriteString(vocab[i%len(vocab)])
	}
	return b.String()
}

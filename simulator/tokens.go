package simulator

import (
	"math/rand/v2"
	"strings"
	"unicode/utf8"
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

// estimateTokens is the prompt token estimate: each whitespace-separated word
// is cut into pieces of 4 bytes (a piece is extended rather than split inside
// a UTF-8 character), and each piece is one token. For ASCII that is
// ceil(bytes/4) per word.
func estimateTokens(s string) int {
	n := 0
	pieces(s, func(string) { n++ })
	return n
}

func pieces(s string, fn func(piece string)) {
	for w := range strings.FieldsSeq(s) {
		for len(w) > 0 {
			n := min(4, len(w))
			for n < len(w) && !utf8.RuneStart(w[n]) {
				n++
			}
			fn(w[:n])
			w = w[n:]
		}
	}
}

// Chat template overhead added by estimateChatTokens.
const (
	chatTokensPerMessage = 4
	chatTokensAssistant  = 3
)

// estimateChatTokens estimates a chat prompt from its messages' text.
func estimateChatTokens(contents []string) int {
	n := chatTokensAssistant
	for _, c := range contents {
		n += chatTokensPerMessage + estimateTokens(c)
	}
	return n
}

// tokenize splits s the way estimateTokens counts it and gives each piece a
// stable id in [vocabBase, vocabSize). It exists for /tokenize; the ids are
// not invertible (detokenize maps ids onto vocab).
func tokenize(s string) []int {
	ids := []int{}
	pieces(s, func(p string) {
		ids = append(ids, vocabBase+int(fnv32(p)%(vocabSize-vocabBase)))
	})
	return ids
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// detokenize maps ids onto the output vocabulary.
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

package datasets

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// wordPieces lets random-ids build text of an exact token count without
// encoding it. Every lead piece is a token whose text is a space and then
// letters only (" house"), and that encodes back to that one token; every
// first piece is a token whose text is letters only ("house") and encodes
// back to itself, which opens a prompt so that it does not start with a
// space (chat templates such as Llama 3's trim the message).
//
// Why concatenation keeps the count: a regex pre-tokenizer (GPT-2 and Qwen:
// ` ?\p{L}+`; Llama 3: `[^\r\n\p{L}\p{N}]?\p{L}+`) or a Metaspace one splitting on ▁ cuts text before
// every space that precedes a letter, and BPE never merges across those
// cuts, so first + lead + lead + ... encodes as the pieces' ids. Every
// boundary in such a text is the same, letters then a space then letters,
// so the check in newWordPieces (all lead pieces in ascending id order,
// which are exactly the pairs a prompt's run can put side by side, then a
// shuffled sample of 4,096, then a sample of first-then-lead pairs, each
// encoded as one text) fails for a tokenizer that treats that boundary differently,
// and random-ids then falls back to measuring each prompt.
type wordPieces struct {
	lead, first         []int    // token ids, ascending
	leadText, firstText []string // their texts, in the same order (leadText only while verifying)
	leadAll             string   // the lead texts end to end
	leadOff             []int    // lead piece k is leadAll[leadOff[k]:leadOff[k+1]]
}

// minPieces is the fewest lead pieces worth building from; a tokenizer with
// fewer (a toy vocabulary) is measured instead.
const minPieces = 64

// newWordPieces finds and verifies the pieces of tok, or returns nil when
// tok has too few or concatenating them changes the token count.
func newWordPieces(tok Tokenizer) *wordPieces {
	w := &wordPieces{}
	var bare []int // letters-only tokens: the first-piece candidates
	var bareText []string
	// Decode every id on every core, a block at a time, keeping order.
	const block = 8192
	vocab := tok.VocabSize()
	decoded := make([][]string, (vocab+block-1)/block)
	onEveryCore(len(decoded), func(b int) {
		one := make([]int, 1)
		out := make([]string, min(block, vocab-b*block))
		for k := range out {
			one[0] = b*block + k
			if s, err := tok.Decode(one, false); err == nil {
				out[k] = s
			}
		}
		decoded[b] = out
	})
	for b, out := range decoded {
		for k, s := range out {
			id := b*block + k
			if body, ok := strings.CutPrefix(s, " "); ok {
				if lettersOnly(body) {
					w.lead, w.leadText = append(w.lead, id), append(w.leadText, s)
				}
			} else if lettersOnly(s) {
				bare, bareText = append(bare, id), append(bareText, s)
			}
		}
	}
	if len(w.lead) < minPieces {
		// A Metaspace decoder drops the ▁ of a text's first token, so
		// "▁house" alone decodes to "house": try those as lead pieces.
		w.lead, w.leadText = bare, make([]string, len(bare))
		for k, s := range bareText {
			w.leadText[k] = " " + s
		}
	}
	var ok bool
	if w.lead, w.leadText, ok = verifiedRun(tok, w.lead, w.leadText); !ok || len(w.lead) < minPieces {
		return nil
	}
	// Any letters-only token may open a prompt, but one token of a prompt
	// does not need all of them: a sample spread over the ids is verified.
	step := max(1, len(bare)/maxFirst)
	for k := 0; k*step < len(bare); k++ {
		bare[k], bareText[k] = bare[k*step], bareText[k*step]
	}
	n := (len(bare) + step - 1) / step
	if w.first, w.firstText = verified(tok, bare[:n], bareText[:n], "\n"); len(w.first) == 0 {
		return nil
	}
	// verifiedRun checked every pair a run puts side by side; a shuffled
	// sample checks pairs a run never makes: the claim is any order.
	r := rand.New(rand.NewPCG(1, 2))
	order := r.Perm(len(w.lead))[:min(len(w.lead), maxFirst)]
	if !w.concatenates(tok, order) {
		return nil
	}
	// First pieces followed by a lead piece: one text each, so a sample.
	for k := 0; k < len(w.first); k += max(1, len(w.first)/256) {
		l := r.IntN(len(w.lead))
		ids, err := tok.Encode(w.firstText[k]+w.leadText[l], false)
		if err != nil || !slices.Equal(ids, []int{w.first[k], w.lead[l]}) {
			return nil
		}
	}
	w.leadAll = strings.Join(w.leadText, "")
	w.leadOff = make([]int, len(w.lead)+1)
	for k, t := range w.leadText {
		w.leadOff[k+1] = w.leadOff[k] + len(t)
	}
	w.leadText = nil // leadAll holds them
	return w
}

// maxFirst bounds the first pieces verified and the lead pieces checked in
// a shuffled order, to keep the check at load short (each is a word the BPE
// encoder has not seen).
const maxFirst = 4096

// verifyBatch is how many candidates verified measures in one text.
const verifyBatch = 1024

// verifiedRun keeps the lead candidates (texts starting with a space) that
// encode to their one id, and reports whether the kept ones, joined in
// their order and wrapping around, encode to their ids: every pair a
// prompt's run can put side by side. Batches are checked on every core;
// the pairs across their seams are checked after, in one text.
func verifiedRun(tok Tokenizer, ids []int, texts []string) ([]int, []string, bool) {
	nb := (len(ids) + verifyBatch - 1) / verifyBatch
	keep, keepText, good := make([][]int, nb), make([][]string, nb), make([]bool, nb)
	joined := func(ids []int, texts []string) bool {
		got, err := tok.Encode(strings.Join(texts, ""), false)
		return err == nil && slices.Equal(got, ids)
	}
	onEveryCore(nb, func(b int) {
		lo, hi := b*verifyBatch, min((b+1)*verifyBatch, len(ids))
		if joined(ids[lo:hi], texts[lo:hi]) {
			keep[b], keepText[b], good[b] = ids[lo:hi], texts[lo:hi], true
			return
		}
		for k := lo; k < hi; k++ {
			if encodesTo(tok, texts[k], ids[k]) {
				keep[b], keepText[b] = append(keep[b], ids[k]), append(keepText[b], texts[k])
			}
		}
		good[b] = joined(keep[b], keepText[b])
	})
	if slices.Contains(good, false) {
		return nil, nil, false
	}
	outIDs, outText := slices.Concat(keep...), slices.Concat(keepText...)
	if len(outIDs) == 0 {
		return nil, nil, false
	}
	// The seams: each batch's last piece then the next one's first, and the
	// last piece of all then the first.
	var seamIDs []int
	var seamText []string
	end := 0
	for b := range nb {
		end += len(keep[b])
		if end < len(outIDs) && len(keep[b]) > 0 {
			seamIDs, seamText = append(seamIDs, outIDs[end-1], outIDs[end]), append(seamText, outText[end-1], outText[end])
		}
	}
	seamIDs, seamText = append(seamIDs, outIDs[len(outIDs)-1], outIDs[0]), append(seamText, outText[len(outText)-1], outText[0])
	return outIDs, outText, joined(seamIDs, seamText)
}

// onEveryCore calls f(0), ..., f(n-1) on GOMAXPROCS goroutines.
func onEveryCore(n int, f func(k int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for k := int(next.Add(1)) - 1; k < n; k = int(next.Add(1)) - 1 {
				f(k)
			}
		})
	}
	wg.Wait()
}

// verified keeps the candidates whose text encodes to their one id. It
// encodes them a batch at a time, joined by sep (a separator that is a
// token of its own), and checks one by one only a batch whose joined
// encoding is not the ids it should be: one encode per thousand candidates
// instead of one each.
func verified(tok Tokenizer, ids []int, texts []string, sep string) ([]int, []string) {
	sepIDs, err := tok.Encode(sep, false)
	batched := err == nil && len(sepIDs) == 1
	var keep []int
	var keepText []string
	for lo := 0; lo < len(ids); lo += verifyBatch {
		hi := min(lo+verifyBatch, len(ids))
		if batched {
			var sb strings.Builder
			want := make([]int, 0, 2*(hi-lo))
			for k := lo; k < hi; k++ {
				if k > lo {
					sb.WriteString(sep)
					want = append(want, sepIDs...)
				}
				sb.WriteString(texts[k])
				want = append(want, ids[k])
			}
			if got, err := tok.Encode(sb.String(), false); err == nil && slices.Equal(got, want) {
				keep, keepText = append(keep, ids[lo:hi]...), append(keepText, texts[lo:hi]...)
				continue
			}
		}
		for k := lo; k < hi; k++ {
			if encodesTo(tok, texts[k], ids[k]) {
				keep, keepText = append(keep, ids[k]), append(keepText, texts[k])
			}
		}
	}
	return keep, keepText
}

// concatenates reports whether the lead pieces at the given indexes,
// joined, encode to their ids.
func (w *wordPieces) concatenates(tok Tokenizer, order []int) bool {
	var sb strings.Builder
	want := make([]int, len(order))
	for i, k := range order {
		sb.WriteString(w.leadText[k])
		want[i] = w.lead[k]
	}
	ids, err := tok.Encode(sb.String(), false)
	return err == nil && slices.Equal(ids, want)
}

// text is prompt i's text of n tokens for an offset drawn on [0, vocab):
// the first piece at or after the offset, then a run of n-1 lead pieces
// from the first at or after it, both moved on by i and wrapping, as
// bench_serving's runs are (offset+i+j) mod vocab. The lead texts lie end
// to end in leadAll, so a run is one substring (two or more where it
// wraps), copied once.
func (w *wordPieces) text(offset, i, n int) string {
	if n <= 0 {
		return ""
	}
	first := w.firstText[(atOrAfter(w.first, offset)+i)%len(w.first)]
	start, left := (atOrAfter(w.lead, offset)+i)%len(w.lead), n-1
	if end := start + left; end <= len(w.lead) {
		return first + w.leadAll[w.leadOff[start]:w.leadOff[end]]
	}
	var sb strings.Builder
	sb.Grow(len(first) + left*len(w.leadAll)/len(w.lead) + 64)
	sb.WriteString(first)
	for left > 0 {
		k := min(left, len(w.lead)-start)
		sb.WriteString(w.leadAll[w.leadOff[start]:w.leadOff[start+k]])
		start, left = 0, left-k
	}
	return sb.String()
}

// atOrAfter is the index of the first id ≥ v in the ascending ids, or 0
// past the end.
func atOrAfter(ids []int, v int) int {
	k, _ := slices.BinarySearch(ids, v)
	if k == len(ids) {
		return 0
	}
	return k
}

// lettersOnly reports whether s is valid UTF-8 made of letters only, at
// least one. Marks and digits are left out: a combining mark could compose
// with a neighbour under NFC, and digits are split one by one by some
// pre-tokenizers.
func lettersOnly(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if !unicode.IsLetter(c) {
			return false
		}
	}
	return true
}

func encodesTo(tok Tokenizer, s string, id int) bool {
	ids, err := tok.Encode(s, false)
	return err == nil && len(ids) == 1 && ids[0] == id
}

// piecesCache holds the pieces of the last few tokenizers, so that the
// datasets of a sweep (or a test) find them once. It is bounded because a
// daemon may load a tokenizer per bench request.
var piecesCache struct {
	mu      sync.Mutex
	entries []*piecesEntry
}

type piecesEntry struct {
	tok  Tokenizer
	once sync.Once
	w    *wordPieces
}

const piecesCacheSize = 4

// piecesFor returns tok's verified pieces, or nil (see newWordPieces),
// computing them once per tokenizer while it stays in the cache.
func piecesFor(tok Tokenizer) *wordPieces {
	if !reflect.TypeOf(tok).Comparable() {
		return newWordPieces(tok)
	}
	piecesCache.mu.Lock()
	var e *piecesEntry
	for _, c := range piecesCache.entries {
		if c.tok == tok {
			e = c
			break
		}
	}
	if e == nil {
		e = &piecesEntry{tok: tok}
		if len(piecesCache.entries) == piecesCacheSize {
			piecesCache.entries = piecesCache.entries[1:]
		}
		piecesCache.entries = append(piecesCache.entries, e)
	}
	piecesCache.mu.Unlock()
	e.once.Do(func() { e.w = newWordPieces(tok) })
	return e.w
}

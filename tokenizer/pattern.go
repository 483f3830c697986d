package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The split patterns of the common byte-level tokenizers. regexp2 runs them
// correctly but slowly (a backtracking engine over []rune); matchers below
// are hand-written equivalents, checked against regexp2 by a fuzz test and
// against HF by the golden ids.
const (
	// patQwen2 is Qwen2, Qwen2.5 and Qwen3's pattern.
	patQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patLlama3 is Llama 3's (and DeepSeek-R1 distills on Llama) pattern:
	// like Qwen2's but with digit runs of up to three.
	patLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patGPT2 is the pattern ByteLevel uses with use_regex (GPT-2, RoBERTa).
	patGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// matcher returns the end (byte offset) of the match starting exactly at i,
// or -1. All three patterns match at every position of non-empty input, so
// a scan never needs to search ahead.
type matcher func(s string, i int) int

func handMatcher(pattern string) matcher {
	switch pattern {
	case patQwen2:
		return func(s string, i int) int { return matchLlamaStyle(s, i, 1) }
	case patLlama3:
		return func(s string, i int) int { return matchLlamaStyle(s, i, 3) }
	case patGPT2:
		return matchGPT2
	}
	return nil
}

// isS is \s as Oniguruma (and regexp2) define it with Unicode: the
// White_Space property.
func isS(r rune) bool {
	return isRustWhitespace(r)
}

func isL(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

func isN(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

func at(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// contraction matches 's 't 're 've 'm 'll 'd at i; fold makes it
// case-insensitive as (?i:...) is. Under Unicode simple case folding, U+017F
// (long s) folds to 's' and U+212A (Kelvin) to 'k'; only the former matters.
func contraction(s string, i int, fold bool) int {
	if i >= len(s) || s[i] != '\'' {
		return -1
	}
	r1, n1 := at(s, i+1)
	if fold {
		if r1 == 0x17F {
			return i + 1 + n1
		}
		r1 = unicode.ToLower(r1)
	}
	switch r1 {
	case 's', 't', 'm', 'd':
		return i + 1 + n1
	case 'r', 'v', 'l':
		r2, n2 := at(s, i+1+n1)
		if fold {
			r2 = unicode.ToLower(r2)
		}
		want := 'e'
		if r1 == 'l' {
			want = 'l'
		}
		if r2 == want {
			return i + 1 + n1 + n2
		}
	}
	return -1
}

func skipWhile(s string, i int, f func(rune) bool) int {
	for i < len(s) {
		r, n := at(s, i)
		if !f(r) {
			break
		}
		i += n
	}
	return i
}

func isPunct(r rune) bool { return r >= 0 && !isS(r) && !isL(r) && !isN(r) }

// whitespaceTail handles the shared alternatives \s+(?!\S)|\s+ at a
// whitespace rune: the run minus its last rune when a non-space follows and
// the run has more than one rune.
func whitespaceTail(s string, i int) int {
	end := skipWhile(s, i, isS)
	if end == len(s) {
		return end
	}
	_, lastN := utf8.DecodeLastRuneInString(s[:end])
	if end-lastN > i {
		return end - lastN
	}
	return end
}

// matchLlamaStyle implements patQwen2 (maxDigits 1) and patLlama3 (3).
func matchLlamaStyle(s string, i, maxDigits int) int {
	if e := contraction(s, i, true); e >= 0 {
		return e
	}
	r, n := at(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isL(r) {
		return skipWhile(s, i+n, isL)
	}
	if r != '\r' && r != '\n' && !isN(r) {
		if r2, n2 := at(s, i+n); isL(r2) {
			return skipWhile(s, i+n+n2, isL)
		}
	}
	// \p{N}{1,maxDigits}
	if isN(r) {
		j := i + n
		for k := 1; k < maxDigits; k++ {
			r2, n2 := at(s, j)
			if !isN(r2) {
				break
			}
			j += n2
		}
		return j
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*
	j := i
	if r == ' ' {
		j += n
	}
	if r2, _ := at(s, j); isPunct(r2) {
		j = skipWhile(s, j, isPunct)
		return skipWhile(s, j, func(r rune) bool { return r == '\r' || r == '\n' })
	}
	if !isS(r) {
		return -1 // unreachable for valid input: r is L, N, \s or punctuation
	}
	// \s*[\r\n]+ : greedy \s* backs off to the last newline of the run.
	end := skipWhile(s, i, isS)
	for k := end - 1; k >= i; k-- {
		if s[k] == '\r' || s[k] == '\n' {
			return k + 1
		}
	}
	return whitespaceTail(s, i)
}

// matchGPT2 implements patGPT2.
func matchGPT2(s string, i int) int {
	if e := contraction(s, i, false); e >= 0 {
		return e
	}
	r, n := at(s, i)
	j := i
	if r == ' ' {
		j += n
	}
	r2, n2 := at(s, j)
	switch {
	case isL(r2):
		return skipWhile(s, j+n2, isL)
	case isN(r2):
		return skipWhile(s, j+n2, isN)
	case isPunct(r2):
		return skipWhile(s, j+n2, isPunct)
	}
	if !isS(r) {
		return -1
	}
	return whitespaceTail(s, i)
}

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

// Character classes of the ASCII bytes, read from a table by skipClass:
// splitting is half of encoding a text whose words are all cached, and a
// table lookup per byte beats a call through a func value per rune. The
// table is built from isL, isN and isS themselves, so it cannot disagree
// with them.
const (
	clsL uint8 = 1 << iota
	clsN
	clsS
	clsPunct
	clsNewline // \r and \n
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range rune(utf8.RuneSelf) {
		if isL(c) {
			t[c] |= clsL
		}
		if isN(c) {
			t[c] |= clsN
		}
		if isS(c) {
			t[c] |= clsS
		}
		if isPunct(c) {
			t[c] |= clsPunct
		}
		if c == '\r' || c == '\n' {
			t[c] |= clsNewline
		}
	}
	return t
}()

// skipClass returns the end of the run of runes from i in the class cls:
// bytes below utf8.RuneSelf are read from asciiClass, the other runes
// tested by the class's function.
func skipClass(s string, i int, cls uint8) int {
	f := classFuncs[cls]
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiClass[c]&cls == 0 {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !f(r) {
			return i
		}
		i += n
	}
	return i
}

// classFuncs are the classes' tests of a rune, which asciiClass agrees
// with on ASCII.
var classFuncs = [clsNewline + 1]func(rune) bool{clsL: isL, clsN: isN, clsS: isS, clsPunct: isPunct, clsNewline: isNewline}

func isNewline(r rune) bool { return r == '\r' || r == '\n' }

func isPunct(r rune) bool { return r >= 0 && !isS(r) && !isL(r) && !isN(r) }

// whitespaceTail handles the shared alternatives \s+(?!\S)|\s+ at a
// whitespace rune: the run minus its last rune when a non-space follows and
// the run has more than one rune.
func whitespaceTail(s string, i int) int {
	end := skipClass(s, i, clsS)
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
		return skipClass(s, i+n, clsL)
	}
	if r != '\r' && r != '\n' && !isN(r) {
		if r2, n2 := at(s, i+n); isL(r2) {
			return skipClass(s, i+n+n2, clsL)
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
		j = skipClass(s, j, clsPunct)
		return skipClass(s, j, clsNewline)
	}
	if !isS(r) {
		return -1 // unreachable for valid input: r is L, N, \s or punctuation
	}
	// \s*[\r\n]+ : greedy \s* backs off to the last newline of the run.
	end := skipClass(s, i, clsS)
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
		return skipClass(s, j+n2, clsL)
	case isN(r2):
		return skipClass(s, j+n2, clsN)
	case isPunct(r2):
		return skipClass(s, j+n2, clsPunct)
	}
	if !isS(r) {
		return -1
	}
	return whitespaceTail(s, i)
}

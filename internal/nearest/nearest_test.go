package nearest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"num-promtps", "num-prompts", 1}, // a swap
		{"sharegtp", "sharegpt", 1},
		{"vlm", "vllm", 1},   // an insertion
		{"vllmm", "vllm", 1}, // a deletion
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // OSA, not Damerau-Levenshtein's 2
	} {
		if got := distance(tc.a, tc.b); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestName(t *testing.T) {
	known := []string{"num-prompts", "random-input-len", "random-output-len", "sharegpt", "vllm", "vllm-chat", "tag", "seed"}
	for _, tc := range []struct{ got, want string }{
		{"num-promtps", "num-prompts"},
		{"random-inptu-len", "random-input-len"},
		{"sharegtp", "sharegpt"},
		{"vlm", "vllm"},
		{"vllm-caht", "vllm-chat"},
		{"tga", "tag"},
		{"xyz", ""}, // three edits from "tag": no suggestion
		{"completely-other", ""},
		{"a", ""}, // one edit from nothing known; and never the whole of a name
	} {
		if got := Name(tc.got, known); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.got, got, tc.want)
		}
	}
}

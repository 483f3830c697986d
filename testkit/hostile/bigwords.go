package hostile

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
)

// BigWords is a chat completions server whose every answer streams Words
// events of WordBytes lower-case letters each, with no space between them
// and no usage block, then a finish reason and [DONE]. The client has no
// count from the server, so it counts the text itself, and the whole
// answer is one pre-tokenizer word of Words×WordBytes bytes: the default
// 48 one-MiB words are a 48 MiB word, which the BPE merge loop held as
// 1.7 GB of symbols and merge candidates. It is a valid stream within the
// default size caps (max_response_bytes 64 MiB, max_event_bytes 16 MiB),
// so nothing but the token count stands in its way. It is not one of the
// Server's Faults: the fault matrix runs its targets with small caps that
// would stop it before the tokenizer sees it.
type BigWords struct {
	srv       *httptest.Server
	requests  atomic.Int64
	Words     int
	WordBytes int
}

// NewBigWords serves words words of wordBytes bytes each on loopback.
func NewBigWords(words, wordBytes int) *BigWords {
	b := &BigWords{Words: words, WordBytes: wordBytes}
	// The letters are random (seeded) rather than one letter repeated, so
	// that the merge loop finds work all along the word.
	r := rand.New(rand.NewPCG(1, 2))
	letters := make([]byte, wordBytes)
	for i := range letters {
		letters[i] = byte('a' + r.IntN(26))
	}
	event := []byte(Chunk(string(letters)))
	end := `data: {"id":"h","object":"chat.completion.chunk","model":"hostile","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.requests.Add(1)
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for range b.Words {
			if _, err := w.Write(event); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(end))
	}))
	return b
}

// URL is the server's base URL (a target's url).
func (b *BigWords) URL() string { return b.srv.URL }

// Requests is how many requests the server got.
func (b *BigWords) Requests() int64 { return b.requests.Load() }

// Close stops the server and ends its handlers.
func (b *BigWords) Close() {
	b.srv.CloseClientConnections()
	b.srv.Close()
}

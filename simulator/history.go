package simulator

import (
	"hash/maphash"
	"sync"
)

// replies remembers the texts the server generated, so that a chat
// request's assistant turns can be checked against them: a multi-turn
// client must send back the replies it really got (Config.CheckHistory).
// It keeps the newest historySize hashes.
type replies struct {
	mu   sync.Mutex
	seed maphash.Seed
	set  map[uint64]struct{}
	ring []uint64
	next int
}

const historySize = 1 << 16

func newReplies() *replies {
	return &replies{seed: maphash.MakeSeed(), set: make(map[uint64]struct{}, historySize), ring: make([]uint64, 0, historySize)}
}

func (r *replies) add(text []byte) {
	h := maphash.Bytes(r.seed, text)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.set[h]; ok {
		return
	}
	if len(r.ring) < historySize {
		r.ring = append(r.ring, h)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = h
		r.next = (r.next + 1) % historySize
	}
	r.set[h] = struct{}{}
}

func (r *replies) has(text string) bool {
	h := maphash.String(r.seed, text)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.set[h]
	return ok
}

// checkHistory refuses a history whose assistant turns this server did not
// generate, naming the first such turn.
func (s *Server) checkHistory(roles, contents []string) *apiError {
	if s.replies == nil {
		return nil
	}
	for i, role := range roles {
		if role == "assistant" && !s.replies.has(contents[i]) {
			return badRequest("messages[%d]: this assistant turn is not a reply this server generated (--sim.check-history)", i)
		}
	}
	return nil
}

// remember records a finished generation's text, when histories are
// checked.
func (s *Server) remember(g *gen) {
	if s.replies != nil && g.emitted == g.n {
		s.replies.add(g.text)
	}
}

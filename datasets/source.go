package datasets

import (
	"iter"
	"math/rand/v2"
	"strconv"
)

// Source is a run's prompts: held in memory, or made while the run sends
// them, so that a run of a million prompts starts at once and keeps only
// the prompts about to be sent. Both kinds give the same prompts, in the
// same order, for the same seed.
type Source struct {
	n, requests int
	in, out     int
	first       Prompt
	prompts     []Prompt // in memory; nil when made on demand
	// pass makes the prompts again from the start, for one pass of All.
	pass func(yield func(Prompt, error) bool)
}

// FromPrompts is a Source of prompts already made.
func FromPrompts(ps []Prompt) *Source {
	s := &Source{n: len(ps), prompts: ps}
	for _, p := range ps {
		s.requests += p.Rounds()
		in, out := p.Totals()
		s.in += in
		s.out += out
	}
	if len(ps) > 0 {
		s.first = ps[0]
	}
	return s
}

// OnDemand is a Source of n prompts of one request each whose totals and
// first prompt are known, and that pass makes, in order, on every pass of
// All.
func OnDemand(n, in, out int, first Prompt, pass iter.Seq2[Prompt, error]) *Source {
	return &Source{n: n, requests: n, in: in, out: out, first: first, pass: pass}
}

// Len is the number of prompts.
func (s *Source) Len() int { return s.n }

// Requests is the number of requests the prompts make: their rounds (see
// Prompt.Rounds).
func (s *Source) Requests() int { return s.requests }

// Totals are the prompts' PromptLen and OutputLen summed.
func (s *Source) Totals() (in, out int) { return s.in, s.out }

// First is the first prompt (the one warm-up requests copy).
func (s *Source) First() Prompt { return s.first }

// Prompts returns the prompts when they are held in memory, else nil.
func (s *Source) Prompts() []Prompt { return s.prompts }

// OnDemand says the prompts are made while the run sends them.
func (s *Source) OnDemand() bool { return s.prompts == nil && s.pass != nil }

// All yields the prompts in order, each with the error that stopped making
// it (then it is the last). Prompts made on demand are made again on every
// pass, a few ahead of the consumer on another goroutine: stopping early
// stops that goroutine.
func (s *Source) All() iter.Seq2[Prompt, error] {
	if !s.OnDemand() {
		return func(yield func(Prompt, error) bool) {
			for _, p := range s.prompts {
				if !yield(p, nil) {
					return
				}
			}
		}
	}
	return func(yield func(Prompt, error) bool) {
		type made struct {
			p   Prompt
			err error
		}
		ch := make(chan made, lookahead)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer close(ch)
			for p, err := range s.pass {
				select {
				case ch <- made{p, err}:
				case <-stop:
					return
				}
				if err != nil {
					return
				}
			}
		}()
		defer func() {
			close(stop)
			<-done
		}()
		for m := range ch {
			if !yield(m.p, m.err) || m.err != nil {
				return
			}
		}
	}
}

// lookahead is how many prompts made on demand wait ready for the run: a
// burst of that many goes out without waiting on the generator, and memory
// holds no more. (The random datasets make the first prompts, all of a
// small run, before the run starts: see lengthStream.)
const lookahead = 256

// Streamer is a Dataset that can make its prompts while they are sent.
type Streamer interface {
	Dataset
	// Stream returns a Source of the prompts Generate(n, newRand()) would
	// return, and false when it cannot make them on demand (then the
	// caller generates them). newRand is called once per pass and must
	// return the same generator each time.
	Stream(n int, newRand func() *rand.Rand) (*Source, bool, error)
}

// WithRequestIDs returns a Source of the same prompts, prompt i carrying
// the request id prefix+i, as vLLM's datasets number their requests for
// --request-id-prefix. Prompts made on demand are numbered as they are
// made, so that no more of them is held than before.
func (s *Source) WithRequestIDs(prefix string) *Source {
	id := func(i int, p Prompt) Prompt {
		p.RequestID = prefix + strconv.Itoa(i)
		return p
	}
	out := *s
	out.first = id(0, s.first)
	if s.prompts != nil {
		out.prompts = make([]Prompt, len(s.prompts))
		for i, p := range s.prompts {
			out.prompts[i] = id(i, p)
		}
	}
	if s.pass != nil {
		pass := s.pass
		out.pass = func(yield func(Prompt, error) bool) {
			i := 0
			for p, err := range pass {
				if !yield(id(i, p), err) {
					return
				}
				i++
			}
		}
	}
	return &out
}

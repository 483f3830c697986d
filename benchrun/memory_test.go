package benchrun

import (
	"math"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestMemoryBytesSaturates: the in-flight estimate of a huge concurrency
// of large audio requests saturates instead of wrapping around to a small
// number that a bench window's 1 GiB bound would let through.
func TestMemoryBytesSaturates(t *testing.T) {
	s := Spec{Dataset: "audio", Options: datasets.DefaultOptions()}
	s.Options.AudioCount, s.Options.AudioDuration = datasets.MaxAudioCount, 3600
	per := datasets.ImageBytes("audio", s.Options)
	if per == 0 {
		t.Fatal("no in-flight estimate for the audio dataset")
	}
	s.MaxConcurrency = 1
	if _, f := s.MemoryBytes(); f != per {
		t.Errorf("one in flight: %d bytes, want %d", f, per)
	}
	s.MaxConcurrency = math.MaxInt32
	if _, f := s.MemoryBytes(); f != math.MaxUint64 {
		t.Errorf("%d in flight of %d bytes each: %d bytes, want the estimate saturated at %d", s.MaxConcurrency, per, f, uint64(math.MaxUint64))
	}
}

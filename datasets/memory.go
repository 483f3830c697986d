package datasets

import (
	"fmt"
	"unsafe"
)

// Every dataset builds all of its prompts before the first request is
// sent (the image dataset all but their images, which each request makes
// for itself: see LazyImages), so a prompt count far beyond the machine's
// memory would end in the runtime's fatal "out of memory" (which no
// recover can catch) instead of an error. CheckCount refuses such a count
// up front; ImageBytes bounds what each request in flight adds.

// bytesPerToken is a generous size of one prompt token as text (English
// averages about 4 bytes a token; the random datasets' decoded ids more).
const bytesPerToken = 6

// EstimateBytes is about how much memory n prompts of the dataset take
// while they are kept: the Prompt values and their text. An image
// prompt's images are not kept (they are made per request), so they are
// not counted here but in ImageBytes.
func EstimateBytes(dataset string, n int, o Options) uint64 {
	tokens := 0
	switch dataset {
	case "random", "random-ids", "image":
		tokens = o.RandomInputLen
	case "generated-shared-prefix":
		tokens = o.GSPSystemPromptLen + o.GSPQuestionLen*max(o.GSPNumTurns, 1)
	default:
		tokens = 512 // file datasets: their rows are read anyway
	}
	per := uint64(unsafe.Sizeof(Prompt{})) + uint64(max(tokens, 0))*bytesPerToken
	return uint64(max(n, 0)) * per
}

// CheckCount returns an error naming --num-prompts when n prompts of the
// dataset would need more than half of the machine's physical memory.
func CheckCount(dataset string, n int, o Options) error {
	total := physicalMemory()
	if total == 0 {
		return nil // unknown: let the run try
	}
	if need := EstimateBytes(dataset, n, o); need > total/2 {
		return fmt.Errorf("--num-prompts %d: the prompts would need about %s, more than half of this machine's %s of memory (every prompt is prepared before the run starts)",
			n, humanBytes(need), humanBytes(total))
	}
	return nil
}

func humanBytes(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := uint64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}

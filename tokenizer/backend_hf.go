//go:build hftokenizers

package tokenizer

import (
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/tokenizer/hftokenizers"
)

func init() {
	hfLoad = func(path string) (datasets.Tokenizer, error) { return hftokenizers.Load(path) }
}

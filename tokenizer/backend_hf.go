//go:build hftokenizers

package tokenizer

import (
	"github.com/servingprobe/servingprobe/tokenizer/hftokenizers"
)

func init() {
	hfLoad = func(path string) (Any, error) { return hftokenizers.Load(path) }
}

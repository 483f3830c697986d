//go:build linux

package datasets

import (
	"strings"
	"testing"
)

func TestCheckCount(t *testing.T) {
	o := DefaultOptions()
	o.RandomInputLen = 1024
	if physicalMemory() == 0 {
		t.Fatal("physicalMemory() = 0 on Linux")
	}
	if err := CheckCount("random", 1000, o); err != nil {
		t.Errorf("1000 prompts refused: %v", err)
	}
	err := CheckCount("random", 1_000_000_000, o)
	if err == nil || !strings.Contains(err.Error(), "--num-prompts 1000000000") {
		t.Errorf("CheckCount(1e9) = %v, want an error naming --num-prompts", err)
	}
	if a, b := EstimateBytes("random", 10, o), EstimateBytes("random", 20, o); b != 2*a || a == 0 {
		t.Errorf("EstimateBytes not proportional to the count: %d, %d", a, b)
	}
}

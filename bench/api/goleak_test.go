package api

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is still running
// after they finish.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

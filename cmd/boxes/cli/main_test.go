package cli

import (
	"os"
	"testing"

	"github.com/hermes-box/boxes/internal/testhost"
)

// TestMain removes, after every test, the data-root templates the extra
// engines' images were copied from (testhost.RemoveTemplates) and the
// binary the tests built (builtDir).
func TestMain(m *testing.M) {
	code := m.Run()
	testhost.RemoveTemplates()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

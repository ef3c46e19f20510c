package cli

import (
	"os"
	"testing"

	"github.com/hermes-box/boxes/internal/testhost"
)

// TestMain removes, after every test, the data-root templates the extra
// engines' images were copied from (testhost.RemoveTemplates) and the
// programs the tests built (testBinDir).
func TestMain(m *testing.M) {
	code := m.Run()
	testhost.RemoveTemplates()
	if dir, ok := testBinDirs.Load().(string); ok {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

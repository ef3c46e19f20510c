package cli

import (
	"os"
	"testing"

	"github.com/hermes-box/boxes/internal/testhost"
)

// TestMain removes, after every test, the data-root templates the extra
// engines' images were copied from (testhost.RemoveTemplates).
func TestMain(m *testing.M) {
	code := m.Run()
	testhost.RemoveTemplates()
	os.Exit(code)
}

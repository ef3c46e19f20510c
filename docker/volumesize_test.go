package docker

import (
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/hermes-box/boxes/image"
)

func TestParseHealthSize(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	entry := func(out string) *container.HealthcheckResult { return &container.HealthcheckResult{Output: out} }
	for _, c := range []struct {
		name  string
		log   []*container.HealthcheckResult
		bytes int64
		ok    bool
	}{
		{"newest entry wins", []*container.HealthcheckResult{entry("hb-size: 1 1799999990\n"), entry("hb-size: 2048 1799999990\n")}, 2048 << 10, true},
		{"among other lines", []*container.HealthcheckResult{entry("hb: warning: x\nhb-size: 4 1799999500\n")}, 4 << 10, true},
		{"a failed check without size", []*container.HealthcheckResult{entry("hb-size: 8 1799999990\n"), entry("hb: error: hb init has not finished\n")}, 8 << 10, true},
		{"too old", []*container.HealthcheckResult{entry("hb-size: 4 1799000000\n")}, 0, false},
		{"garbled", []*container.HealthcheckResult{entry("hb-size: four 1799999990\n")}, 0, false},
		{"none yet", nil, 0, false},
	} {
		got, ok := parseHealthSize(c.log, now)
		if ok != c.ok || got.Bytes != c.bytes {
			t.Errorf("%s: %+v %v, want %d %v", c.name, got, ok, c.bytes, c.ok)
		}
	}
}

// hb health prints the line parseHealthSize reads.
func TestGuestHealthPrintsTheSize(t *testing.T) {
	src, err := fs.ReadFile(image.Recipe, "guest/hb")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "printf '"+healthSizePrefix+"%s %s\\n' \"$kib\" \"$at\"") {
		t.Errorf("guest/hb does not print %q lines", healthSizePrefix)
	}
}

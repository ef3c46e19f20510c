package backup

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
)

// DataSize is the apparent size in bytes of /data in running container id,
// each file counted once: at least the total of its regular files. It gives
// up after DataSizeTimeout: a save without the measure still runs, its
// archive records no size bound.
func DataSize(ctx context.Context, e engine.Inside, id string) (int64, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, DataSizeTimeout, fmt.Errorf("du took over %s", DataSizeTimeout))
	defer cancel()
	var out, errb strings.Builder
	code, err := e.Run(ctx, id, "root", []string{"du", "-sbx", hb.Data}, &out, &errb)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(out.String())
	if len(f) == 0 {
		return 0, fmt.Errorf("du exited %d: %s", code, strings.TrimSpace(errb.String()))
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("du: %q: %w", f[0], err)
	}
	return n, nil
}

// DataSizeTimeout bounds DataSize: du walks a million files in seconds,
// and an engine that missed the end of its exec (seen with 20.10 under
// load) would otherwise hold the save for ever.
var DataSizeTimeout = 2 * time.Minute

package docker

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
)

// VolumeSizes measures each volume with du, run as root in a running
// container of the snapshot that mounts it (engine.SizeVolumes). The
// engine's disk-usage call would size every image layer and container on
// the engine (seconds to minutes), and API 1.41 engines ignore its
// per-type filter; this costs one exec per volume, in parallel. Where du
// fails or takes longer than engine.SizeTimeout (a huge volume), the size
// hb's healthcheck last reported stands in (see healthSize).
func (e *Engine) VolumeSizes(ctx context.Context, o *engine.Observed, volumes []string) map[string]engine.VolumeSize {
	return engine.SizeVolumes(ctx, e, o, volumes, func(ctx context.Context, id, dir string) (engine.VolumeSize, bool) {
		if dir != hb.Data {
			return engine.VolumeSize{}, false
		}
		return e.healthSize(ctx, id)
	})
}

// healthSizeAge is how old a size in the healthcheck's log may be: hb
// measures again every five minutes.
const healthSizeAge = 15 * time.Minute

// healthSize is the size of /data that hb health last printed in container
// id ("hb-size: KIB EPOCH"), if it printed one lately.
func (e *Engine) healthSize(ctx context.Context, id string) (engine.VolumeSize, bool) {
	info, err := e.api.ContainerInspect(ctx, id)
	if err != nil || info.State == nil || info.State.Health == nil {
		return engine.VolumeSize{}, false
	}
	return parseHealthSize(info.State.Health.Log, time.Now())
}

func parseHealthSize(log []*container.HealthcheckResult, now time.Time) (engine.VolumeSize, bool) {
	for i := len(log) - 1; i >= 0; i-- {
		if log[i] == nil {
			continue
		}
		for _, line := range strings.Split(log[i].Output, "\n") {
			f := strings.Fields(strings.TrimPrefix(line, healthSizePrefix))
			if !strings.HasPrefix(line, healthSizePrefix) || len(f) != 2 {
				continue
			}
			kib, err1 := strconv.ParseInt(f[0], 10, 64)
			at, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 != nil || err2 != nil || kib < 0 || now.Sub(time.Unix(at, 0)) > healthSizeAge {
				return engine.VolumeSize{}, false
			}
			return engine.VolumeSize{Bytes: kib * 1024}, true
		}
	}
	return engine.VolumeSize{}, false
}

// healthSizePrefix starts the line of hb health that carries the size.
const healthSizePrefix = "hb-size: "

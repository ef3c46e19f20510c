package docker

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"golang.org/x/sync/errgroup"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
)

// sizeTimeout bounds how long a plan waits for the sizes of the volumes it
// deletes: the plan says "size not read" rather than hang on a huge volume.
const sizeTimeout = 5 * time.Second

// VolumeSizes measures each volume with du, run as root in a running
// container of the snapshot that mounts it. The engine's disk-usage call
// would size every image layer and container on the engine (seconds to
// minutes), and API 1.41 engines ignore its per-type filter; this costs one
// exec per volume, in parallel. Where du fails or takes longer than
// sizeTimeout (a huge volume), the size hb's healthcheck last reported
// stands in (see healthSize). A volume no running container mounts (a
// stopped box) is reported unread, with the reason.
func (e *Engine) VolumeSizes(ctx context.Context, o *engine.Observed, volumes []string) map[string]engine.VolumeSize {
	ctx, cancel := context.WithTimeout(ctx, sizeTimeout)
	defer cancel()
	type where struct{ id, dir string }
	mounted := map[string]where{}
	stopped := map[string]bool{}
	for _, c := range o.Containers {
		for _, m := range c.Mounts {
			if c.State == engine.Running {
				mounted[m.Volume] = where{c.ID, m.Destination}
			} else {
				stopped[m.Volume] = true
			}
		}
	}
	out := make(map[string]engine.VolumeSize, len(volumes))
	results := make([]engine.VolumeSize, len(volumes))
	g := errgroup.Group{}
	g.SetLimit(8)
	for i, v := range volumes {
		at, ok := mounted[v]
		switch {
		case ok:
			g.Go(func() error {
				var reported engine.VolumeSize
				ok := false
				if at.dir == hb.Data {
					reported, ok = e.healthSize(ctx, at.id)
				}
				results[i] = e.du(ctx, at.id, at.dir)
				if results[i].Unread != "" && ok {
					results[i] = reported
				}
				return nil
			})
		case stopped[v]:
			results[i] = engine.VolumeSize{Unread: "the box is not running"}
		default:
			results[i] = engine.VolumeSize{Unread: "no container mounts it"}
		}
	}
	_ = g.Wait() // each result carries its own failure
	for i, v := range volumes {
		out[v] = results[i]
	}
	return out
}

// du is the disk usage of dir in container id, in bytes.
func (e *Engine) du(ctx context.Context, id, dir string) engine.VolumeSize {
	var stdout, stderr bytes.Buffer
	// -x stays on the volume; -k is the one unit every du prints.
	code, err := e.Exec(ctx, id, engine.ExecOptions{Cmd: []string{"du", "-sxk", dir}, User: "0", Stdout: &stdout, Stderr: &stderr})
	if ctx.Err() != nil {
		return engine.VolumeSize{Unread: fmt.Sprintf("du took longer than %s", sizeTimeout)}
	}
	if err != nil {
		return engine.VolumeSize{Unread: err.Error()}
	}
	// du exits 1 when it cannot read a file, and still prints the total.
	fields := strings.Fields(stdout.String())
	if len(fields) > 0 {
		if kib, perr := strconv.ParseInt(fields[0], 10, 64); perr == nil {
			return engine.VolumeSize{Bytes: kib * 1024}
		}
	}
	msg := strings.TrimSpace(stderr.String())
	if msg == "" {
		msg = fmt.Sprintf("du exited %d", code)
	}
	return engine.VolumeSize{Unread: msg}
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

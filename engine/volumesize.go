package engine

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// SizeTimeout bounds how long a plan waits for the sizes of the volumes it
// deletes: the plan says "size not read" rather than hang on a huge volume.
const SizeTimeout = 5 * time.Second

// SizeVolumes measures each of volumes with du, run as root through r in
// a running container of o that mounts it: one command per volume, at most
// eight at once, within SizeTimeout. Where du fails or runs out of time,
// stand (when not nil) may give a size known otherwise for that container
// and mount point. A volume no running container mounts (a stopped box) is
// reported unread, with the reason. Any engine that runs commands in its
// containers sizes its volumes so.
func SizeVolumes(ctx context.Context, r Runner, o *Observed, volumes []string, stand func(ctx context.Context, id, dir string) (VolumeSize, bool)) map[string]VolumeSize {
	ctx, cancel := context.WithTimeout(ctx, SizeTimeout)
	defer cancel()
	type where struct{ id, dir string }
	mounted := map[string]where{}
	stopped := map[string]bool{}
	for _, c := range o.Containers {
		for _, m := range c.Mounts {
			if c.State == Running {
				mounted[m.Volume] = where{c.ID, m.Destination}
			} else {
				stopped[m.Volume] = true
			}
		}
	}
	results := make([]VolumeSize, len(volumes))
	g := errgroup.Group{}
	g.SetLimit(8)
	for i, v := range volumes {
		at, ok := mounted[v]
		switch {
		case ok:
			g.Go(func() error {
				// Asked first: once du has run out of time, so has ctx.
				var known VolumeSize
				ok := false
				if stand != nil {
					known, ok = stand(ctx, at.id, at.dir)
				}
				results[i] = du(ctx, r, at.id, at.dir)
				if results[i].Unread != "" && ok {
					results[i] = known
				}
				return nil
			})
		case stopped[v]:
			results[i] = VolumeSize{Unread: "the box is not running"}
		default:
			results[i] = VolumeSize{Unread: "no container mounts it"}
		}
	}
	_ = g.Wait() // each result carries its own failure
	out := make(map[string]VolumeSize, len(volumes))
	for i, v := range volumes {
		out[v] = results[i]
	}
	return out
}

// du is the disk usage of dir in container id, in bytes.
func du(ctx context.Context, r Runner, id, dir string) VolumeSize {
	var stdout, stderr bytes.Buffer
	// -x stays on the volume; -k is the one unit every du prints.
	code, err := r.Run(ctx, id, "0", []string{"du", "-sxk", dir}, &stdout, &stderr)
	if ctx.Err() != nil {
		return VolumeSize{Unread: fmt.Sprintf("du took longer than %s", SizeTimeout)}
	}
	if err != nil {
		return VolumeSize{Unread: err.Error()}
	}
	// du exits 1 when it cannot read a file, and still prints the total.
	fields := strings.Fields(stdout.String())
	if len(fields) > 0 {
		if kib, perr := strconv.ParseInt(fields[0], 10, 64); perr == nil {
			return VolumeSize{Bytes: kib * 1024}
		}
	}
	msg := strings.TrimSpace(stderr.String())
	if msg == "" {
		msg = fmt.Sprintf("du exited %d", code)
	}
	return VolumeSize{Unread: msg}
}

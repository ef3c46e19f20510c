package backup

import (
	"context"
	"fmt"
	"sync"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/statedir"
)

// Freeze is one quiesce of a running box so that its /data can be read as
// of one instant: save's, and a snapshot's.
type Freeze struct {
	Box string
	// Agent is the box's running agent container.
	Agent string
	// Config is boxes.yaml's path, beside which the freeze is recorded
	// (statedir.Freezes.Hold) so that the next command thaws a box that a
	// killed boxes left frozen, and Host the box's host. With no Config
	// nothing is recorded.
	Config, Host string
	// Init bounds the wait for a new box's hb init before quiescing.
	Init hb.Wait
	// Healthy says the agent's healthcheck, which is hb health agent, had
	// passed when the box was observed just before: hb init is done, and
	// asking again would cost an exec. A container restarted since is no
	// longer healthy, so only the moment between that look and the quiesce
	// is taken on trust.
	Healthy bool
	// Alongside, when set, runs from the start, beside the wait for hb
	// init, and is waited for before the box is paused, or before Hold
	// returns an error.
	Alongside func(ctx context.Context)
	// Step reports progress; Warn a thaw that failed.
	Step func(msg string)
	Warn func(format string, args ...any)
}

// Frozen is a box Freeze froze. Thaw must be called whatever happens; it
// may be started early with StartThaw.
type Frozen struct {
	once  sync.Once
	done  chan struct{}
	start func()
}

// StartThaw starts thawing the box, once, without waiting for it.
func (f *Frozen) StartThaw() { f.once.Do(f.start) }

// Thaw thaws the box, if StartThaw has not already, and returns once it is
// thawed (or the thaw failed, which was reported to Warn).
func (f *Frozen) Thaw() {
	f.StartThaw()
	<-f.done
}

// Hold waits for hb init, records the freeze and pauses the box with the
// engine's pause, which freezes every process of the box at one instant,
// root's included: the data read meanwhile, through the same kernel's page
// cache, is /data as of that instant, as a crash would leave it. (hb
// quiesce, which stops the box's users' processes and syncs /data to disk,
// adds nothing to that and cost two execs; a box an older boxes quiesced is
// resumed by Thaw.) The thaw (unpause) runs on a context that a cancel
// (Ctrl-C) does not end. On error the box is thawed before Hold returns;
// on success the caller calls Thaw.
//
// An engine that cannot freeze (engine.Capabilities) has the box quiesced
// instead: hb quiesce stops its users' processes and syncs /data, and hb
// resume is the thaw. Root's processes keep running then, which a freeze
// would have held too.
func (z Freeze) Hold(ctx context.Context, e engine.Inside) (*Frozen, error) {
	if z.Step == nil {
		z.Step = func(string) {}
	}
	if z.Warn == nil {
		z.Warn = func(string, ...any) {}
	}
	id := z.Agent
	alongside := make(chan struct{})
	go func() {
		defer close(alongside)
		if z.Alongside != nil {
			z.Alongside(ctx)
		}
	}()
	// hb init must not find the marker half-way through.
	if !z.Healthy {
		if err := hb.WaitInit(ctx, e, z.Box, id, z.Init); err != nil {
			<-alongside
			return nil, err
		}
	}
	var held *statedir.HeldFreeze
	if z.Config != "" {
		var err error
		if held, err = statedir.Beside(z.Config).Freezes().Hold(statedir.Freeze{Box: z.Box, Host: z.Host, Container: id}); err != nil {
			<-alongside
			return nil, fmt.Errorf("recording the freeze of %s: %w", z.Box, err)
		}
	}
	f := &Frozen{done: make(chan struct{})}
	f.start = func() {
		go func() {
			defer close(f.done)
			if err := release(context.WithoutCancel(ctx), e, id); err != nil {
				held.Keep()
				z.Warn("resuming %s failed: %v; the next boxes command on it (or boxes apply) tries again", z.Box, err)
				return
			}
			if err := held.Release(); err != nil {
				z.Warn("%v", err)
			}
		}()
	}
	fail := func(err error) (*Frozen, error) {
		f.Thaw()
		return nil, err
	}
	<-alongside
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	// The pause runs to its end, a cancel notwithstanding: a pause the
	// engine still carries out after the thaw would leave the box frozen.
	whole := context.WithoutCancel(ctx)
	if !e.Capabilities().Freeze {
		z.Step("quiescing")
		if err := hb.Quiesce(whole, e, id); err != nil {
			return fail(fmt.Errorf("quiescing %s: %w", z.Box, err))
		}
	} else {
		z.Step("pausing")
		if err := e.Pause(whole, id); err != nil {
			return fail(fmt.Errorf("pausing %s: %w", z.Box, err))
		}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	return f, nil
}

// release ends what Hold did to container id: the engine's pause, or hb's
// quiesce on an engine that cannot freeze.
func release(ctx context.Context, e engine.Inside, id string) error {
	if !e.Capabilities().Freeze {
		return hb.Resume(ctx, e, id)
	}
	return e.Unpause(ctx, id)
}

package fakeengine

import (
	"fmt"

	"github.com/hermes-box/boxes/engine"
)

// Edit runs fn on the state c holds, loaded first if need be, and saves it:
// a change made behind the back of the engines c connected (someone else's
// docker stop), which they see at once.
func (c *Connector) Edit(fn func(*State) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.load(); err != nil {
		return err
	}
	err := fn(c.state)
	if serr := c.save(); serr != nil && err == nil {
		err = serr
	}
	return err
}

// Gone makes host's engine unreachable through c, as a connection to an
// engine that is lost (the engine stopped, the network or ssh cut): every
// call made through c from now on fails with an error matching
// engine.ErrUnreachable, and so does one under way that waits on the engine
// (an exec of cat reading its input). Nothing is saved: another connector
// of the same state still reaches the host.
func (c *Connector) Gone(host string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.goneSignal(host)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// goneSignal is closed once host is gone through c; c.mu is held.
func (c *Connector) goneSignal(host string) chan struct{} {
	if c.gone == nil {
		c.gone = map[string]chan struct{}{}
	}
	ch, ok := c.gone[host]
	if !ok {
		ch = make(chan struct{})
		c.gone[host] = ch
	}
	return ch
}

// isGone reports whether host is gone through c; c.mu is held.
func (c *Connector) isGone(host string) bool {
	select {
	case <-c.goneSignal(host):
		return true
	default:
		return false
	}
}

// unreachable is the error of a call to the engine once it is gone.
func (e *Engine) unreachable() error {
	return fmt.Errorf("%s stopped answering: %w", e.describe(), engine.ErrUnreachable)
}

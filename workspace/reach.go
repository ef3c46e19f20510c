package workspace

import "github.com/hermes-box/boxes/engine"

// How a person on this machine reaches a port an engine publishes
// (engine.Reach).
const (
	ReachDirect     = engine.ReachDirect
	ReachSSHForward = engine.ReachSSHForward
	ReachHostOnly   = engine.ReachHostOnly
)

// Reach is how a person on this machine reaches a published port.
type Reach = engine.Reach

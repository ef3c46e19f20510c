package docker

import (
	"context"
	"net/netip"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// A Docker engine is what a workspace needs of a host, and observes a
// pool alone.
var (
	_ engine.Engine       = (*Engine)(nil)
	_ engine.PoolObserver = (*Engine)(nil)
)

// Connector reaches the hosts of a workspace as Docker engines, with Options.
type Connector struct{ Options Options }

// Connect connects host's Docker engine.
func (c Connector) Connect(ctx context.Context, h spec.Host) (engine.Engine, error) {
	e, err := Connect(ctx, h, c.Options)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// MachineAddresses are the addresses of the machine host h's engine runs
// on, found from its address alone (see Endpoint.MachineAddresses): the
// engine need not answer.
func (c Connector) MachineAddresses(h spec.Host) ([]netip.Addr, error) {
	ep, err := Resolve(h)
	if err != nil {
		return nil, err
	}
	return ep.MachineAddresses(), nil
}

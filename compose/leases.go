package compose

import (
	"time"

	"github.com/hermes-box/boxes/engine"
)

// LeaseLabels are the labels of lease mark m, on any engine: a marker
// container's on Docker, a ConfigMap's on a cluster.
func LeaseLabels(m engine.LeaseMark) map[string]string {
	labels := map[string]string{
		LeaseLabel: m.Kind, LeaseBoxLabel: m.Box, FleetLabel: m.Fleet, PoolLabel: m.Pool,
		LeaseHolderLabel: m.Holder, LeaseIDLabel: m.Lease, LeaseByLabel: m.By,
	}
	if !m.Expires.IsZero() {
		labels[LeaseExpiresLabel] = m.Expires.UTC().Format(time.RFC3339Nano)
	}
	if !m.Started.IsZero() {
		labels[LeaseStartedLabel] = m.Started.UTC().Format(time.RFC3339Nano)
	}
	return labels
}

// LeaseMarkOf reads lease mark id, named name, from its labels.
func LeaseMarkOf(id, name string, labels map[string]string) engine.LeaseMark {
	expires, _ := time.Parse(time.RFC3339Nano, labels[LeaseExpiresLabel])
	started, _ := time.Parse(time.RFC3339Nano, labels[LeaseStartedLabel])
	return engine.LeaseMark{
		ID: id, Name: name, Kind: labels[LeaseLabel],
		Box: labels[LeaseBoxLabel], Fleet: labels[FleetLabel], Pool: labels[PoolLabel],
		Holder: labels[LeaseHolderLabel], Lease: labels[LeaseIDLabel],
		Expires: expires, Started: started, By: labels[LeaseByLabel],
	}
}

package engine

// State is a container's state as boxes reads it, whatever the engine: an
// engine maps its own states onto these, and no workflow reads an engine's
// own words for them. The values are the words plans and --json print.
type State string

const (
	// Created is made and never started.
	Created State = "created"
	// Running runs (its healthcheck aside: see Health).
	Running State = "running"
	// Paused is frozen: its processes exist but do not run.
	Paused State = "paused"
	// Restarting is between two starts of its restart policy: it exited,
	// and the engine starts it again.
	Restarting State = "restarting"
	// Exited ran and ended, by itself or stopped (ExitCode tells which).
	Exited State = "exited"
	// Removing is being removed.
	Removing State = "removing"
	// Dead could not be removed or stopped cleanly; it is only removed.
	Dead State = "dead"
)

// Alive reports whether a container in state s has processes: it runs,
// is frozen, or is between two starts.
func (s State) Alive() bool { return s == Running || s == Restarting || s == Paused }

// Health is what a running container's healthcheck last said.
type Health string

const (
	// NoHealth: the container has no healthcheck, does not run, or the
	// engine did not say.
	NoHealth Health = ""
	// HealthStarting: its healthcheck has not passed yet.
	HealthStarting Health = "starting"
	// Healthy: its healthcheck passed last time.
	Healthy Health = "healthy"
	// Unhealthy: its healthcheck failed its retries.
	Unhealthy Health = "unhealthy"
)

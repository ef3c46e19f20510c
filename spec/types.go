// Package spec reads and validates the files the user owns: boxes.yaml and
// boxes.lock. It never talks to Docker.
package spec

import "fmt"

// State is the declared run state of a box.
type State string

const (
	Running State = "running"
	Stopped State = "stopped"
)

// Config is a parsed, validated boxes.yaml with defaults applied to every box.
type Config struct {
	// Path is the file the config was read from; the lock and .boxes/ live beside it.
	Path    string
	Version int
	// Fleet names this file's boxes on every engine (label boxes.fleet).
	Fleet string
	// FleetImplied is true when boxes.yaml has no fleet: and Fleet is the
	// directory's name; commands warn about it.
	FleetImplied bool
	Defaults     Settings
	// Boxes are sorted by name.
	Boxes []Box
	// Hosts maps a host name to the engine that serves it. The implicit host
	// "" (local) is the engine of the environment (DOCKER_HOST or the default socket).
	Hosts map[string]Host
	// Recipients are age recipients for archives (save); empty means passphrase.
	Recipients []string
}

// Settings are the per-box knobs that defaults: can fill.
type Settings struct {
	CPUs     float64 // 0 means unlimited
	Memory   int64   // bytes; 0 means unlimited
	Executor Executor
	Runtime  string // "" (engine default) or e.g. "runsc"
	Env      map[string]string
}

// Executor says where a box's Executor port is published on its host.
type Executor struct {
	Bind string // IP address; default 127.0.0.1
	Port int    // fixed host port, or 0 for auto-assigned
}

// Box is one declared box, fully resolved (defaults applied).
type Box struct {
	Name  string
	Fleet string // the fleet of the file that declares it
	Host  string // "" is the local engine
	State State
	Settings
	// Restore is an archive path (relative to the config's directory) that seeds the box at create.
	Restore string
	// Line is where the box is declared in boxes.yaml, for messages.
	Line int
	// CPUsAt, MemoryAt and RuntimeAt are where the box's cpus:, memory:
	// and runtime: are written (its own, or the defaults' it inherits),
	// for a plan's messages; zero when not written.
	CPUsAt, MemoryAt, RuntimeAt Pos
}

// Pos is a place in a file, as messages name it: boxes.yaml:7:11.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Host is one Docker engine named under hosts:.
type Host struct {
	Name    string
	Docker  string // any DOCKER_HOST form
	Context string // a docker context name
	// TLS is the directory with ca.pem, cert.pem and key.pem for a tcp://
	// engine, absolute or made relative to boxes.yaml's directory.
	TLS string
}

// Box returns the declared box with that name.
func (c *Config) Box(name string) (Box, bool) {
	for _, b := range c.Boxes {
		if b.Name == name {
			return b, true
		}
	}
	return Box{}, false
}

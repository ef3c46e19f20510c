package docker

import (
	"strings"

	"github.com/hermes-box/boxes/internal/hint"
)

// What gVisor's runsc says when it cannot run a box on its machine, as
// seen with Debian 12's runsc (gVisor release 2022-12-19) on Linux 6.18.
// The engine passes these on as they are; boxes adds what they mean.
const (
	// Its own network stack refuses every container: it takes a network
	// namespace for the host's when /proc/sys/net/core/rmem_default is
	// visible in it, which kernels from about 6.11 show in every namespace.
	runscRootNetNS = "cannot run with network enabled in root network namespace"
	// Its statx refuses AT_NO_AUTOMOUNT, which coreutils 9 passes on every
	// call: ls -l and stat fail with "Invalid argument", hb's checks too.
	statxRefused = "cannot statx"
	// Its sandbox process died before it said it had started. A runsc
	// built with cgo does so at every start: it re-executes itself through
	// /proc/self/exe after its pivot_root into a root that holds no dynamic
	// loader, and the execve fails ("error executing umounter: fork/exec
	// /proc/self/exe: no such file or directory", in runsc's own log only).
	sandboxDied = "cannot create sandbox: cannot read client sync file: waiting for sandbox to start: EOF"
)

// explainRuntime adds a hint to an engine's error that a runtime which
// cannot run a box on that machine gave; other errors are returned as
// they are.
func explainRuntime(err error) error {
	if err != nil && strings.Contains(err.Error(), runscRootNetNS) {
		return hint.Wrap(err, "this runsc takes every network namespace for the host's on that machine's kernel (gVisor issue 10704; Debian 12's runsc has it): install a newer runsc there, or leave runtime: out of the box")
	}
	if err != nil && strings.Contains(err.Error(), sandboxDied) {
		return hint.Wrap(err, "runsc's sandbox died as it started; a runsc built with cgo always does (build it with CGO_ENABLED=0); --debug --debug-log=DIR in the runtime's runtimeArgs has runsc say why")
	}
	return err
}

// refusesStatx reports whether a command's error output says the runtime
// refused coreutils' statx calls: no wait makes that pass.
func refusesStatx(stderr string) bool {
	return strings.Contains(stderr, statxRefused) && strings.Contains(stderr, "Invalid argument")
}

// statxHint is what to do about a runtime that refuses coreutils' statx.
const statxHint = "the box's runtime refuses the statx calls of the image's coreutils (ls -l and stat fail with Invalid argument; Debian 12's runsc, gVisor 2022-12-19, does): run the box under a newer runsc, or leave runtime: out of it"

// explainDown adds the statx hint to a container's failure whose last
// log lines show the runtime refusing coreutils' statx: the box's own
// start (hb init, as the container's first process) may meet it before
// any check is run in the container, and then the container stops.
func explainDown(err error) error {
	if refusesStatx(err.Error()) {
		return hint.Wrap(err, statxHint)
	}
	return err
}

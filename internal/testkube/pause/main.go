// Command pause is the sandbox ("pause") container of the test cluster's
// pods: scripts/kube/build.sh builds it static and packs it as the image the
// cluster's containerd starts first in every pod, so that the cluster needs
// no registry. It holds the pod's namespaces open until it is told to stop,
// and, being the pod's first process, reaps the children it inherits.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		reap()
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

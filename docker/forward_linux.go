package docker

import "syscall"

// endWithParent has the kernel end the forward's ssh when boxes dies
// without closing it (SIGKILL): a forward outlives nothing.
func endWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }

//go:build !linux

package docker

import "syscall"

// endWithParent: only Linux ends a child with its parent.
func endWithParent(*syscall.SysProcAttr) {}

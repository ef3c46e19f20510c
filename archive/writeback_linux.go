package archive

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback has the kernel start writing n bytes of f from off to its
// disk, without waiting for it: a later fsync then finds most of the file
// written. A failure is no matter (the fsync writes what is left), nor a
// file closed meanwhile: Control then does nothing.
func startWriteback(f *os.File, off, n int64) {
	c, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = c.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}

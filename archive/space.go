package archive

import "golang.org/x/sys/unix"

// FreeSpace returns the bytes an unprivileged user may still write to the
// file system holding path.
func FreeSpace(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

package archive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/archive"
)

// cancelAt reads an archive and calls at once it has handed out n bytes: a
// Ctrl-C that comes at a place the test chooses. It counts every byte read,
// so a test can tell how far the reading went on after.
type cancelAt struct {
	r    io.Reader
	n    int64
	at   func()
	read int64
}

func (c *cancelAt) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.at != nil && c.read >= c.n {
		c.at()
		c.at = nil
	}
	return n, err
}

// bigArchive is an archive whose data is one incompressible file of size
// bytes, longer than many S2 blocks and age chunks, and a small one after.
func bigArchive(t *testing.T, size int) []byte {
	t.Helper()
	body := make([]byte, size)
	rand.NewChaCha8([32]byte{2}).Read(body)
	return write(t, append(append([]entry{}, layout...),
		file("data/home/agent/big", 0o600, string(body)),
		file("data/home/agent/after", 0o644, "after\n")))
}

// slack bounds what a reader may still take of the archive once cancelled:
// what it already asked for (an S2 block of 1 MiB and an age chunk),
// with room to spare.
const slack = 2 << 20

// wantCancelled fails the test unless err is a cancel's, said as one.
func wantCancelled(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%s: error %v, want one wrapping context.Canceled", what, err)
	}
	if strings.Contains(err.Error(), "damaged") {
		t.Errorf("%s: a cancel is reported as damage: %v", what, err)
	}
}

func TestVerifyStopsWhenCancelled(t *testing.T) {
	ar := bigArchive(t, 16<<20)
	for _, at := range []int64{100, 4 << 20} {
		ctx, cancel := context.WithCancel(context.Background())
		c := &cancelAt{r: bytes.NewReader(ar), n: at, at: cancel}
		_, _, err := archive.VerifyContext(ctx, c, archive.Options{Identities: ids(t, passphrase)})
		cancel()
		wantCancelled(t, "VerifyContext", err)
		if c.read > at+slack {
			t.Errorf("cancelled at byte %d, Verify read on to byte %d", at, c.read)
		}
	}
}

// bytesUnder is the size of the regular files under dir.
func bytesUnder(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// writtenPast waits, for ten seconds at most, until the files under dir
// hold min bytes, and returns what they hold. Reading runs ahead of writing
// by what the read-ahead holds (about 3 MiB), so a cancel that comes as
// the 4 MiB'th byte is read may find less than 1 MiB written on a busy
// machine; the reading is held here (this runs inside its Read) while the
// writing catches up with what was read, so that the cancel comes in the
// middle of the big file however the two were scheduled.
func writtenPast(dir string, min int64) int64 {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := bytesUnder(dir)
		if n >= min || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A cancel stops an extraction where it is, in the middle of one large
// file, and what it wrote goes: the target is as it was before.
func TestExtractStopsWhenCancelled(t *testing.T) {
	ar := bigArchive(t, 16<<20)
	for name, target := range targets() {
		for _, at := range []int64{100, 4 << 20, int64(len(ar))} {
			t.Run(fmt.Sprintf("%s, cancelled at byte %d", name, at), func(t *testing.T) {
				dst, top := target(t)
				before := stateOf(t, top)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var written int64
				c := &cancelAt{r: bytes.NewReader(ar), n: at, at: func() {
					written = bytesUnder(top)
					if at == 4<<20 {
						written = writtenPast(top, 1<<20)
					}
					cancel()
				}}
				_, _, err := archive.ExtractContext(ctx, c, dst, archive.ExtractOptions{Options: archive.Options{Identities: ids(t, passphrase)}})
				wantCancelled(t, "ExtractContext", err)
				if c.read > at+slack {
					t.Errorf("cancelled at byte %d, Extract read on to byte %d", at, c.read)
				}
				if at == 4<<20 && written < 1<<20 {
					t.Errorf("only %d bytes were written when cancelled at byte %d: not the middle of the file", written, at)
				}
				if after := stateOf(t, top); !after.same(before) {
					t.Errorf("the target was %v before, %v after", before, after)
				}
			})
		}
	}
}

// blockedReader blocks its first read until released: an archive whose key
// takes long to derive.
type blockedReader struct {
	r        io.Reader
	reading  chan struct{}
	released chan struct{}
}

func (b *blockedReader) Read(p []byte) (int, error) {
	select {
	case <-b.reading:
	default:
		close(b.reading)
		<-b.released
	}
	return b.r.Read(p)
}

// A cancel while the archive is still being opened ends Extract at once.
func TestExtractCancelledWhileOpening(t *testing.T) {
	b := &blockedReader{r: bytes.NewReader(write(t, boxData())), reading: make(chan struct{}), released: make(chan struct{})}
	defer close(b.released)
	dst := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := archive.ExtractContext(ctx, b, dst, archive.ExtractOptions{Options: archive.Options{Identities: ids(t, passphrase)}})
		done <- err
	}()
	<-b.reading
	cancel()
	select {
	case err := <-done:
		wantCancelled(t, "ExtractContext", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Extract did not return while its reader was blocked")
	}
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Extract left %s (%v)", dst, err)
	}
}

// A context that could be cancelled but is not changes nothing.
func TestExtractContextNotCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dst := filepath.Join(t.TempDir(), "out")
	_, sum, err := archive.ExtractContext(ctx, bytes.NewReader(write(t, boxData())), dst, archive.ExtractOptions{Options: archive.Options{Identities: ids(t, passphrase)}})
	if err != nil || sum.Files != 5 {
		t.Fatalf("summary %+v, error %v", sum, err)
	}
	if s := stateOf(t, dst); strings.Join(s.names, " ") != "data" {
		t.Errorf("%s holds %v, want data only", dst, s.names)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "data/home/agent/big")); err != nil || string(b) != bigBody {
		t.Errorf("data/home/agent/big differs (%v)", err)
	}
}

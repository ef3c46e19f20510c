package archive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"

	"github.com/hermes-box/boxes/archive"
)

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// bombTar writes to w, on the fly, a box's data tar holding one file of size
// zero bytes, after manifest (if not nil). It never holds the file.
func bombTar(w io.Writer, manifest []byte, size int64) error {
	tw := tar.NewWriter(w)
	if manifest != nil {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "manifest.json", Mode: 0o644, Size: int64(len(manifest))}); err != nil {
			return err
		}
		if _, err := tw.Write(manifest); err != nil {
			return err
		}
	}
	prefix := "data/"
	if manifest == nil { // the smolvm tool's names
		prefix = "./"
	}
	for _, d := range []string{"", "home/", "home/agent/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + d, Mode: 0o755}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: prefix + "home/agent/zeros", Mode: 0o644, Size: size}); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, zeros{}, size); err != nil {
		return err
	}
	return tw.Close()
}

const tenGiB = 10 << 30

// bombSize is the size the bombs claim: 10 GiB, or 1 GiB in the short
// suite. Either is refused within its first megabytes; most of the test's
// time is making the bomb, which stops when the reader refuses it.
func bombSize() int64 {
	if testing.Short() {
		return 1 << 30
	}
	return tenGiB
}

// refusedQuickly runs read on a stream that gen writes into a pipe, checks
// that read fails with want within a few seconds, and that the whole run
// allocated far less than the data claims.
func refusedQuickly(t *testing.T, gen func(w io.Writer) error, read func(r io.Reader) error, want string) {
	t.Helper()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(gen(pw)) }()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	err := read(pr)
	pr.CloseWithError(errors.New("reader done"))
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	wantErr(t, "read", err, want)
	if elapsed > 20*time.Second {
		t.Errorf("refused after %v, want a few seconds", elapsed)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 512<<20 {
		t.Errorf("allocated %d MiB to refuse it", alloc>>20)
	}
	t.Logf("refused in %v, %d MiB allocated", elapsed.Round(time.Millisecond), (after.TotalAlloc-before.TotalAlloc)>>20)
}

func TestTenGiBOfZerosRefused(t *testing.T) {
	t.Run("declared size", func(t *testing.T) {
		m, _ := json.Marshal(archive.Manifest{Format: archive.Format, Box: "dev", Created: mtime, Size: 1 << 20})
		gen := func(w io.Writer) error {
			enc, err := age.Encrypt(w, recipient(t))
			if err != nil {
				return err
			}
			zw, _ := zstd.NewWriter(enc)
			if err := bombTar(zw, m, bombSize()); err != nil {
				return err
			}
			zw.Close()
			return enc.Close()
		}
		for name, read := range map[string]func(io.Reader) error{
			"Verify": func(r io.Reader) error { _, _, err := archive.Verify(r, identity(t, passphrase)); return err },
			"Data":   func(r io.Reader) error { return readData(r, identity(t, passphrase)) },
			"Extract": func(r io.Reader) error {
				dst := filepath.Join(t.TempDir(), "x")
				_, _, err := archive.Extract(r, dst, identity(t, passphrase))
				if _, serr := os.Lstat(dst); !errors.Is(serr, os.ErrNotExist) {
					t.Errorf("Extract left %s", dst)
				}
				return err
			},
		} {
			t.Run(name, func(t *testing.T) {
				refusedQuickly(t, gen, read, "takes the data past 1048576 bytes, the size its manifest declares")
			})
		}
	})
	t.Run("smolvm archive, bound set by the caller", func(t *testing.T) {
		needTools(t, "gpg")
		gen := func(w io.Writer) error {
			cmd := exec.Command("gpg", "--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase", passphrase,
				"--symmetric", "--cipher-algo", "AES256", "--compress-algo", "none")
			cmd.Env = append(os.Environ(), "GNUPGHOME="+sharedGPGHome(t))
			cmd.Stdout = w
			in, err := cmd.StdinPipe()
			if err != nil {
				return err
			}
			if err := cmd.Start(); err != nil {
				return err
			}
			gz, _ := gzip.NewWriterLevel(in, gzip.BestSpeed)
			err = bombTar(gz, nil, bombSize())
			if err == nil {
				err = gz.Close()
			}
			in.Close()
			if err != nil {
				cmd.Process.Kill()
			}
			cmd.Wait()
			return err
		}
		read := func(r io.Reader) error {
			_, _, err := archive.VerifyWith(r, archive.Options{Identities: ids(t, passphrase), MaxBytes: bombSize() / 10})
			return err
		}
		refusedQuickly(t, gen, read, "larger than allowed")
	})
}

func TestExtractReserve(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "out")
	_, _, err := archive.ExtractWith(bytes.NewReader(write(t, boxData())), dst,
		archive.ExtractOptions{Options: archive.Options{Identities: ids(t, passphrase)}, Reserve: 1 << 62})
	if !errors.Is(err, archive.ErrNoRoom) {
		t.Errorf("error %v, want ErrNoRoom", err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Extract left %s behind", dst)
	}
}

func TestNamesTheEngineRefuses(t *testing.T) {
	id := identity(t, passphrase)
	long := strings.Repeat("a", 300)
	deep := "data/home/agent/" + strings.Repeat(strings.Repeat("d", 200)+"/", 21)
	var dirs []entry
	for p := "data/home/agent/"; len(p) < len(deep); {
		p += strings.Repeat("d", 200) + "/"
		dirs = append(dirs, dir(p, 0o755))
	}
	for _, tc := range []struct {
		name    string
		entries []entry
		want    string
	}{
		{"300-character name", append(append([]entry{}, layout...), file("data/home/agent/"+long, 0o644, "x")), "a name of 300 bytes"},
		{"path over 4095 bytes", append(append([]entry{}, layout...), dirs...), "longer than the 4095"},
		{"symlink target over 4095 bytes", append(append([]entry{}, layout...), symlink("data/home/agent/l", strings.Repeat("x/", 2100))), "symlink target of 4200 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			refuseAll(t, sealData(t, tc.entries), id, tc.want)
			var out bytes.Buffer
			_, err := archive.Write(&out, manifest(), bytes.NewReader(makeTar(t, tc.entries)), recipient(t))
			wantErr(t, "Write", err, tc.want)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// xattrTar is a box's data with one file carrying security.capability.
func xattrTar(t *testing.T, manifest bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if manifest {
		m := manifestEntry(t, 1, "dev")
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: m.name, Mode: 0o644, Size: int64(len(m.body))})
		io.WriteString(tw, m.body)
	}
	for _, d := range layout {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: mtime})
	}
	body := "#!/bin/sh\n"
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "data/home/agent/ping", Mode: 0o755, Size: int64(len(body)), ModTime: mtime,
		PAXRecords: map[string]string{"SCHILY.xattr.security.capability": "\x01\x00\x00\x02\x00\x20\x00\x00"}, Format: tar.FormatPAX})
	io.WriteString(tw, body)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExtendedAttributes(t *testing.T) {
	// Readers refuse them: the engine's restore would.
	refuseAll(t, seal(t, xattrTar(t, true)), identity(t, passphrase), "extended attribute security.capability")

	// Write drops them and says so; the archive then reads back.
	var out bytes.Buffer
	sum, dropped, err := archive.WriteReport(&out, manifest(), bytes.NewReader(xattrTar(t, false)), recipient(t))
	if err != nil {
		t.Fatal(err)
	}
	if dropped.Xattrs != 1 || sum.Files != 1 {
		t.Errorf("summary %+v, dropped %+v: want 1 file, 1 attribute dropped", sum, dropped)
	}
	if _, _, err := archive.Verify(&out, identity(t, passphrase)); err != nil {
		t.Errorf("Verify of what Write wrote: %v", err)
	}
}

package archive_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/hermes-box/boxes/archive"
)

// sealZstd encrypts a zstd-compressed plain tar, bypassing Write.
func sealZstd(t *testing.T, plain []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := age.Encrypt(&buf, recipient(t))
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := zstd.NewWriter(enc)
	zw.Write(plain)
	zw.Close()
	enc.Close()
	return buf.Bytes()
}

func TestWriteRecordsHashes(t *testing.T) {
	plain := string(plaintext(t, write(t, boxData())))
	for _, want := range []string{"content.sha256", "boxes-content 1\n", `"data/home/agent/.bashrc"`, "\ntotal 5 200049\n"} {
		if !strings.Contains(plain, want) {
			t.Errorf("the archive's tar lacks %q", want)
		}
	}
}

func TestHashCatchesChangedContent(t *testing.T) {
	plain := plaintext(t, write(t, boxData()))
	i := bytes.Index(plain, []byte(bigBody[1000:1100]))
	if i < 0 {
		t.Fatal("big file not found in the tar")
	}
	changed := bytes.Clone(plain)
	changed[i+50] ^= 0x01 // the tar stays well formed: only the content differs
	ar := sealZstd(t, changed)
	id := identity(t, passphrase)
	const want = "the content of data/home/agent/big does not match its recorded hash"
	_, _, err := archive.Verify(bytes.NewReader(ar), id)
	wantErr(t, "Verify", err, want)
	dst := filepath.Join(t.TempDir(), "out")
	_, _, err = archive.Extract(bytes.NewReader(ar), dst, id)
	wantErr(t, "Extract", err, want)
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Extract left %s behind after failing (%v)", dst, err)
	}
	// A restore's check of the archive takes the recorded hashes instead
	// of computing them; its stream (Data) hashes the content as it sends
	// it, and fails at its end.
	if _, sum, err := archive.VerifyWith(bytes.NewReader(ar), archive.Options{Identities: []age.Identity{id}, RecordedHashes: true}); err != nil || sum.Hashed != 5 {
		t.Errorf("VerifyWith RecordedHashes: %d hashes, %v", sum.Hashed, err)
	}
	d, err := archive.OpenData(bytes.NewReader(ar), archive.Options{Identities: []age.Identity{id}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, d)
	wantErr(t, "Data", err, want)
	if _, err := d.Contents(); err == nil {
		t.Errorf("Data: the contents of a stream that failed")
	}
}

func TestTrailerRefusals(t *testing.T) {
	plain := plaintext(t, write(t, boxData()))
	cut := bytes.Index(plain, []byte("content.sha256"))
	if cut < 0 {
		t.Fatal("no trailer")
	}
	// Dropping the trailer (and ending the tar there) is refused, also by
	// a read that takes the recorded hashes.
	noTrailer := sealZstd(t, append(bytes.Clone(plain[:cut]), make([]byte, 1024)...))
	refuseAll(t, noTrailer, identity(t, passphrase), "no content.sha256 entry")
	_, _, err := archive.VerifyWith(bytes.NewReader(noTrailer), archive.Options{Identities: ids(t, passphrase), RecordedHashes: true})
	wantErr(t, "VerifyWith RecordedHashes", err, "no content.sha256 entry")
	// So is a trailer that names another file.
	renamed := bytes.Replace(bytes.Clone(plain), []byte(`"data/home/agent/big"`), []byte(`"data/home/agent/bog"`), 1)
	_, _, err = archive.VerifyWith(bytes.NewReader(sealZstd(t, renamed)), archive.Options{Identities: ids(t, passphrase), RecordedHashes: true})
	wantErr(t, "VerifyWith RecordedHashes, renamed", err, "records data/home/agent/bog where the archive holds data/home/agent/big")
}

func TestDeclaredSize(t *testing.T) {
	m := manifest()
	m.Size = 100
	var buf bytes.Buffer
	_, err := archive.Write(&buf, m, bytes.NewReader(makeTar(t, boxData())), recipient(t))
	wantErr(t, "Write", err, "takes the data past 100 bytes")

	m.Size = 300_000
	buf.Reset()
	if _, err := archive.Write(&buf, m, bytes.NewReader(makeTar(t, boxData())), recipient(t)); err != nil {
		t.Fatal(err)
	}
	got, _, err := archive.Verify(bytes.NewReader(buf.Bytes()), identity(t, passphrase))
	if err != nil || got.Size != 300_000 {
		t.Errorf("Verify: size %d, %v", got.Size, err)
	}
	_, _, err = archive.VerifyWith(bytes.NewReader(buf.Bytes()), archive.Options{Identities: ids(t, passphrase), MaxBytes: 1000})
	wantErr(t, "VerifyWith MaxBytes", err, "larger than allowed")
}

func TestVerifyFlippedByteEachFormat(t *testing.T) {
	id := identity(t, passphrase)
	formats := map[string][]byte{
		"s2 (format 3)":   write(t, boxData()),
		"zstd (format 2)": writeFormat2(t, boxData()),
		"gzip (format 1)": sealData(t, boxData()),
	}
	for name, ar := range formats {
		t.Run(name, func(t *testing.T) {
			if _, _, err := archive.Verify(bytes.NewReader(ar), id); err != nil {
				t.Fatalf("intact archive: %v", err)
			}
			bad := bytes.Clone(ar)
			bad[len(bad)/2] ^= 0x04
			_, _, err := archive.Verify(bytes.NewReader(bad), id)
			wantErr(t, "Verify", err, "damaged or truncated")
		})
	}
	t.Run("smolvm", func(t *testing.T) {
		ar := legacyArchive(t, legacyTree(t), passphrase)
		bad := bytes.Clone(ar)
		bad[len(bad)/2] ^= 0x04
		_, _, err := archive.Verify(bytes.NewReader(bad), id)
		wantErr(t, "Verify", err, "archive: ")
	})
}

// writeFormat2 is write with format 2's zstd, as boxes wrote archives before
// format 3.
func writeFormat2(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := archive.WriteFormat2(&buf, manifest(), bytes.NewReader(makeTar(t, entries)), recipient(t)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestEachFormatReads(t *testing.T) {
	id := identity(t, passphrase)
	for name, tc := range map[string]struct {
		ar     []byte
		format int
	}{
		"s2 (format 3)":   {write(t, boxData()), 3},
		"zstd (format 2)": {writeFormat2(t, boxData()), 2},
	} {
		t.Run(name, func(t *testing.T) {
			m, sum, err := archive.Verify(bytes.NewReader(tc.ar), id)
			if err != nil || m.Format != tc.format || sum.Hashed != 5 {
				t.Fatalf("Verify: format %d, %d hashed, %v; want format %d, 5 hashed", m.Format, sum.Hashed, err, tc.format)
			}
			if got := string(plaintext(t, tc.ar)); !strings.Contains(got, "\ntotal 5 200049\n") {
				t.Errorf("no trailer total in the plaintext")
			}
		})
	}
}

// plaintext returns the decrypted, decompressed tar of an archive of
// format 2 or 3, its compression told apart by its magic number.
func plaintext(t *testing.T, ar []byte) []byte {
	t.Helper()
	r, err := age.Decrypt(bytes.NewReader(ar), identity(t, passphrase))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out, err := io.ReadAll(s2.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

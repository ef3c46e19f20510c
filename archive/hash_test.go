package archive_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"

	"github.com/hermes-box/boxes/archive"
)

// plaintext returns the decrypted, decompressed tar of a zstd archive.
func plaintext(t *testing.T, ar []byte) []byte {
	t.Helper()
	r, err := age.Decrypt(bytes.NewReader(ar), identity(t, passphrase))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zstd.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

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
	refuseAll(t, sealZstd(t, changed), identity(t, passphrase), "the content of data/home/agent/big does not match its recorded hash")
}

func TestTrailerRefusals(t *testing.T) {
	plain := plaintext(t, write(t, boxData()))
	cut := bytes.Index(plain, []byte("content.sha256"))
	if cut < 0 {
		t.Fatal("no trailer")
	}
	// Dropping the trailer (and ending the tar there) is refused.
	noTrailer := append(bytes.Clone(plain[:cut]), make([]byte, 1024)...)
	refuseAll(t, sealZstd(t, noTrailer), identity(t, passphrase), "no content.sha256 entry")
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
		"zstd (format 2)": write(t, boxData()),
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

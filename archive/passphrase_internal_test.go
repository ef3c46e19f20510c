package archive

import (
	"bytes"
	"io"
	"runtime"
	"testing"
	"time"

	"filippo.io/age"
)

func memoized() int {
	n := 0
	fileKeys.Range(func(_, _ any) bool { n++; return true })
	return n
}

// A passphrase archive's file key is derived once per process: written, it
// is remembered for the same passphrase; opened again, the memo answers. A
// wrong passphrase gets nothing from the memo, and a header whose MAC is
// broken is refused even though its stanza is remembered.
func TestPassphraseKeyRemembered(t *testing.T) {
	r, err := PassphraseRecipient("right horse")
	if err != nil {
		t.Fatal(err)
	}
	r.(*passphraseRecipient).SetWorkFactor(10)
	plain, err := age.NewScryptRecipient("right horse")
	if err != nil {
		t.Fatal(err)
	}
	plain.SetWorkFactor(10)
	encrypt := func(r age.Recipient) []byte {
		var ar bytes.Buffer
		w, err := age.Encrypt(&ar, r)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, "the data")
		w.Close()
		return ar.Bytes()
	}
	before := memoized()
	mine := encrypt(r)
	if n := memoized(); n != before+1 {
		t.Fatalf("writing remembered %d keys, want 1", n-before)
	}
	// Written elsewhere: the first open derives and remembers the key.
	theirs := encrypt(plain)
	open := func(p string, b []byte) (string, error) {
		id, err := PassphraseIdentity(p)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := age.Decrypt(bytes.NewReader(b), id)
		if err != nil {
			return "", err
		}
		out, err := io.ReadAll(rd)
		return string(out), err
	}
	for _, ar := range [][]byte{mine, theirs} {
		for i := 0; i < 3; i++ {
			if got, err := open("right horse", ar); err != nil || got != "the data" {
				t.Fatalf("open %d: %q, %v", i, got, err)
			}
		}
	}
	if n := memoized(); n != before+2 {
		t.Errorf("two archives opened three times each: %d keys remembered, want 2", n-before)
	}
	for _, ar := range [][]byte{mine, theirs} {
		if _, err := open("wrong horse", ar); err == nil {
			t.Error("a wrong passphrase opened the archive")
		}
	}
	// The header's MAC is the last line before the payload: change it.
	b := bytes.Clone(mine)
	i := bytes.Index(b, []byte("\n--- ")) + 5
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	if bytes.Equal(b, mine) {
		t.Fatal("header not changed")
	}
	if _, err := open("right horse", b); err == nil {
		t.Error("a header with a broken MAC opened with the remembered key")
	}
}

// Decryption ahead of the reader ends with the stream, at an error, or at
// Close when the reader stops early: no goroutine is left behind.
func TestDecryptAheadStops(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	var sealed bytes.Buffer
	w, err := age.Encrypt(&sealed, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	plain := bytes.Repeat([]byte("boxes "), 1<<20) // 6 MiB: more than it reads ahead
	if _, err := w.Write(plain); err != nil || w.Close() != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	r, err := decryptAhead(bytes.NewReader(sealed.Bytes()), id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	r.Close()
	r, err = decryptAhead(bytes.NewReader(sealed.Bytes()), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	damaged := bytes.Clone(sealed.Bytes())
	damaged[len(damaged)-100] ^= 1
	r, err = decryptAhead(bytes.NewReader(damaged), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err == nil {
		t.Error("a damaged last chunk read without error")
	}
	r.Close()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left, %d before", n, before)
	}
}

//go:build linux

package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/internal/testpty"
)

// Ctrl-C while verify asks for the passphrase on the terminal ends boxes
// with the terminal echoing again.
func TestInterruptedPassphrasePromptRestoresTheTerminal(t *testing.T) {
	for _, v := range []string{backup.EnvPassphrase, backup.EnvOldPassphrase, backup.EnvOldPassphraseFile, backup.EnvIdentity} {
		t.Setenv(v, "")
	}
	file := boxArchive(t, t.TempDir(), "pw")
	_, tty := testpty.Open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- MainContext(ctx, Streams{In: tty, Out: &out, Err: &errb}, []string{"-f", filepath.Join(t.TempDir(), "boxes.yaml"), "verify", file})
	}()
	for deadline := time.Now().Add(5 * time.Second); testpty.Echo(t, tty); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("verify never turned echo off to ask")
		}
	}
	cancel()
	if c := <-code; c != 1 {
		t.Errorf("exit %d", c)
	}
	if !testpty.Echo(t, tty) {
		t.Error("the interrupted prompt left the terminal without echo")
	}
	want := "Enter the passphrase of " + filepath.Base(file) + ": \nboxes: error: verifying " + file + ": interrupted\n"
	if errb.String() != want || out.Len() != 0 {
		t.Errorf("stderr %q, want %q; stdout %q", errb.String(), want, out.String())
	}
}

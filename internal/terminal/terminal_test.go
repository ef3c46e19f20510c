//go:build linux

package terminal

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/testpty"
)

// A secret is read without echo, and the terminal echoes again afterwards.
func TestSecretTurnsEchoOffThenOn(t *testing.T) {
	master, tty := testpty.Open(t)
	if !testpty.Echo(t, tty) {
		t.Fatal("a new terminal does not echo")
	}
	var prompt bytes.Buffer
	p, err := NewPrompter(tty, &prompt)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		s, err := p.Secret(context.Background(), "Enter it")
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	waitFor(t, func() bool { return !testpty.Echo(t, tty) })
	master.Write([]byte("hunter2\n"))
	if s := <-got; s != "hunter2" {
		t.Errorf("read %q", s)
	}
	if !testpty.Echo(t, tty) {
		t.Error("echo is still off after the answer")
	}
	if prompt.String() != "Enter it: \n" {
		t.Errorf("prompt %q", prompt.String())
	}
}

// Ctrl-C (a cancelled context) during the prompt leaves the terminal echoing.
func TestSecretInterruptedRestoresEcho(t *testing.T) {
	_, tty := testpty.Open(t)
	p, err := NewPrompter(tty, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Secret(ctx, "Enter it")
		done <- err
	}()
	waitFor(t, func() bool { return !testpty.Echo(t, tty) })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("an interrupted prompt returned %v", err)
	}
	if !testpty.Echo(t, tty) {
		t.Error("an interrupted prompt left the terminal without echo")
	}
}

func TestNoTerminalNoPrompter(t *testing.T) {
	if _, err := NewPrompter(&bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, ErrNotTerminal) {
		t.Errorf("a buffer made a prompter: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

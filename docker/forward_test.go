package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeSSHEnv makes this test binary act as ssh (see TestFakeSSH).
const fakeSSHEnv = "BOXES_TEST_FAKE_SSH"

// TestFakeSSH is not a test: run as ssh by fakeSSH, it records its
// arguments and does what its -L asks, forwarding to the address in
// $BOXES_TEST_FAKE_SSH_TO instead of the remote's, until it is signalled.
// With $BOXES_TEST_FAKE_SSH_FAIL it prints that and exits 255, as ssh does.
func TestFakeSSH(t *testing.T) {
	if os.Getenv(fakeSSHEnv) == "" {
		t.Skip("run as ssh by the forward tests")
	}
	args := os.Args[1:]
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	_ = os.WriteFile(os.Getenv(fakeSSHEnv), []byte(strings.Join(args, "\n")), 0o600)
	if msg := os.Getenv("BOXES_TEST_FAKE_SSH_FAIL"); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(255)
	}
	var spec string
	for i, a := range args {
		if a == "-L" {
			spec = args[i+1]
		}
	}
	// 127.0.0.1:LOCAL:TARGET:PORT
	parts := strings.SplitN(spec, ":", 3)
	ln, err := net.Listen("tcp", parts[0]+":"+parts[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "bind [%s]:%s: Address already in use\nCould not request local forwarding.\n", parts[0], parts[1])
		os.Exit(255)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(0)
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", os.Getenv("BOXES_TEST_FAKE_SSH_TO"))
			if err != nil {
				return
			}
			defer up.Close()
			go io.Copy(up, c) //nolint:errcheck // test proxy
			io.Copy(c, up)    //nolint:errcheck // test proxy
		}()
	}
}

// fakeSSH puts an ssh on PATH that is this test binary running TestFakeSSH,
// and returns the file its arguments are written to.
func fakeSSH(t *testing.T, to, fail string) string {
	t.Helper()
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %q -test.run='^TestFakeSSH$' -- \"$@\"\n", self)
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	argsFile := filepath.Join(bin, "args")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(fakeSSHEnv, argsFile)
	t.Setenv("BOXES_TEST_FAKE_SSH_TO", to)
	t.Setenv("BOXES_TEST_FAKE_SSH_FAIL", fail)
	return argsFile
}

func TestForward(t *testing.T) {
	dashboard := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "dashboard")
	}))
	defer dashboard.Close()
	argsFile := fakeSSH(t, strings.TrimPrefix(dashboard.URL, "http://"), "")
	e := &Engine{Host: "nexus", Endpoint: Endpoint{Host: "nexus", URL: "ssh://me@nexus:2222/run/docker.sock"}}
	f, err := e.Forward(context.Background(), "127.0.0.1", 4800)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(f.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "dashboard" {
		t.Errorf("through the forward: %q", body)
	}
	args, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	local := strings.TrimPrefix(f.URL(), "http://")
	for _, want := range []string{"BatchMode=yes", "ConnectTimeout=", "ExitOnForwardFailure=yes", "ControlPath=none", "-N", "-L\n" + local + ":127.0.0.1:4800", "-l\nme", "-p\n2222"} {
		if !strings.Contains(string(args), want) {
			t.Errorf("ssh's arguments lack %q:\n%s", want, args)
		}
	}
	if !strings.HasSuffix(string(args), "\nnexus") {
		t.Errorf("ssh's arguments do not end with the host:\n%s", args)
	}
	select {
	case <-f.Done():
		t.Fatalf("the forward ended: %v", f.Err())
	default:
	}
	f.Close()
	select {
	case <-f.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end ssh")
	}
	if _, err := net.DialTimeout("tcp", local, time.Second); err == nil {
		t.Error("the forwarded port still answers after Close")
	}
}

func TestForwardEndsWithContext(t *testing.T) {
	dashboard := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer dashboard.Close()
	fakeSSH(t, strings.TrimPrefix(dashboard.URL, "http://"), "")
	e := &Engine{Host: "nexus", Endpoint: Endpoint{Host: "nexus", URL: "ssh://nexus"}}
	ctx, cancel := context.WithCancel(context.Background())
	f, err := e.Forward(ctx, "::1", 4800)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-f.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the end of the context did not end ssh")
	}
}

func TestForwardErrors(t *testing.T) {
	e := &Engine{Host: "nexus", Endpoint: Endpoint{Host: "nexus", URL: "tcp://nexus:2376"}}
	if _, err := e.Forward(context.Background(), "127.0.0.1", 4800); !errors.Is(err, ErrNoForward) {
		t.Errorf("over tcp://: %v", err)
	}

	fakeSSH(t, "127.0.0.1:1", "ssh: connect to host nexus port 22: Connection refused")
	e = &Engine{Host: "nexus", Endpoint: Endpoint{Host: "nexus", URL: "ssh://me@nexus"}}
	start := time.Now()
	_, err := e.Forward(context.Background(), "127.0.0.1", 4800)
	var he *HostError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "host nexus (ssh://me@nexus): ssh: connect to host nexus port 22: Connection refused") ||
		!strings.Contains(he.Hint, "nothing listens there") {
		t.Errorf("ssh refused: %v (%+v)", err, he)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a failed ssh took %s to report", took)
	}
}

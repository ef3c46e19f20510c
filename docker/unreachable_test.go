package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/client"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

func TestUnreachable(t *testing.T) {
	c, err := client.NewClientWithOpts(client.WithHost("unix://"+filepath.Join(t.TempDir(), "docker.sock")), client.WithVersion(MinAPIVersion))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, gone := c.Ping(context.Background())
	if gone == nil {
		t.Fatal("ping of a missing socket succeeded")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, refused := http.Get("http://" + addr + "/mcp")
	if refused == nil {
		t.Fatal("a closed port answered")
	}

	for _, tc := range []struct {
		name              string
		err               error
		unreachable, gone bool
	}{
		{"no engine on the socket", gone, true, true},
		{"wrapped by compose", fmt.Errorf("creating container: %w", gone), true, true},
		{"flattened by compose", errors.New("failed to create network x: " + gone.Error()), true, false},
		{"an executor port that refuses while it starts", refused, true, false},
		{"an engine that answered", errors.New("Error response from daemon: network hbl-x_default is ambiguous (2 matches found on name)"), false, false},
		{"none", nil, false, false},
	} {
		if got := Unreachable(tc.err); got != tc.unreachable {
			t.Errorf("%s: Unreachable = %v, want %v (%v)", tc.name, got, tc.unreachable, tc.err)
		}
		if got := engineGone(tc.err); got != tc.gone {
			t.Errorf("%s: engineGone = %v, want %v (%v)", tc.name, got, tc.gone, tc.err)
		}
	}

	e := &Engine{Host: "far", Endpoint: Endpoint{Host: "far", URL: "ssh://root@10.0.0.2"}}
	err = e.lost(fmt.Errorf("starting: %w", gone))
	var he *HostError
	if !errors.As(err, &he) || !strings.HasPrefix(err.Error(), "host far (ssh://root@10.0.0.2): the engine stopped answering: ") || len(he.HintLines()) != 1 {
		t.Errorf("lost = %v, want a HostError naming host far", err)
	}
	if again := e.lost(err); again != err {
		t.Errorf("lost wrapped a HostError again: %v", again)
	}
	answered := errors.New("Error response from daemon: conflict")
	if got := e.lost(answered); got != answered {
		t.Errorf("lost changed an engine's answer: %v", got)
	}
}

// Every call the engine contract's suite makes of an engine that went away
// fails as engine.ErrUnreachable, naming the host: a plan, an exec or a copy
// as much as a create.
func TestCallsOnAnEngineGone(t *testing.T) {
	useConfigDir(t)
	ctx := context.Background()
	f := startFakeEngine(t, "1.41", "GONE")
	e, err := Connect(ctx, spec.Host{Name: "far", Docker: f.url}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	f.stop()
	for name, call := range map[string]func() error{
		"Observe": func() error { _, err := e.Observe(ctx); return err },
		"Exec": func() error {
			_, err := e.Exec(ctx, "0123456789abcdef", engine.ExecOptions{Cmd: []string{"true"}})
			return err
		},
		"CopyFrom":        func() error { _, err := e.CopyFrom(ctx, "0123456789abcdef", "/data"); return err },
		"ContainerID":     func() error { _, err := e.ContainerID(ctx, "alpha", "agent"); return err },
		"CopyTo":          func() error { return e.CopyTo(ctx, "0123456789abcdef", "/data", strings.NewReader("")) },
		"RemoveContainer": func() error { return e.RemoveContainer(ctx, "0123456789abcdef") },
	} {
		err := call()
		if !errors.Is(err, engine.ErrUnreachable) || !strings.HasPrefix(fmt.Sprint(err), "host far ("+f.url+"): ") {
			t.Errorf("%s on an engine gone: %v; want engine.ErrUnreachable, naming host far", name, err)
		}
	}
}

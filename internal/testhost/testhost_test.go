package testhost

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/docker/go-connections/tlsconfig"
)

// TestIntegrationEngine starts an engine with TLS and sshd, reaches it all
// three ways, and checks that its teardown leaves no process, namespace or
// file behind. Real engine: a second dockerd with an ID of its own, reached
// by its socket, over TLS and over ssh, is the harness every several-host
// real-engine test stands on, where the fake's hosts are entries in a file.
func TestIntegrationEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	var e *Engine
	var pids []int
	t.Run("up", func(t *testing.T) {
		e = Start(t, Options{TLS: true, SSH: true})
		t.Logf("engine %s at %s started in %s", e.Name, e.Addr, e.StartTime)
		local, err := localID()
		if err != nil {
			t.Fatal(err)
		}
		if e.ID == "" || e.ID == local {
			t.Fatalf("engine ID %q, local engine's %q: want a distinct one", e.ID, local)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()

		tlsCfg, err := tlsconfig.Client(tlsconfig.Options{
			CAFile:   filepath.Join(e.TLSDir, "ca.pem"),
			CertFile: filepath.Join(e.TLSDir, "cert.pem"),
			KeyFile:  filepath.Join(e.TLSDir, "key.pem"),
		})
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.NewClientWithOpts(client.WithHost(e.TCP),
			client.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}),
			client.WithAPIVersionNegotiation())
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		c.Close()
		if err != nil || info.ID != e.ID {
			t.Fatalf("over TLS: ID %q, %v; want %q", info.ID, err, e.ID)
		}

		out, err := exec.CommandContext(ctx, filepath.Join(e.SSHPath, "ssh"), "-o", "BatchMode=yes", "root@"+e.Addr,
			"docker", "-H", e.Socket, "info", "--format", "{{.ID}}").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != e.ID {
			t.Fatalf("over ssh: %q, %v; want %q", out, err, e.ID)
		}
		for _, p := range e.procs {
			pids = append(pids, p.Process.Pid)
		}
	})
	if e == nil || e.Name == "" {
		t.Fatal("no engine started")
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d still runs after teardown", pid)
		}
	}
	for _, path := range []string{"/var/run/netns/" + e.Name, "/sys/class/net/" + e.veth, e.dir, e.run} {
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s still exists after teardown", path)
		}
	}
}

func localID() (string, error) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return "", err
	}
	defer c.Close()
	info, err := c.Info(context.Background())
	return info.ID, err
}

package workspace_test

import (
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// reachEngine is a fake engine that says how its published ports are reached.
type reachEngine struct {
	*fakeEngine
	how, url string
}

func (r reachEngine) ExecutorReach(string, int) (string, string) { return r.how, r.url }

func executorOf(name, bind string, port int) reconcile.Container {
	return reconcile.Container{ID: name + "-x", Box: name, Service: compose.ExecutorService, State: "running",
		Ports: []reconcile.Port{{HostIP: bind, HostPort: port, ContainerPort: compose.ExecutorPort}}}
}

func TestListSaysHowAnExecutorIsReached(t *testing.T) {
	f := newFleet(t)
	f.snapshots[""] = &reconcile.Observed{Containers: []reconcile.Container{executorOf("alpha", "127.0.0.1", 4801)}}
	f.snapshots["nexus"] = &reconcile.Observed{Containers: []reconcile.Container{executorOf("gamma", "127.0.0.1", 4802)}}
	f.snapshots["zulu"] = &reconcile.Observed{}
	ws := f.openWith(t, func(host string, e *fakeEngine) workspace.Engine {
		if host == "nexus" {
			return reachEngine{fakeEngine: e, how: "ssh-forward"}
		}
		return e
	})
	if err := ws.Observe(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows := map[string]workspace.Row{}
	for _, r := range ws.List(false) {
		rows[r.Name] = r
	}
	if r := rows["alpha"]; r.Reach != "direct" || r.URL != "http://127.0.0.1:4801" || r.Executor() != r.URL {
		t.Errorf("local box: %+v (%q)", r, r.Executor())
	}
	// The remote's loopback is not shown as if it were this machine's.
	if r := rows["gamma"]; r.Reach != "ssh-forward" || r.URL != "" || r.Executor() != "via ssh forward: boxes open gamma" {
		t.Errorf("box on the remote's loopback: %+v (%q)", r, r.Executor())
	}
	if got := (workspace.Row{Name: "g", Host: "far", Reach: "host-only"}).Executor(); got != "on host far's loopback only" {
		t.Errorf("host-only: %q", got)
	}
}

func TestRowsWriteText(t *testing.T) {
	rows := workspace.Rows{
		{Name: "alpha", Fleet: "f", State: "running", Image: "current", URL: "http://127.0.0.1:4801", Reach: "direct", LastBackup: "backups/alpha.age"},
		{Name: "beta", Host: "nexus", State: "absent", Image: "-"},
	}
	var b strings.Builder
	rows.WriteText(&b, false)
	want := `NAME   HOST   STATE    IMAGE    EXECUTOR               LAST BACKUP
alpha  local  running  current  http://127.0.0.1:4801  backups/alpha.age
beta   nexus  absent   -        -                      -
`
	if b.String() != want {
		t.Errorf("ls:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	rows.WriteText(&b, true)
	want = `FLEET  NAME   HOST   STATE    IMAGE    EXECUTOR               LAST BACKUP
f      alpha  local  running  current  http://127.0.0.1:4801  backups/alpha.age
-      beta   nexus  absent   -        -                      -
`
	if b.String() != want {
		t.Errorf("ls --all:\n%s\nwant:\n%s", b.String(), want)
	}
}

// A box whose restore was cut short is not listed as running.
func TestListShowsAnIncompleteRestore(t *testing.T) {
	f := newFleet(t)
	agent := reconcile.Container{ID: "a", Box: "alpha", Service: compose.AgentService, State: "running"}
	f.snapshots[""] = &reconcile.Observed{Containers: []reconcile.Container{agent, executorOf("alpha", "127.0.0.1", 4801)}}
	ws := f.open(t)
	if err := ws.Observe(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if got := ws.List(false)[0].State; got != "running" {
		t.Fatalf("alpha before: %q", got)
	}
	if err := reconcile.RestoresBeside(ws.Path).Begin(reconcile.Restoring{Box: "alpha", Archive: "backups/a.tar.s2.age"}); err != nil {
		t.Fatal(err)
	}
	if got := ws.List(false)[0].State; got != "restore incomplete" {
		t.Errorf("alpha with its restore cut short: %q, want restore incomplete", got)
	}
}

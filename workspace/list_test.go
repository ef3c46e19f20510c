package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/statedir"
	"github.com/hermes-box/boxes/workspace"
)

// listed is ws.List(false), which must not fail.
func listed(t *testing.T, ws *workspace.Workspace) workspace.Rows {
	t.Helper()
	rows, err := ws.List(false)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// reachEngine is a fake engine that says how its published ports are reached.
type reachEngine struct {
	*fakeEngine
	how, url string
}

func (r reachEngine) ExecutorReach(string, int) engine.Reach {
	return engine.Reach{How: r.how, URL: r.url}
}

func executorOf(name, bind string, port int) engine.Container {
	return engine.Container{ID: name + "-x", Box: name, Service: compose.ExecutorService, State: "running",
		Ports: []engine.Port{{HostIP: bind, HostPort: port, ContainerPort: compose.ExecutorPort}}}
}

func TestListSaysHowAnExecutorIsReached(t *testing.T) {
	f := newFleet(t)
	f.snapshots[""] = &engine.Observed{Containers: []engine.Container{executorOf("alpha", "127.0.0.1", 4801)}}
	f.snapshots["nexus"] = &engine.Observed{Containers: []engine.Container{executorOf("gamma", "127.0.0.1", 4802)}}
	f.snapshots["zulu"] = &engine.Observed{}
	ws := f.openWith(t, func(host string, e *fakeEngine) engine.Engine {
		if host == "nexus" {
			return reachEngine{fakeEngine: e, how: "ssh-forward"}
		}
		return e
	})
	if err := ws.Observe(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows := map[string]workspace.Row{}
	for _, r := range listed(t, ws) {
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

// A box's STATE is its agent's, with the executor's and the gate's added
// when they differ: a box whose executor alone stopped, or whose gate is
// down (the agent then reaches nothing), is not simply "running".
func TestListSaysWhenTheExecutorOrGateDiffers(t *testing.T) {
	agent := func(name, state string) engine.Container {
		return engine.Container{ID: name + "-a", Box: name, Service: compose.AgentService, State: engine.State(state)}
	}
	// gated is an agent behind the network door: on the inside network.
	gated := func(name, state string) engine.Container {
		a := agent(name, state)
		a.Networks = []string{compose.InsideNetworkName(name)}
		return a
	}
	executor := func(name, state string) engine.Container {
		x := executorOf(name, "127.0.0.1", 4801)
		x.State = engine.State(state)
		return x
	}
	gate := func(name, state string) engine.Container {
		return engine.Container{ID: name + "-g", Box: name, Service: compose.GateService, State: engine.State(state)}
	}
	for _, tc := range []struct {
		name       string
		containers []engine.Container
		want       string
	}{
		{"both running", []engine.Container{agent("alpha", "running"), executor("alpha", "running")}, "running"},
		{"both stopped", []engine.Container{agent("alpha", "exited"), executor("alpha", "exited")}, "exited"},
		{"executor stopped", []engine.Container{agent("alpha", "running"), executor("alpha", "exited")}, "running (executor exited)"},
		{"executor restarting", []engine.Container{agent("alpha", "running"), executor("alpha", "restarting")}, "running (executor restarting)"},
		{"agent stopped", []engine.Container{agent("alpha", "exited"), executor("alpha", "running")}, "exited (executor running)"},
		{"no executor", []engine.Container{agent("alpha", "running")}, "running (no executor)"},
		{"no agent", []engine.Container{executor("alpha", "running")}, "no agent (executor running)"},
		{"all running", []engine.Container{gated("alpha", "running"), executor("alpha", "running"), gate("alpha", "running")}, "running"},
		{"gate killed", []engine.Container{gated("alpha", "running"), executor("alpha", "running"), gate("alpha", "exited")}, "running (gate exited)"},
		{"gate paused", []engine.Container{gated("alpha", "running"), executor("alpha", "running"), gate("alpha", "paused")}, "running (gate paused)"},
		{"executor and gate stopped", []engine.Container{gated("alpha", "running"), executor("alpha", "exited"), gate("alpha", "exited")}, "running (executor exited, gate exited)"},
		{"all stopped", []engine.Container{gated("alpha", "exited"), executor("alpha", "exited"), gate("alpha", "exited")}, "exited"},
		{"no gate", []engine.Container{gated("alpha", "running"), executor("alpha", "running")}, "running (no gate)"},
		{"gate alone", []engine.Container{gate("alpha", "running")}, "no agent (gate running)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t)
			f.snapshots[""] = &engine.Observed{Containers: tc.containers}
			ws := f.open(t)
			if err := ws.Observe(t.Context(), ""); err != nil {
				t.Fatal(err)
			}
			for _, r := range listed(t, ws) {
				if r.Name == "alpha" && r.State != tc.want {
					t.Errorf("state %q, want %q", r.State, tc.want)
				}
			}
		})
	}
}

// A box deleted and made again under its old name is a new box: the old
// one's archives are not its backups. ls, rm and plan name only archives
// made since the box's data volume was (its file name's time, as save
// names it, against the volume's creation time); a box not on any engine
// still shows its newest archive.
func TestBackupsAreOnlyOfTheSameBox(t *testing.T) {
	f := newFleet(t)
	made := time.Date(2026, 12, 2, 12, 0, 0, 500e6, time.UTC)
	f.snapshots[""] = &engine.Observed{
		Containers: []engine.Container{{ID: "a1", Box: "alpha", Service: compose.AgentService, State: "running"}},
		Volumes:    []engine.Volume{{Name: compose.VolumeName("alpha", compose.AgentVolume), Box: "alpha", Created: made}},
	}
	backups := filepath.Join(f.dir, "backups")
	if err := os.MkdirAll(backups, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(backups, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("alpha-20261201-090000" + archive.Ext) // the alpha deleted before
	write("gamma-20261201-090000" + archive.Ext) // gamma is on no engine
	ws := f.open(t)
	if err := ws.Observe(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	last := func() map[string]string {
		out := map[string]string{}
		for _, r := range listed(t, ws) {
			out[r.Name] = r.LastBackup
		}
		return out
	}
	if got := last(); got["alpha"] != "" || got["gamma"] != filepath.Join("backups", "gamma-20261201-090000"+archive.Ext) {
		t.Errorf("last backups %q: alpha's is the old box's, or gamma's is missing", got)
	}
	if got := ws.Backups()["alpha"]; got != "" {
		t.Errorf("plan's backup of alpha is the old box's %s", got)
	}
	if res, _ := ws.Removal("alpha", "", ws.Observed[""].Of("alpha")); res.Backup != nil && *res.Backup != "" {
		t.Errorf("rm's backup of alpha is the old box's %s", *res.Backup)
	}

	// Saved in the second the volume was made: the name's time has no
	// fraction, and the archive is the new box's.
	write("alpha-20261202-120000" + archive.Ext)
	want := filepath.Join("backups", "alpha-20261202-120000"+archive.Ext)
	if got := last(); got["alpha"] != want {
		t.Errorf("alpha's last backup %q, want %s", got["alpha"], want)
	}
	if got := ws.Backups()["alpha"]; got != want {
		t.Errorf("plan's backup of alpha %q, want %s", got, want)
	}
}

// A box whose restore was cut short is not listed as running.
func TestListShowsAnIncompleteRestore(t *testing.T) {
	f := newFleet(t)
	agent := engine.Container{ID: "a", Box: "alpha", Service: compose.AgentService, State: "running"}
	f.snapshots[""] = &engine.Observed{Containers: []engine.Container{agent, executorOf("alpha", "127.0.0.1", 4801)}}
	ws := f.open(t)
	if err := ws.Observe(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, ws)[0].State; got != "running" {
		t.Fatalf("alpha before: %q", got)
	}
	if err := statedir.Beside(ws.Path).Restores().Begin(statedir.Restoring{Box: "alpha", Archive: "backups/a.tar.s2.age"}); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, ws)[0].State; got != "restore incomplete" {
		t.Errorf("alpha with its restore cut short: %q, want restore incomplete", got)
	}
}

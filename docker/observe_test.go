package docker

import (
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

func TestExitCode(t *testing.T) {
	for status, want := range map[string]int{
		"Restarting (127) 3 seconds ago":        127,
		"Exited (0) 2 minutes ago":              0,
		"Exited (137) About an hour ago":        137,
		"Up 5 minutes (healthy)":                0,
		"Up 2 seconds (Paused)":                 0,
		"Created":                               0,
		"Exited (-1) Less than a second ago":    -1,
		"Restarting (1) Less than a second ago": 1,
	} {
		if got := exitCode(status); got != want {
			t.Errorf("exitCode(%q) = %d, want %d", status, got, want)
		}
	}
}

func TestUpSeconds(t *testing.T) {
	for status, want := range map[string]time.Duration{
		"Up Less than a second":                   0,
		"Up 1 second":                             time.Second,
		"Up 9 seconds (health: starting)":         9 * time.Second,
		"Up 2 minutes (healthy)":                  time.Hour,
		"Restarting (127) Less than a second ago": time.Hour,
	} {
		if got := upSeconds(status); got != want {
			t.Errorf("upSeconds(%q) = %v, want %v", status, got, want)
		}
	}
}

func TestParallelCalls(t *testing.T) {
	for url, want := range map[string]int{
		"ssh://me@nexus":              1, // each new connection is an ssh session
		"tcp://10.0.0.5:2376":         -1,
		"unix:///var/run/docker.sock": -1,
	} {
		e := &Engine{Endpoint: Endpoint{URL: url}}
		if got := e.parallelCalls(); got != want {
			t.Errorf("%s: %d calls at once, want %d", url, got, want)
		}
	}
}

// The engine's lists as the planner sees them, no daemon needed: managed
// containers, volumes and networks by box, one-off helpers and everything
// else apart, a snapshot being written marked so, images present or not.
func TestListingObserved(t *testing.T) {
	managed := func(box string, extra ...string) map[string]string {
		l := map[string]string{compose.ManagedLabel: "1", compose.BoxLabel: box, compose.FleetLabel: "team"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	l := Listing{
		Containers: []container.Summary{
			{ID: "c1", Names: []string{"/hbl-alpha-agent-1"}, ImageID: "sha256:img", State: "running", Status: "Up 3 minutes (healthy)",
				Labels: managed("alpha", "com.docker.compose.service", "agent", "com.docker.compose.config-hash", "h1"),
				NetworkSettings: &container.NetworkSettingsSummary{Networks: map[string]*network.EndpointSettings{
					"hbl-alpha_inside": {NetworkID: "n2"}, "hbl-alpha_default": {NetworkID: "n1"}}},
				Mounts: []container.MountPoint{{Type: mount.TypeVolume, Name: "hbl-alpha_data", Destination: "/data"}, {Type: mount.TypeBind, Source: "/x", Destination: "/x"}},
				Ports:  []container.Port{{IP: "127.0.0.1", PublicPort: 32768, PrivatePort: 4788}, {PrivatePort: 9}}},
			{ID: "c2", Names: []string{"/hbl-alpha-executor-1"}, State: "exited", Status: "Exited (137) 2 seconds ago",
				Labels: managed("alpha", "com.docker.compose.service", "executor")},
			{ID: "c3", Names: []string{"/snapper"}, Labels: managed("alpha", compose.OneOffLabel, "1", compose.SnapshotLabel, "before")},
			{ID: "c4", Names: []string{"/someone-elses"}},
		},
		Volumes: []*volume.Volume{
			{Name: "hbl-alpha_data", CreatedAt: "2026-01-02T15:04:05Z", Labels: managed("alpha")},
			{Name: "hbl-alpha_snap-before", Labels: managed("alpha", compose.SnapshotLabel, "before")},
			{Name: "cache"},
		},
		Networks: []network.Summary{{ID: "n1", Name: "hbl-alpha_default", Labels: managed("alpha")}, {ID: "b", Name: "bridge"}},
		Images:   []string{"sha256:img", "sha256:gone"},
		Sizes:    map[string]int64{"sha256:img": 42},
	}
	o := l.Observed("h")
	if o.Host != "h" || len(o.Containers) != 2 || len(o.Volumes) != 1 || len(o.Networks) != 1 || len(o.Snapshots) != 1 {
		t.Fatalf("%+v", o)
	}
	a := o.Containers[0]
	if a.Box != "alpha" || a.Service != "agent" || a.Name != "hbl-alpha-agent-1" || a.Fleet != "team" || a.Health != engine.Healthy || a.ConfigHash != "h1" ||
		!slices.Equal(a.Networks, []string{"hbl-alpha_default", "hbl-alpha_inside"}) || !slices.Equal(a.NetworkIDs, []string{"n1", "n2"}) ||
		len(a.Mounts) != 1 || a.Mounts[0].Volume != "hbl-alpha_data" ||
		len(a.Ports) != 1 || a.Ports[0] != (engine.Port{HostIP: "127.0.0.1", HostPort: 32768, ContainerPort: 4788}) {
		t.Errorf("agent %+v", a)
	}
	if e := o.Containers[1]; e.State != "exited" || e.ExitCode != 137 || e.Health != engine.NoHealth {
		t.Errorf("executor %+v", e)
	}
	if !o.Unmanaged.Containers["snapper"] || !o.Unmanaged.Containers["someone-elses"] || !o.Unmanaged.Volumes["cache"] || !o.Unmanaged.Networks["bridge"] {
		t.Errorf("unmanaged %+v", o.Unmanaged)
	}
	if s := o.Snapshots[0]; s.Label != "before" || !s.Writing {
		t.Errorf("snapshot %+v: its one-off container writes it", s)
	}
	if v := o.Volumes[0]; v.Size != -1 || !v.Created.Equal(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)) {
		t.Errorf("volume %+v", v)
	}
	if !o.Images["sha256:img"] || o.Images["sha256:gone"] || o.ImageSizes["sha256:img"] != 42 || len(o.ImageSizes) != 1 {
		t.Errorf("images %v sizes %v", o.Images, o.ImageSizes)
	}
}

// Docker's states and status texts are read into the contract's typed
// state and health; no workflow reads Docker's words.
func TestStateAndHealthInBoxesTerms(t *testing.T) {
	for _, c := range []struct {
		state  container.ContainerState
		status string
		want   engine.State
		health engine.Health
	}{
		{"running", "Up 2 minutes (healthy)", engine.Running, engine.Healthy},
		{"running", "Up 2 minutes (unhealthy)", engine.Running, engine.Unhealthy},
		{"running", "Up 3 seconds (health: starting)", engine.Running, engine.HealthStarting},
		{"running", "Up 2 minutes", engine.Running, engine.NoHealth},
		{"exited", "Exited (137) 3 seconds ago", engine.Exited, engine.NoHealth},
		{"created", "Created", engine.Created, engine.NoHealth},
		{"paused", "Up 2 minutes (Paused)", engine.Paused, engine.NoHealth},
		{"restarting", "Restarting (1) 2 seconds ago", engine.Restarting, engine.NoHealth},
		{"removing", "Removal In Progress", engine.Removing, engine.NoHealth},
		{"dead", "Dead", engine.Dead, engine.NoHealth},
		{"something new", "", engine.Dead, engine.NoHealth},
	} {
		l := Listing{Containers: []container.Summary{{ID: "c1", Names: []string{"/hbl-alpha-agent-1"}, State: c.state, Status: c.status,
			Labels: map[string]string{"hermes-box-lite": "1", "boxes.box": "alpha", "com.docker.compose.service": "agent"}}}}
		o := l.Observed("")
		if len(o.Containers) != 1 {
			t.Fatalf("%s: %d containers observed", c.state, len(o.Containers))
		}
		if got := o.Containers[0]; got.State != c.want || got.Health != c.health {
			t.Errorf("%s %q: %s, %q; want %s, %q", c.state, c.status, got.State, got.Health, c.want, c.health)
		}
	}
}

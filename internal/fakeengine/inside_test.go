package fakeengine_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/fakeengine"
	"github.com/hermes-box/boxes/spec"
)

// runningBox makes box alpha, started, on the fake local engine of a new
// state file, and returns the engine, its state file and alpha's agent.
func runningBox(t *testing.T) (*fakeengine.Connector, engine.Engine, string, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "boxes.yaml")
	cfg, err := spec.Parse(file, []byte("version: 1\nfleet: main\nboxes:\n  alpha: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "engines.json")
	if err := fakeengine.Edit(state, func(s *fakeengine.State) error { s.AddImage("", image); return nil }); err != nil {
		t.Fatal(err)
	}
	c := &fakeengine.Connector{Path: state}
	e, err := c.Connect(t.Context(), spec.Host{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := compose.Project(compose.Input{Box: cfg.Boxes[0], Image: image, Token: "tok", WorkDir: dir, ConfigFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Create(t.Context(), p, false); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	agent, err := e.ContainerID(t.Context(), "alpha", compose.AgentService)
	if err != nil {
		t.Fatal(err)
	}
	return c, e, state, agent
}

func tarStream(t *testing.T, name, content string) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes())
}

// What the fake cannot do, or a real engine refuses, it refuses with a
// clear error, and the state file is left as it was.
func TestInsideRefusals(t *testing.T) {
	_, e, state, agent := runningBox(t)
	before, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		call func() error
		want string
		is   error
	}{
		{"a tar entry out of the directory", func() error {
			return e.CopyTo(ctx, agent, "/data", tarStream(t, "../escape", "x"))
		}, `tar entry "../escape" leaves the directory it is unpacked in`, nil},
		{"a directory the volume lacks", func() error {
			return e.CopyTo(ctx, agent, "/data/nowhere", tarStream(t, "f", "x"))
		}, "Could not find the file /data/nowhere in container " + agent, nil},
		{"a path outside the volumes", func() error {
			return e.CopyTo(ctx, agent, "/etc", tarStream(t, "f", "x"))
		}, "copying into /etc of " + agent + ", outside its volumes", fakeengine.ErrNotSupported},
		{"a command the fake does not know", func() error {
			_, err := e.Exec(ctx, agent, engine.ExecOptions{Cmd: []string{"ls", "/data"}})
			return err
		}, "running ls /data in " + agent, fakeengine.ErrNotSupported},
		{"cat of a file outside the volumes", func() error {
			_, err := e.Exec(ctx, agent, engine.ExecOptions{Cmd: []string{"cat", "/etc/hostname"}})
			return err
		}, "running cat /etc/hostname in " + agent, fakeengine.ErrNotSupported},
		{"a container that is not there", func() error {
			_, err := e.CopyFrom(ctx, "nosuch", "/data")
			return err
		}, "No such container: nosuch", nil},
	} {
		err := tc.call()
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: %v; want an error with %q", tc.name, err, tc.want)
		}
	}
	after, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("a refused call changed the state file")
	}
}

// A snapshot (a helper container copying one volume into another) carries
// the files streamed into the box's /data.
func TestHelperCarriesFiles(t *testing.T) {
	_, e, state, agent := runningBox(t)
	if err := e.CopyTo(t.Context(), agent, "/data", tarStream(t, "notes", "kept\n")); err != nil {
		t.Fatal(err)
	}
	snap := compose.SnapshotVolumeName("alpha", "one")
	if _, err := e.RunHelper(t.Context(), engine.Helper{Box: "alpha", Image: image, Snapshot: "one", Cmd: []string{"cp", "-a", "/from/.", "/to"},
		Mounts: []engine.HelperMount{
			{Volume: compose.VolumeName("alpha", compose.AgentVolume), Target: "/from", ReadOnly: true},
			{Volume: snap, Target: "/to", Labels: map[string]string{compose.SnapshotLabel: "one"}},
		}}); err != nil {
		t.Fatal(err)
	}
	s, err := fakeengine.Load(state)
	if err != nil {
		t.Fatal(err)
	}
	var files []fakeengine.File
	for _, v := range s.Hosts[""].Volumes {
		if v.Name == snap {
			files = v.Files
		}
	}
	if len(files) != 1 || files[0].Path != "notes" || string(files[0].Data) != "kept\n" {
		t.Errorf("the snapshot volume holds %+v; want notes, as /data holds it", files)
	}
}

// A host gone through one connector is unreachable there, for a new
// connection too, while another connector of the same state still
// reaches it.
func TestGoneThroughOneConnector(t *testing.T) {
	c, e, state, _ := runningBox(t)
	c.Gone("")
	if _, err := e.Observe(t.Context()); !errors.Is(err, engine.ErrUnreachable) {
		t.Errorf("Observe of a host gone: %v; want engine.ErrUnreachable", err)
	}
	if _, err := c.Connect(t.Context(), spec.Host{}); !errors.Is(err, engine.ErrUnreachable) || err.Error() != "the local engine stopped answering: the engine could not be reached" {
		t.Errorf("connecting a host gone: %v", err)
	}
	other, err := (&fakeengine.Connector{Path: state}).Connect(t.Context(), spec.Host{})
	if err != nil {
		t.Fatal(err)
	}
	if o, err := other.Observe(t.Context()); err != nil || len(o.Of("alpha").Containers) != 3 {
		t.Errorf("another connector: %v", err)
	}
}

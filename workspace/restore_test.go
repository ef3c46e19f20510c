package workspace_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// writeArchive writes an archive of box alpha saved from image, sealed
// with passphrase pw, as name beside boxes.yaml.
func writeArchive(t *testing.T, dir, name, image string) {
	t.Helper()
	archive.ScryptWorkFactor = 10
	var data bytes.Buffer
	tw := tar.NewWriter(&data)
	for _, d := range []string{"data/", "data/home/", "data/home/agent/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := archive.PassphraseRecipient("pw")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := archive.Write(f, archive.Manifest{Box: "alpha", Image: image, Writer: "boxes test"}, &data, r); err != nil {
		t.Fatal(err)
	}
}

// Apply checks every archive a plan restores, whole and before any engine
// is reached: the identities asked once, each archive told, and one saved
// from another image than the lock's warned of.
func TestApplyChecksRestoresFirst(t *testing.T) {
	f := newFleet(t)
	writeArchive(t, f.dir, "a"+archive.Ext, "sha256:0123456789abcdef")
	var warnings []string
	f.down = true
	ws, err := workspace.Open(filepath.Join(f.dir, "boxes.yaml"), workspace.Options{
		Connect: f,
		Warn:    func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	warnings = nil // the fleet's implied name
	p := &reconcile.Plan{Image: "sha256:fedcba9876543210", Boxes: []reconcile.BoxPlan{
		{Name: "alpha", Action: reconcile.Create, Restore: "a" + archive.Ext},
		{Name: "beta", Action: reconcile.Create, Restore: "a" + archive.Ext},
	}}
	asked := 0
	var checked []string
	o := workspace.ApplyOptions{
		Identities: func(string) ([]age.Identity, error) {
			asked++
			id, err := archive.PassphraseIdentity("pw")
			return []age.Identity{id}, err
		},
		Checked: func(c backup.Checked) { checked = append(checked, c.Box+" holds "+c.Manifest.Box) },
	}
	err = ws.Apply(context.Background(), p, o)
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("Apply: %v", err)
	}
	if asked != 1 || strings.Join(checked, ", ") != "alpha holds alpha, beta holds alpha" {
		t.Errorf("asked %d times, checked %q", asked, checked)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "was saved from image 0123456789ab; box alpha gets boxes.lock's fedcba987654") {
		t.Errorf("warnings %q", warnings)
	}

	// A bad archive fails the apply before any engine is reached.
	f.connected = nil
	if err := os.WriteFile(filepath.Join(f.dir, "bad"+archive.Ext), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Boxes[1].Restore = "bad" + archive.Ext
	if err := ws.Apply(context.Background(), p, o); err == nil || !strings.Contains(err.Error(), "box beta: restore: ") || len(f.connected) != 0 {
		t.Errorf("bad archive: %v; connected to %q", err, f.connected)
	}
}

// The archives a load restores are named by absolute path in its plan;
// messages name them as the command line shows paths (Options.Shown), as
// the user sees them, not by the absolute path.
func TestApplyNamesArchivesAsShown(t *testing.T) {
	f := newFleet(t)
	bad := filepath.Join(f.dir, "bad"+archive.Ext)
	if err := os.WriteFile(bad, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.down = true
	ws, err := workspace.Open(filepath.Join(f.dir, "boxes.yaml"), workspace.Options{
		Connect: f,
		Shown: func(p string) string {
			if rel, err := filepath.Rel(f.dir, p); err == nil && filepath.IsAbs(p) {
				return rel
			}
			return p
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	p := &reconcile.Plan{Image: "sha256:fedcba9876543210", Boxes: []reconcile.BoxPlan{{Name: "alpha", Action: reconcile.Create, Restore: bad}}}
	err = ws.Apply(context.Background(), p, workspace.ApplyOptions{Identities: func(string) ([]age.Identity, error) {
		id, err := archive.PassphraseIdentity("pw")
		return []age.Identity{id}, err
	}})
	if err == nil || !strings.Contains(err.Error(), "box alpha: restore: bad"+archive.Ext+": ") || strings.Contains(err.Error(), f.dir) {
		t.Errorf("error %v, want the archive named bad%s", err, archive.Ext)
	}
}

package testhost

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/docker/docker/client"
)

// An engine's images come from the local engine once per test process:
// the first engine asked for a set of images streams them (image save into
// image load, about 15 s for the test image on a machine like this one),
// is stopped, its data root is copied aside as that set's template (the
// daemon's state without its networks), and it is started again; every
// later engine asked for the same images starts on a copy of the template
// (a second or two). The images' IDs are checked on every engine either
// way. Engines' identities live outside the data root (their own
// /etc/docker), so each keeps its own engine ID. RemoveTemplates,
// from the test binary's TestMain, removes the templates.
var templates struct {
	sync.Mutex
	dirs map[string]string // by the images' local IDs; each holds data/
}

// RemoveTemplates removes the data-root templates this process made.
func RemoveTemplates() {
	templates.Lock()
	defer templates.Unlock()
	for key, dir := range templates.dirs {
		_ = os.RemoveAll(dir)
		delete(templates.dirs, key)
	}
}

// localImageIDs are the local engine's IDs of refs, in order.
func localImageIDs(ctx context.Context, refs []string) ([]string, error) {
	local, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	defer local.Close()
	var ids []string
	for _, ref := range refs {
		img, err := local.ImageInspect(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("streaming %s: %w", ref, err)
		}
		ids = append(ids, img.ID)
	}
	return ids, nil
}

// imageTemplate is the template holding refs's images, "" when this
// process has none yet, and the key it is found by.
func imageTemplate(refs []string) (dir, key string, ids []string, err error) {
	ids, err = localImageIDs(context.Background(), refs)
	if err != nil {
		return "", "", nil, err
	}
	key = strings.Join(ids, ",")
	templates.Lock()
	defer templates.Unlock()
	return templates.dirs[key], key, ids, nil
}

// seedData makes the engine's data root, before its dockerd first starts,
// a copy of template dir's.
func (e *Engine) seedData(dir string) error {
	if err := copyTree(filepath.Join(dir, "data"), filepath.Join(e.dir, "data")); err != nil {
		return fmt.Errorf("copying the images' template: %w", err)
	}
	return nil
}

// streamImages streams refs from the local engine into this started
// engine, whose data root then becomes the template of key unless another
// engine made one meanwhile.
func (e *Engine) streamImages(refs []string, key string) error {
	for _, ref := range refs {
		if err := e.StreamImage(context.Background(), ref); err != nil {
			return err
		}
	}
	templates.Lock()
	defer templates.Unlock()
	if templates.dirs[key] != "" {
		return nil
	}
	return e.saveTemplate(key, filepath.Join(e.dir, "data"))
}

// saveTemplate stops dockerd, copies its data root aside as key's template
// (without its networks, which each engine makes for itself) and starts
// dockerd again.
func (e *Engine) saveTemplate(key, data string) error {
	e.Stop()
	dir, err := os.MkdirTemp("", "boxes-testhost-images-")
	if err != nil {
		return err
	}
	tmpl := filepath.Join(dir, "data")
	if err := copyTree(data, tmpl); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("copying the images' template: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(tmpl, "network")); err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	if templates.dirs == nil {
		templates.dirs = map[string]string{}
	}
	templates.dirs[key] = dir
	return e.Restart()
}

// checkImages proves the engine holds refs with the local engine's IDs.
func (e *Engine) checkImages(ctx context.Context, refs, ids []string) error {
	for i, ref := range refs {
		got, err := e.apiCache.ImageInspect(ctx, ref)
		if err != nil {
			return fmt.Errorf("loaded %s: %w", ref, err)
		}
		if got.ID != ids[i] {
			return fmt.Errorf("loaded %s as %s, want %s", ref, got.ID, ids[i])
		}
	}
	return nil
}

// copyTree copies the directory from to the new path to, owners, modes,
// times, links and extended attributes kept.
func copyTree(from, to string) error {
	if out, err := exec.Command("cp", "-a", "--reflink=auto", from, to).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a %s: %v: %s", from, err, strings.TrimSpace(string(out)))
	}
	return nil
}

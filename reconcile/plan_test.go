package reconcile

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/spec"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	imgA  = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	imgB  = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	token = "t0k3n"
)

func box(name string, mut ...func(*spec.Box)) spec.Box {
	b := spec.Box{Name: name, State: spec.Running, Settings: spec.Settings{Executor: spec.Executor{Bind: "127.0.0.1"}, Env: map[string]string{}}}
	for _, m := range mut {
		m(&b)
	}
	return b
}

func config(boxes ...spec.Box) *spec.Config {
	return &spec.Config{Path: "/w/boxes.yaml", Version: 1, Boxes: boxes}
}

// existing builds the labelled resources compose would have made for b from image
// with the executor on hostPort (0: created with port auto and given 49153).
func existing(t *testing.T, b spec.Box, image string, state string) Resources {
	t.Helper()
	p, err := compose.Project(compose.Input{Box: b, Image: image, Token: token, WorkDir: "/w", ConfigFile: "/w/boxes.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := compose.ServiceHashes(p)
	if err != nil {
		t.Fatal(err)
	}
	var r Resources
	for _, s := range []string{compose.AgentService, compose.ExecutorService} {
		c := Container{ID: b.Name + "-" + s, Name: compose.ContainerName(b.Name, s), Box: b.Name, Service: s, Image: image, State: state,
			ConfigHash: hashes[s], Labels: map[string]string{compose.SettingsLabel: compose.SettingsJSON(b, s)}}
		if s == compose.ExecutorService {
			port := b.Executor.Port
			if port == 0 {
				port = 49153
			}
			c.Ports = []Port{{HostIP: "127.0.0.1", HostPort: port, ContainerPort: compose.ExecutorPort}}
		}
		r.Containers = append(r.Containers, c)
	}
	for _, v := range []string{compose.AgentVolume, compose.ExecutorVolume} {
		r.Volumes = append(r.Volumes, Volume{Name: compose.VolumeName(b.Name, v), Box: b.Name, Size: -1})
	}
	r.Networks = []Network{{ID: "net-" + b.Name, Name: compose.NetworkName(b.Name), Box: b.Name}}
	return r
}

func observed(rs ...Resources) *Observed {
	o := &Observed{Images: map[string]bool{imgA: true, imgB: true}, Unmanaged: Unmanaged{Containers: map[string]bool{}, Volumes: map[string]bool{}, Networks: map[string]bool{}}}
	for _, r := range rs {
		o.Containers = append(o.Containers, r.Containers...)
		o.Volumes = append(o.Volumes, r.Volumes...)
		o.Networks = append(o.Networks, r.Networks...)
	}
	o.Sort()
	return o
}

func input(cfg *spec.Config, o *Observed) Input {
	tokens := map[string]string{}
	for _, n := range o.Boxes() {
		tokens[n] = token
	}
	return Input{Config: cfg, Image: imgA, Observed: map[string]*Observed{"": o}, Tokens: tokens}
}

func TestPlanActions(t *testing.T) {
	alpha := box("alpha")
	berlin := box("alpha", func(b *spec.Box) { b.Env["TZ"] = "Europe/Berlin" })
	stopped := box("alpha", func(b *spec.Box) { b.State = spec.Stopped })
	cases := []struct {
		name    string
		in      Input
		action  Action
		reasons string
	}{
		{"new", input(config(alpha), observed()), Create, "box is declared and has no resources"},
		{"unchanged", input(config(alpha), observed(existing(t, alpha, imgA, "running"))), NoOp, ""},
		{"stopped, declared running", input(config(alpha), observed(existing(t, alpha, imgA, "exited"))), Start, "state: stopped → running"},
		{"running, declared stopped", input(config(stopped), observed(existing(t, alpha, imgA, "running"))), Stop, "state: running → stopped"},
		{"image", input(config(alpha), observed(existing(t, alpha, imgB, "running"))), Recreate, "image: bbbbbbbbbbbb → aaaaaaaaaaaa"},
		{"env", input(config(berlin), observed(existing(t, alpha, imgA, "running"))), Recreate, "env.TZ: (none) → Europe/Berlin"},
		{"dead", func() Input {
			r := existing(t, alpha, imgA, "running")
			r.Containers[0].State = "dead"
			return input(config(alpha), observed(r))
		}(), Recreate, "container agent is dead"},
		{"missing", func() Input {
			r := existing(t, alpha, imgA, "running")
			r.Containers = r.Containers[:1]
			return input(config(alpha), observed(r))
		}(), Recreate, "container executor is missing"},
		{"replace", func() Input {
			in := input(config(alpha), observed(existing(t, alpha, imgA, "running")))
			in.Replace = map[string]bool{"alpha": true}
			return in
		}(), Recreate, "asked for with --replace"},
		{"undeclared", input(config(), observed(existing(t, alpha, imgA, "running"))), Delete, "box is no longer declared in boxes.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Boxes) != 1 {
				t.Fatalf("boxes %+v", p.Boxes)
			}
			b := p.Boxes[0]
			var reasons []string
			for _, r := range b.Reasons {
				reasons = append(reasons, r.String())
			}
			if b.Action != tc.action || strings.Join(reasons, "; ") != tc.reasons {
				t.Errorf("got %s %q, want %s %q", b.Action, reasons, tc.action, tc.reasons)
			}
		})
	}
}

func TestPlanKeepsAutoPort(t *testing.T) {
	alpha := box("alpha")
	p, err := NewPlan(input(config(alpha), observed(existing(t, alpha, imgB, "running"))))
	if err != nil {
		t.Fatal(err)
	}
	if p.Boxes[0].Action != Recreate || p.Boxes[0].HostPort != 49153 {
		t.Errorf("recreate keeps host port: %+v", p.Boxes[0])
	}
}

func TestPlanErrors(t *testing.T) {
	alpha := box("alpha")
	noImage := input(config(alpha), observed())
	noImage.Image = ""
	missing := input(config(alpha), observed())
	missing.Observed[""].Images[imgA] = false
	conflict := input(config(alpha), observed())
	conflict.Observed[""].Unmanaged.Volumes[compose.VolumeName("alpha", compose.AgentVolume)] = true
	for name, tc := range map[string]struct {
		in   Input
		want error
		text string
	}{
		"no image":      {noImage, ErrNoImage, "boxes.lock has no image"},
		"not on engine": {missing, ErrImageMissing, "lacks aaaaaaaaaaaa"},
		"conflict":      {conflict, ErrUnmanagedConflict, "volume hbl-alpha_agent-data"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewPlan(tc.in)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
}

func TestPlanDeterministicAndTargeted(t *testing.T) {
	in := input(config(box("alpha"), box("beta")), observed(existing(t, box("gamma"), imgA, "running")))
	a, err := NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewPlan(in)
	if !reflect.DeepEqual(a, b) {
		t.Error("same input, different plans")
	}
	in.Target = map[string]bool{"beta": true}
	p, err := NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Boxes) != 1 || p.Boxes[0].Name != "beta" {
		t.Errorf("targeted plan: %+v", p.Boxes)
	}
}

func TestRenderGolden(t *testing.T) {
	alpha := box("alpha")
	gamma := existing(t, box("gamma"), imgA, "running")
	in := input(config(box("alpha", func(b *spec.Box) { b.Env["TZ"] = "Europe/Berlin" }), box("beta"), box("delta")), observed(existing(t, alpha, imgA, "running"), existing(t, box("delta"), imgA, "exited"), gamma))
	in.VolumeSizes = map[string]map[string]int64{"": {"hbl-gamma_agent-data": 12 << 20, "hbl-gamma_exec-data": 4096}}
	in.Backups = map[string]string{"gamma": "backups/gamma-20261202-101500.tar.gz.age"}
	p, err := NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	none, err := NewPlan(input(config(alpha), observed(existing(t, alpha, imgA, "running"))))
	if err != nil {
		t.Fatal(err)
	}
	for name, render := range map[string]func(*bytes.Buffer){
		"plan.txt":        func(w *bytes.Buffer) { p.RenderText(w, false) },
		"plan-colour.txt": func(w *bytes.Buffer) { p.RenderText(w, true) },
		"plan.json":       func(w *bytes.Buffer) { _ = p.RenderJSON(w) },
		"plan.md":         func(w *bytes.Buffer) { p.RenderMarkdown(w) },
		"none.txt":        func(w *bytes.Buffer) { none.RenderText(w, false) },
		"none.md":         func(w *bytes.Buffer) { none.RenderMarkdown(w) },
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			render(&buf)
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./reconcile -update)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs from its golden file:\n%s", name, buf.String())
			}
		})
	}
}

func TestTokens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	s := Tokens{Dir: dir}
	if _, ok, err := s.Get("alpha"); ok || err != nil {
		t.Fatalf("empty store: %v %v", ok, err)
	}
	tok, err := NewToken()
	if err != nil || len(tok) != 64 {
		t.Fatalf("token %q %v", tok, err)
	}
	if other, _ := NewToken(); other == tok {
		t.Error("two tokens alike")
	}
	if err := s.Put("alpha", tok); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.Get("alpha"); got != tok || !ok || err != nil {
		t.Errorf("get = %q %v %v", got, ok, err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Join(dir, "alpha.env")); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", fi.Mode().Perm())
	}
	if err := s.Remove("alpha"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get("alpha"); ok {
		t.Error("removed token still there")
	}
}

func TestApplyLock(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "boxes.yaml")
	first, err := LockApply(cfg, "boxes apply")
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockApply(cfg, "boxes apply")
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "boxes apply (pid") {
		t.Errorf("second lock: %v", err)
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := LockApply(cfg, "boxes apply")
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	again.Unlock()
}

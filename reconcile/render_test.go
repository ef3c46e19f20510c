package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reconcile/ -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n--- got ---\n%s\n--- want ---\n%s", name, path, got, want)
	}
}

// changesPlan has a create (on another host, seeded from an archive), a
// recreate, a start, a delete and a no-op.
func changesPlan(t *testing.T) *reconcile.Plan {
	t.Helper()
	local := emptyObserved()
	edge := &engine.Observed{Host: "edge", Images: map[string]bool{testImage: true}}

	fresh := testBox("alpha")
	fresh.Host = "edge"
	fresh.Restore = "backups/alpha.tar.age"
	// Its door is shown as the new box's attributes; the credential's
	// source, and so its value, never is.
	fresh.Egress = spec.Egress{Mode: spec.EgressList, Allow: []spec.Destination{{Host: "api.anthropic.com"}, {Host: "*.github.com"}}}
	fresh.Private = []spec.Destination{{Prefix: netip.MustParsePrefix("192.168.1.10/32"), Port: 5432}}
	fresh.Credentials = []spec.Credential{{Name: "anthropic", To: spec.Destination{Host: "api.anthropic.com"}, Header: "x-api-key", From: "env:SECRET_SOURCE_NAME"}}

	web := testBox("web")
	observeBox(t, local, web, oldImage, "running", 0)

	idle := testBox("idle")
	observeBox(t, local, idle, testImage, "exited", 0)

	same := testBox("same")
	observeBox(t, local, same, testImage, "running", 0)

	observeBox(t, local, testBox("old"), testImage, "running", 0)

	in := reconcile.Input{
		Config:   testCfg(fresh, idle, same, web),
		Image:    testImage,
		Observed: map[string]*engine.Observed{"": local, "edge": edge},
		Tokens:   map[string]string{"web": testToken, "idle": testToken, "same": testToken},
		Backups:  map[string]string{"old": "backups/old-2026-12-01.tar.age"},
	}
	sizes := reconcile.MeasureDeletes(context.Background(), in, func(string) engine.VolumeSizer {
		return &fakeSizer{sizes: map[string]engine.VolumeSize{
			compose.VolumeName("old", compose.AgentVolume):    {Bytes: 1536 * 1024 * 1024},
			compose.VolumeName("old", compose.ExecutorVolume): {Bytes: 512},
		}}
	})
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	p.SetVolumeSizes(sizes())
	s := p.Summary()
	if s != (reconcile.Summary{Create: 1, Recreate: 1, Start: 1, Delete: 1, NoOp: 1}) {
		t.Fatalf("summary = %+v", s)
	}
	return p
}

func noChangePlan(t *testing.T) *reconcile.Plan {
	t.Helper()
	o := emptyObserved()
	observeBox(t, o, testBox("web"), testImage, "running", 0)
	stopped := testBox("zed")
	stopped.State = spec.Stopped
	observeBox(t, o, stopped, testImage, "exited", 0)
	p, err := reconcile.NewPlan(reconcile.Input{
		Config:   testCfg(testBox("web"), stopped),
		Image:    testImage,
		Observed: obsMap(o),
		Tokens:   map[string]string{"web": testToken, "zed": testToken},
	})
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	if p.Changes() {
		t.Fatalf("plan has changes: %+v", p.Boxes)
	}
	return p
}

func renderAll(t *testing.T, prefix string, p *reconcile.Plan) {
	var buf bytes.Buffer
	p.RenderText(&buf, false)
	golden(t, prefix+".txt", buf.Bytes())

	buf.Reset()
	p.RenderText(&buf, true)
	golden(t, prefix+".colour.txt", buf.Bytes())

	buf.Reset()
	if err := p.RenderJSON(&buf); err != nil {
		t.Fatalf("RenderJSON: %v", err)
	}
	golden(t, prefix+".json", buf.Bytes())
	var back reconcile.JSONPlan
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("JSON does not read back: %v", err)
	}
	if back.FormatVersion != reconcile.FormatVersion || back.Changes != p.Changes() || len(back.Boxes) != len(p.Boxes) {
		t.Errorf("JSON read back = %+v", back)
	}
	// A number, as in every other --json document of boxes.
	var version struct {
		V any `json:"format_version"`
	}
	if err := json.Unmarshal(buf.Bytes(), &version); err != nil {
		t.Fatal(err)
	}
	if _, ok := version.V.(float64); !ok {
		t.Errorf("format_version is %T %v, not a number", version.V, version.V)
	}

	buf.Reset()
	p.RenderMarkdown(&buf)
	golden(t, prefix+".md", buf.Bytes())
}

func TestRenderChanges(t *testing.T) {
	p := changesPlan(t)
	renderAll(t, "changes", p)

	// The new box's door is shown in every form, and where its credential
	// is read never is.
	var forms bytes.Buffer
	p.RenderText(&forms, false)
	if err := p.RenderJSON(&forms); err != nil {
		t.Fatal(err)
	}
	p.RenderMarkdown(&forms)
	p.RenderMarkdownView(&forms, reconcile.MarkdownView{})
	if n := strings.Count(forms.String(), "x-api-key"); n != 4 {
		t.Errorf("the credential's header is shown %d times in the four forms, want 4", n)
	}
	if strings.Contains(forms.String(), "SECRET_SOURCE_NAME") {
		t.Errorf("a plan shows where a credential is read:\n%s", forms.String())
	}

	var buf bytes.Buffer
	p.RenderText(&buf, false)
	if strings.Contains(buf.String(), "\x1b[") {
		t.Error("uncoloured text has escape codes")
	}
	want := "Plan: 1 to create, 1 to recreate, 1 to start, 0 to stop, 1 to delete."
	if got := p.SummaryLine(); got != want {
		t.Errorf("SummaryLine = %q, want %q", got, want)
	}
	if got := p.Deletes(); len(got) != 1 || got[0] != "old" {
		t.Errorf("Deletes = %v", got)
	}
}

func TestRenderNoChanges(t *testing.T) {
	p := noChangePlan(t)
	renderAll(t, "nochanges", p)
	if got := p.SummaryLine(); got != "No changes." {
		t.Errorf("SummaryLine = %q", got)
	}
	var buf bytes.Buffer
	p.RenderText(&buf, false)
	if !strings.HasPrefix(buf.String(), "No changes.") {
		t.Errorf("text = %q", buf.String())
	}
	buf.Reset()
	p.RenderMarkdown(&buf)
	if !strings.Contains(buf.String(), "No changes.") || strings.Contains(buf.String(), "<details>") {
		t.Errorf("markdown = %q", buf.String())
	}
}

func TestRenderTargetNote(t *testing.T) {
	p := &reconcile.Plan{Image: testImage, Target: []string{"a", "b"}}
	var buf bytes.Buffer
	p.RenderText(&buf, false)
	if !strings.Contains(buf.String(), "--target a, b") {
		t.Errorf("text = %q", buf.String())
	}
}

func TestReasonString(t *testing.T) {
	tests := []struct {
		r    reconcile.Reason
		want string
	}{
		{reconcile.Reason{Kind: "image", Old: oldImage, New: testImage}, "image: 222222222222 → 111111111111"},
		{reconcile.Reason{Kind: "config", Field: "env.TZ", Old: "UTC", New: "Europe/Berlin"}, "env.TZ: UTC → Europe/Berlin"},
		{reconcile.Reason{Kind: "config", Field: "env.X", New: "1"}, "env.X: (none) → 1"},
		{reconcile.Reason{Kind: "missing", Service: "executor"}, "container executor is missing"},
		{reconcile.Reason{Kind: "replace"}, "asked for with --replace"},
		{reconcile.Reason{Kind: "mystery"}, "mystery"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestExecutorURL(t *testing.T) {
	tests := []struct {
		bind string
		port int
		want string
	}{
		{"127.0.0.1", 0, ""},
		{"", 8080, "http://127.0.0.1:8080"},
		{"0.0.0.0", 8080, "http://127.0.0.1:8080"},
		{"::", 8080, "http://[::1]:8080"},
		{"10.0.0.5", 9000, "http://10.0.0.5:9000"},
		{"fe80::1", 9000, "http://[fe80::1]:9000"},
	}
	for _, tt := range tests {
		if got := reconcile.ExecutorURL(tt.bind, tt.port); got != tt.want {
			t.Errorf("ExecutorURL(%q, %d) = %q, want %q", tt.bind, tt.port, got, tt.want)
		}
	}
}

package reconcile_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

func destinations(t *testing.T, ss ...string) []spec.Destination {
	t.Helper()
	var out []spec.Destination
	for _, s := range ss {
		d, err := spec.ParseDestination(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// planOne plans b against o and returns b's plan, which must be the only one.
func planOne(t *testing.T, b spec.Box, o *engine.Observed, doors map[string]compose.Door) (*reconcile.Plan, reconcile.BoxPlan) {
	t.Helper()
	p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(b), Image: testImage, Observed: obsMap(o),
		Tokens: map[string]string{b.Name: testToken}, Doors: doors})
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	if len(p.Boxes) != 1 || p.Boxes[0].Name != b.Name {
		t.Fatalf("boxes %+v, want %s alone", p.Boxes, b.Name)
	}
	return p, p.Boxes[0]
}

func reasonTexts(bp reconcile.BoxPlan) []string {
	var out []string
	for _, r := range bp.Reasons {
		out = append(out, r.String())
	}
	return out
}

// observeOldLayout adds box b as boxes made it before the network door: an
// agent and an executor, both on the box's one network, no gate and no
// inside network. Their config hashes are of that older project, not of
// today's.
func observeOldLayout(o *engine.Observed, b spec.Box, state string) {
	for _, svc := range []string{compose.AgentService, compose.ExecutorService} {
		labels := compose.Labels(b.Name)
		labels[compose.SettingsLabel] = compose.SettingsJSON(b, svc)
		c := engine.Container{
			ID:         "id-" + b.Name + "-" + svc,
			Name:       compose.ContainerName(b.Name, svc),
			Box:        b.Name,
			Service:    svc,
			Image:      testImage,
			Fleet:      testFleet,
			State:      engine.State(state),
			ConfigHash: "hash-before-the-door-" + svc,
			Labels:     labels,
			Networks:   []string{compose.NetworkName(b.Name)},
			Mounts:     []engine.Mount{{Volume: compose.VolumeName(b.Name, volumeOf(svc)), Destination: "/data"}},
		}
		if svc == compose.ExecutorService && state == "running" {
			c.Ports = []engine.Port{{HostIP: "127.0.0.1", HostPort: autoPort, ContainerPort: compose.ExecutorPort}}
		}
		o.Containers = append(o.Containers, c)
	}
	for _, v := range []string{compose.AgentVolume, compose.ExecutorVolume} {
		o.Volumes = append(o.Volumes, engine.Volume{Name: compose.VolumeName(b.Name, v), Box: b.Name, Fleet: testFleet, Labels: compose.Labels(b.Name), Size: -1})
	}
	o.Networks = append(o.Networks, engine.Network{ID: "net-" + b.Name, Name: compose.NetworkName(b.Name), Box: b.Name, Fleet: testFleet, Labels: compose.Labels(b.Name)})
}

// A box made before the network door gets it on the next plan: one
// recreate whose only reason is the door. Neither the missing gate, nor the
// agent's and executor's missing inside network, nor their config hashes
// (of the older project) are named beside it.
func TestPlanDoorForABoxMadeBefore(t *testing.T) {
	for _, state := range []string{"running", "exited"} {
		t.Run(state, func(t *testing.T) {
			o := emptyObserved()
			b := testBox("alpha")
			observeOldLayout(o, b, state)
			p, bp := planOne(t, b, o, nil)
			want := []reconcile.Reason{{Kind: "door", New: "open"}}
			if bp.Action != reconcile.Recreate || !reflect.DeepEqual(bp.Reasons, want) {
				t.Fatalf("plan %s %+v, want a recreate for %+v alone", bp.Action, bp.Reasons, want)
			}
			if bp.GateOnly {
				t.Error("the door's recreate is gate-only: the agent must move to the inside network")
			}
			if len(bp.Strays) != 0 || len(bp.StrayNetworks) != 0 {
				t.Errorf("strays %v, networks %v", bp.Strays, bp.StrayNetworks)
			}
			const line = "the network door: the box gets its gate (egress: open, private ranges closed) and the agent moves to a network with no route out"
			if got := bp.Reasons[0].String(); got != line {
				t.Errorf("reason %q, want %q", got, line)
			}
			var text bytes.Buffer
			p.RenderText(&text, false)
			for _, no := range []string{"gate missing", "missing", "disconnected", "config hash", "forces replacement"} {
				if strings.Contains(text.String(), no) {
					t.Errorf("the plan says %q:\n%s", no, text.String())
				}
			}
			if !strings.Contains(text.String(), "# alpha must be replaced") || !strings.Contains(text.String(), line) {
				t.Errorf("the plan does not name the door's recreate:\n%s", text.String())
			}
		})
	}

	// The door's reason says what the gate will let through.
	t.Run("egress none", func(t *testing.T) {
		o := emptyObserved()
		b := testBox("alpha")
		observeOldLayout(o, b, "running")
		b.Egress = spec.Egress{Mode: spec.EgressNone}
		_, bp := planOne(t, b, o, nil)
		if want := []reconcile.Reason{{Kind: "door", New: "none"}}; !reflect.DeepEqual(bp.Reasons, want) {
			t.Errorf("reasons %+v, want %+v", bp.Reasons, want)
		}
	})

	// A box in today's layout gets no door reason, even with its gate gone.
	t.Run("new layout, gate removed", func(t *testing.T) {
		o := emptyObserved()
		b := testBox("alpha")
		observeBox(t, o, b, testImage, "running", 0)
		o.Containers = without(o.Containers, compose.GateService)
		_, bp := planOne(t, b, o, nil)
		want := []reconcile.Reason{{Kind: "missing", Service: compose.GateService}}
		if bp.Action != reconcile.Recreate || !reflect.DeepEqual(bp.Reasons, want) || !bp.GateOnly {
			t.Errorf("plan %s %+v gate only %v, want a gate-only recreate for %+v", bp.Action, bp.Reasons, bp.GateOnly, want)
		}
	})
}

func without(cs []engine.Container, service string) []engine.Container {
	var out []engine.Container
	for _, c := range cs {
		if c.Service != service {
			out = append(out, c)
		}
	}
	return out
}

// A change of egress alone remakes the gate alone, and the plan says what
// was added.
func TestPlanEgressChangeIsGateOnly(t *testing.T) {
	o := emptyObserved()
	observeBox(t, o, testBox("alpha"), testImage, "running", 0) // egress: open
	b := testBox("alpha")
	b.Egress = spec.Egress{Mode: spec.EgressList, Allow: destinations(t, "b.example", "a.example")}
	p, bp := planOne(t, b, o, nil)
	if bp.Action != reconcile.Recreate || !bp.GateOnly {
		t.Fatalf("plan %s gate only %v %+v, want a gate-only recreate", bp.Action, bp.GateOnly, bp.Reasons)
	}
	want := []string{"egress: open → 2 destinations (+ a.example, + b.example)"}
	if got := reasonTexts(bp); !reflect.DeepEqual(got, want) {
		t.Errorf("reasons %q, want %q", got, want)
	}
	var text bytes.Buffer
	p.RenderText(&text, false)
	if !strings.Contains(text.String(), "# alpha's gate must be replaced: the agent keeps running") || strings.Contains(text.String(), "forces replacement") {
		t.Errorf("text:\n%s", text.String())
	}

	// Any other change beside it remakes the whole box.
	b.Env = map[string]string{"TZ": "Europe/Berlin"}
	_, bp = planOne(t, b, o, nil)
	if bp.Action != reconcile.Recreate || bp.GateOnly || len(bp.Reasons) != 2 {
		t.Errorf("egress and env: %s gate only %v %q, want a whole recreate with both reasons", bp.Action, bp.GateOnly, reasonTexts(bp))
	}
}

// observeWithDoor is observeBox for a box whose gate was made with door d:
// its config hash and its credentials label are d's.
func observeWithDoor(t *testing.T, o *engine.Observed, b spec.Box, d compose.Door) {
	t.Helper()
	observeBox(t, o, b, testImage, "running", 0)
	p, err := compose.Project(compose.Input{Box: b, Image: testImage, Token: testToken,
		WorkDir: filepath.Dir(testConfig), ConfigFile: testConfig, Door: d})
	if err != nil {
		t.Fatal(err)
	}
	h, err := compose.ServiceHashes(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range o.Containers {
		if c.Box == b.Name && c.Service == compose.GateService {
			o.Containers[i].ConfigHash = h[compose.GateService]
			o.Containers[i].Labels[compose.CredentialsLabel] = p.Services[compose.GateService].Labels[compose.CredentialsLabel]
			o.Containers[i].Labels[compose.ClosedLabel] = p.Services[compose.GateService].Labels[compose.ClosedLabel]
		}
	}
}

// An address the engine's machine gained after its gate was made is named
// in the plan, which remakes the gate alone to close it; one it lost is
// named too. A gate made before gates recorded what they close is remade
// once, saying why, unless something else remakes it anyway.
func TestPlanMachineAddresses(t *testing.T) {
	b := testBox("alpha")
	was := compose.Door{Closed: []string{"192.0.2.10/32"}}
	o := emptyObserved()
	observeWithDoor(t, o, b, was)

	if _, bp := planOne(t, b, o, map[string]compose.Door{"alpha": was}); bp.Action != reconcile.NoOp {
		t.Errorf("the same addresses: plan %s %q, want no change", bp.Action, reasonTexts(bp))
	}
	for _, c := range []struct {
		name string
		now  []string
		want []string
	}{
		{"gained", []string{"192.0.2.10/32", "198.51.100.77/32"}, []string{"the engine's machine has a new address 198.51.100.77: the gate must close it"}},
		{"gained two", []string{"2001:db8::77/128", "198.51.100.77/32", "192.0.2.10/32"}, []string{"the engine's machine has new addresses 2001:db8::77, 198.51.100.77: the gate must close them"}},
		{"lost", nil, []string{"the engine's machine no longer has address 192.0.2.10: the gate need not close it"}},
		{"both", []string{"198.51.100.77/32"}, []string{
			"the engine's machine has a new address 198.51.100.77: the gate must close it",
			"the engine's machine no longer has address 192.0.2.10: the gate need not close it",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, bp := planOne(t, b, o, map[string]compose.Door{"alpha": {Closed: c.now}})
			if got := reasonTexts(bp); bp.Action != reconcile.Recreate || !bp.GateOnly || !reflect.DeepEqual(got, c.want) {
				t.Errorf("plan %s gate only %v %q, want a gate-only recreate for %q", bp.Action, bp.GateOnly, got, c.want)
			}
			var text bytes.Buffer
			p.RenderText(&text, false)
			if !strings.Contains(text.String(), "the agent keeps running") {
				t.Errorf("the plan does not say the agent keeps running:\n%s", text.String())
			}
		})
	}

	t.Run("with a rule change", func(t *testing.T) {
		changed := b
		changed.Egress = spec.Egress{Mode: spec.EgressNone}
		_, bp := planOne(t, changed, o, map[string]compose.Door{"alpha": {Closed: []string{"192.0.2.10/32", "198.51.100.77/32"}}})
		want := []string{"the engine's machine has a new address 198.51.100.77: the gate must close it", "egress: open → none"}
		if got := reasonTexts(bp); !bp.GateOnly || !reflect.DeepEqual(got, want) {
			t.Errorf("reasons %q gate only %v, want %q", got, bp.GateOnly, want)
		}
	})

	// A gate made by an earlier boxes: no label, and the hash of a service
	// without it.
	old := emptyObserved()
	observeWithDoor(t, old, b, was)
	p, err := compose.Project(compose.Input{Box: b, Image: testImage, Token: testToken,
		WorkDir: filepath.Dir(testConfig), ConfigFile: testConfig, Door: was})
	if err != nil {
		t.Fatal(err)
	}
	delete(p.Services[compose.GateService].Labels, compose.ClosedLabel)
	h, err := compose.ServiceHashes(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range old.Containers {
		if c.Service == compose.GateService {
			delete(old.Containers[i].Labels, compose.ClosedLabel)
			old.Containers[i].ConfigHash = h[compose.GateService]
		}
	}
	t.Run("unrecorded", func(t *testing.T) {
		for _, now := range [][]string{was.Closed, {"192.0.2.10/32", "198.51.100.77/32"}} {
			_, bp := planOne(t, b, old, map[string]compose.Door{"alpha": {Closed: now}})
			want := []string{"the gate does not record which addresses of the engine's machine it closes (made by an earlier boxes): it is remade once to record them"}
			if got := reasonTexts(bp); bp.Action != reconcile.Recreate || !bp.GateOnly || !reflect.DeepEqual(got, want) {
				t.Errorf("machine %v: plan %s gate only %v %q, want %q", now, bp.Action, bp.GateOnly, got, want)
			}
		}
		changed := b
		changed.Egress = spec.Egress{Mode: spec.EgressNone}
		if _, bp := planOne(t, changed, old, map[string]compose.Door{"alpha": was}); !reflect.DeepEqual(reasonTexts(bp), []string{"egress: open → none"}) {
			t.Errorf("an unrecorded gate remade for its rules: %q, want the rule alone", reasonTexts(bp))
		}
	})
}

// A credential's value changed on this machine remakes the gate alone, and
// the plan names the credential without its values.
func TestPlanCredentialValueChanged(t *testing.T) {
	b := testBox("alpha")
	b.Credentials = []spec.Credential{
		{Name: "anthropic", To: destinations(t, "api.anthropic.com")[0], Header: "x-api-key", From: "env:ANTHROPIC_API_KEY"},
		{Name: "github", To: destinations(t, "api.github.com")[0], Header: "Authorization", Prefix: "Bearer ", From: "file:~/.github-token"},
	}
	const oldValue, newValue, github = "sk-old-value-0123456789", "sk-new-value-9876543210", "Bearer ghp-unchanged-value"
	o := emptyObserved()
	observeWithDoor(t, o, b, compose.Door{Secrets: map[string]string{"anthropic": oldValue, "github": github}})

	t.Run("unchanged", func(t *testing.T) {
		_, bp := planOne(t, b, o, map[string]compose.Door{"alpha": {Secrets: map[string]string{"anthropic": oldValue, "github": github}}})
		if bp.Action != reconcile.NoOp {
			t.Errorf("plan %s %q, want no change", bp.Action, reasonTexts(bp))
		}
	})

	t.Run("changed", func(t *testing.T) {
		p, bp := planOne(t, b, o, map[string]compose.Door{"alpha": {Secrets: map[string]string{"anthropic": newValue, "github": github}}})
		want := []reconcile.Reason{{Kind: "credential", Service: compose.GateService, Field: "anthropic"}}
		if bp.Action != reconcile.Recreate || !bp.GateOnly || !reflect.DeepEqual(bp.Reasons, want) {
			t.Fatalf("plan %s gate only %v %+v, want a gate-only recreate for %+v", bp.Action, bp.GateOnly, bp.Reasons, want)
		}
		if got := bp.Reasons[0].String(); got != "credential anthropic: its value changed on this machine" {
			t.Errorf("reason %q", got)
		}
		var text, md bytes.Buffer
		p.RenderText(&text, false)
		p.RenderMarkdown(&md)
		js, err := json.Marshal(p.JSON())
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{text.String(), md.String(), string(js)} {
			for _, v := range []string{oldValue, newValue, "ghp-unchanged"} {
				if strings.Contains(out, v) {
					t.Errorf("a credential's value is in the plan:\n%s", out)
				}
			}
		}
	})

	// A value nobody has on this machine differs from the one the gate has:
	// a gate whose label is unreadable has every value changed.
	t.Run("unreadable label", func(t *testing.T) {
		o := emptyObserved()
		observeWithDoor(t, o, b, compose.Door{Secrets: map[string]string{"anthropic": oldValue, "github": github}})
		for i, c := range o.Containers {
			if c.Service == compose.GateService {
				o.Containers[i].Labels[compose.CredentialsLabel] = "not json"
			}
		}
		_, bp := planOne(t, b, o, map[string]compose.Door{"alpha": {Secrets: map[string]string{"anthropic": oldValue, "github": github}}})
		// The config hash matches, so nothing is planned: the label is
		// only read to name a change the hash has seen.
		if bp.Action != reconcile.NoOp {
			t.Errorf("plan %s %q, want no change while the hash matches", bp.Action, reasonTexts(bp))
		}
		_, bp = planOne(t, b, o, map[string]compose.Door{"alpha": {Secrets: map[string]string{"anthropic": newValue, "github": github}}})
		if got := reasonTexts(bp); !reflect.DeepEqual(got, []string{
			"credential anthropic: its value changed on this machine", "credential github: its value changed on this machine",
		}) || !bp.GateOnly {
			t.Errorf("reasons %q gate only %v, want both credentials named, sorted, gate only", got, bp.GateOnly)
		}
	})
}

// A credential's ca: file whose content changed on this machine remakes
// the gate alone, and the plan says so.
func TestPlanCredentialCAChanged(t *testing.T) {
	b := testBox("alpha")
	b.Credentials = []spec.Credential{{Name: "corp", To: destinations(t, "git.corp.example")[0], Header: "Authorization", From: "env:CORP_TOKEN", CA: "file:corp-ca.pem"}}
	was := compose.Door{Secrets: map[string]string{"corp": "v-0123456789"}, CAs: map[string]string{"corp": "-----BEGIN CERTIFICATE-----\none\n"}}
	o := emptyObserved()
	observeWithDoor(t, o, b, was)
	if _, bp := planOne(t, b, o, map[string]compose.Door{"alpha": was}); bp.Action != reconcile.NoOp {
		t.Errorf("the same CA: plan %s %q, want no change", bp.Action, reasonTexts(bp))
	}
	now := was
	now.CAs = map[string]string{"corp": "-----BEGIN CERTIFICATE-----\ntwo\n"}
	_, bp := planOne(t, b, o, map[string]compose.Door{"alpha": now})
	if got := reasonTexts(bp); bp.Action != reconcile.Recreate || !bp.GateOnly || !reflect.DeepEqual(got, []string{"credential corp: its ca: file changed on this machine"}) {
		t.Errorf("plan %s gate only %v %q, want a gate-only recreate naming the ca: file", bp.Action, bp.GateOnly, got)
	}
}

// ruleChange renders egress and private: each side summed up, then what
// was added (+) and removed (−).
func TestRuleChangeRendering(t *testing.T) {
	for _, c := range []struct {
		field, old, new, want string
	}{
		{"private", "", "192.168.1.10:5432", "private: none → 1 exception (+ 192.168.1.10:5432)"},
		{"private", "10.0.0.0/8, 192.168.1.10:5432", "192.168.1.10:5432", "private: 2 exceptions → 1 exception (− 10.0.0.0/8)"},
		{"private", "10.0.0.0/8", "", "private: 1 exception → none (− 10.0.0.0/8)"},
		{"private", "10.0.0.0/8", "db.lan:5432", "private: 1 exception → 1 exception (+ db.lan:5432, − 10.0.0.0/8)"},
		{"egress", "open", "none", "egress: open → none"},
		{"egress", "", "none", "egress: open → none"},
		{"egress", "none", "a.example", "egress: none → 1 destination (+ a.example)"},
		{"egress", "a.example, b.example", "open", "egress: 2 destinations → open (− a.example, − b.example)"},
		{"egress", "a.example, b.example", "b.example, c.example:443", "egress: 2 destinations → 2 destinations (+ c.example:443, − a.example)"},
	} {
		r := reconcile.Reason{Kind: "config", Field: c.field, Old: c.old, New: c.new}
		if got := r.String(); got != c.want {
			t.Errorf("%s %q → %q: %q, want %q", c.field, c.old, c.new, got, c.want)
		}
	}
}

// A credential added, removed or re-pointed is named by its header,
// destination and source (never a value), and remakes the gate alone.
func TestPlanCredentialDeclarationChanged(t *testing.T) {
	api := spec.Credential{Name: "api", To: destinations(t, "api.example.com")[0], Header: "X-Key", From: "env:API_KEY"}
	moved := api
	moved.To = destinations(t, "api.example.org:8443")[0]
	plain, with, elsewhere := testBox("alpha"), testBox("alpha"), testBox("alpha")
	with.Credentials = []spec.Credential{api}
	elsewhere.Credentials = []spec.Credential{moved}
	door := compose.Door{Secrets: map[string]string{"api": "v-0123456789"}}
	doors := map[string]compose.Door{"alpha": door}
	for _, c := range []struct {
		name       string
		was, now   spec.Box
		wasDoor    compose.Door
		wantReason string
	}{
		{"added", plain, with, compose.Door{}, "credential api added: X-Key to api.example.com from env:API_KEY"},
		{"removed", with, plain, door, "credential api removed (was X-Key to api.example.com from env:API_KEY)"},
		{"moved", with, elsewhere, door, "credential api: X-Key to api.example.com from env:API_KEY → X-Key to api.example.org:8443 from env:API_KEY"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := emptyObserved()
			observeWithDoor(t, o, c.was, c.wasDoor)
			_, bp := planOne(t, c.now, o, doors)
			if got := reasonTexts(bp); bp.Action != reconcile.Recreate || !bp.GateOnly || !reflect.DeepEqual(got, []string{c.wantReason}) {
				t.Errorf("plan %s gate only %v %q, want a gate-only recreate for %q", bp.Action, bp.GateOnly, got, c.wantReason)
			}
		})
	}
}

// A credential whose value cannot be read here (its variable unset in this
// shell) cannot tell whether the gate's value changed: that is no reason,
// so stopping or starting the box needs no credential; a change to the
// gate's rules is still planned (and workspace refuses to make that gate).
func TestPlanCredentialUnread(t *testing.T) {
	b := testBox("alpha")
	b.Credentials = []spec.Credential{{Name: "anthropic", To: destinations(t, "api.anthropic.com")[0], Header: "x-api-key", From: "env:ANTHROPIC_API_KEY"}}
	o := emptyObserved()
	observeWithDoor(t, o, b, compose.Door{Secrets: map[string]string{"anthropic": "sk-made-with-this"}})
	plan := func(b spec.Box) reconcile.BoxPlan {
		p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(b), Image: testImage, Observed: obsMap(o),
			Tokens: map[string]string{b.Name: testToken}, Doors: map[string]compose.Door{"alpha": {Secrets: map[string]string{}}},
			Unread: map[string]bool{"alpha": true}})
		if err != nil {
			t.Fatal(err)
		}
		return p.Boxes[0]
	}
	if bp := plan(b); bp.Action != reconcile.NoOp {
		t.Errorf("unread, unchanged: %s %q, want no change", bp.Action, reasonTexts(bp))
	}
	b.Egress = spec.Egress{Mode: spec.EgressNone}
	if bp := plan(b); bp.Action != reconcile.Recreate || !bp.GateOnly {
		t.Errorf("unread, egress changed: %s gate only %v, want the gate remade", bp.Action, bp.GateOnly)
	}
}

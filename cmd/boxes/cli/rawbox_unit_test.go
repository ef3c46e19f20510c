package cli_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/spec"
)

// rawTestBox sets every box setting that reaches a service field: limits,
// a runtime, a fixed port and bind, env, name servers, egress rules and a
// credential.
func rawTestBox() compose.Input {
	dest := func(s string) spec.Destination {
		d, err := spec.ParseDestination(s)
		if err != nil {
			panic(err)
		}
		return d
	}
	b := spec.Box{Name: "raw", State: spec.Running, Settings: spec.Settings{
		CPUs: 2, Memory: 1 << 30, Runtime: "runc",
		Executor:    spec.Executor{Bind: "127.0.0.1", Port: 18123},
		Env:         map[string]string{"EDITOR": "vi"},
		Egress:      spec.Egress{Mode: spec.EgressList, Allow: []spec.Destination{dest("registry.npmjs.org")}},
		Credentials: []spec.Credential{{Name: "anthropic", To: dest("api.anthropic.com"), Header: "x-api-key", From: "env:K"}},
		DNS:         []netip.Addr{netip.MustParseAddr("192.0.2.53")},
	}}
	return compose.Input{Box: b, Image: "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		Token: "tok", WorkDir: "/srv/boxes", ConfigFile: "/srv/boxes/boxes.yaml",
		Door: compose.Door{Secrets: map[string]string{"anthropic": "sk"}, Closed: []string{"203.0.113.9/32"}}}
}

// TestRawBoxCarriesEveryField: the raw API baseline of BenchmarkApply
// carries every field the generated project sets, on every service,
// network and volume, or names why it leaves it out; a field boxes starts
// to set fails here until the baseline makes it too.
func TestRawBoxCarriesEveryField(t *testing.T) {
	for _, in := range []compose.Input{rawTestBox(), {Box: spec.Box{Name: "plain", State: spec.Running}, Image: "sha256:22", Token: "tok"}} {
		p, err := compose.Project(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, api := range []string{"1.41", "1.44"} {
			r, err := rawSpecOf(p, api)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.containers) != 3 || len(r.networks) != 2 || len(r.volumes) != 2 {
				t.Fatalf("%s: %d containers, %d networks, %d volumes; a box is 3, 2, 2", in.Box.Name, len(r.containers), len(r.networks), len(r.volumes))
			}
			for _, c := range r.containers {
				s := p.Services[c.service]
				keys, err := setKeys(s)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					carried, ok := rawCarried[k]
					switch {
					case ok && !carried(s, c):
						t.Errorf("%s, API %s: %s.%s is set but not carried as it is", in.Box.Name, api, c.service, k)
					case !ok && rawLeftOut[k] == "":
						t.Errorf("%s: %s sets %s, which the raw baseline does not make (carry it in rawContainerOf, or say why not in rawLeftOut)", in.Box.Name, c.service, k)
					}
				}
				if c.name != compose.ContainerName(in.Box.Name, c.service) {
					t.Errorf("container name %s", c.name)
				}
				if api == "1.41" && len(c.net.EndpointsConfig) != 1 {
					t.Errorf("API 1.41: %s is created on %d networks; the engine takes one", c.service, len(c.net.EndpointsConfig))
				}
			}
			for _, n := range p.Networks {
				keys, _ := setKeys(n)
				for _, k := range keys {
					if !slices.Contains(rawNetworkCarried, k) {
						t.Errorf("%s: network %s sets %s, which the raw baseline does not make", in.Box.Name, n.Name, k)
					}
				}
			}
			inside := p.Networks[compose.InsideNetwork]
			for _, n := range r.networks {
				if n.name == inside.Name && (!n.opts.Internal || len(n.opts.Options) == 0) {
					t.Errorf("the inside network %s is made with a route out: %+v", n.name, n.opts)
				}
			}
			for _, v := range p.Volumes {
				keys, _ := setKeys(v)
				for _, k := range keys {
					if !slices.Contains(rawVolumeCarried, k) {
						t.Errorf("%s: volume %s sets %s, which the raw baseline does not make", in.Box.Name, v.Name, k)
					}
				}
			}
		}
	}
}

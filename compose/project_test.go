package compose

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/docker/compose/v2/pkg/api"
	dcompose "github.com/docker/compose/v2/pkg/compose"

	"github.com/hermes-box/boxes/gate"
	"github.com/hermes-box/boxes/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const (
	testImage = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	testToken = "tok-0123456789abcdef0123456789abcdef"
	testDir   = "/srv/boxes"
)

const gib = 1 << 30

// box is a box as spec resolves it from the design's sketch defaults.
func box(name string) spec.Box {
	return spec.Box{
		Name:  name,
		State: spec.Running,
		Settings: spec.Settings{
			CPUs:     2,
			Memory:   4 * gib,
			Executor: spec.Executor{Bind: "127.0.0.1"},
		},
	}
}

func input(b spec.Box) Input {
	return Input{
		Box:        b,
		Image:      testImage,
		Token:      testToken,
		WorkDir:    testDir,
		ConfigFile: testDir + "/boxes.yaml",
	}
}

func mustProject(t *testing.T, in Input) *types.Project {
	t.Helper()
	p, err := Project(in)
	if err != nil {
		t.Fatalf("Project: %v", err)
	}
	return p
}

func mustYAML(t *testing.T, p *types.Project) []byte {
	t.Helper()
	out, err := YAML(p)
	if err != nil {
		t.Fatalf("YAML: %v", err)
	}
	return out
}

func mustHashes(t *testing.T, p *types.Project) map[string]string {
	t.Helper()
	h, err := ServiceHashes(p)
	if err != nil {
		t.Fatalf("ServiceHashes: %v", err)
	}
	return h
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./compose -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test ./compose -update and review the diff)\n--- got\n%s", file, got)
	}
}

// cases are the golden projects; each also runs through the contract checks.
var cases = []struct {
	name string
	in   func() Input
}{
	{"defaults", func() Input { return input(box("alpha")) }},
	{"overrides", func() Input {
		b := box("beta")
		b.CPUs = 4
		b.Memory = 8 * gib
		b.Env = map[string]string{"TZ": "Europe/Berlin", "PROMPT": "$USER@$HOSTNAME"}
		b.Runtime = "runsc"
		b.Executor.Bind = "0.0.0.0"
		return input(b)
	}},
	{"unlimited", func() Input {
		b := box("delta")
		b.CPUs, b.Memory = 0, 0
		return input(b)
	}},
	{"stopped", func() Input {
		b := box("alpha")
		b.State = spec.Stopped
		return input(b)
	}},
	{"fixed-port", func() Input {
		b := box("gamma")
		b.Executor.Port = 8788
		in := input(b)
		in.HostPort = 49153 // a fixed port outranks the one the box had
		return in
	}},
	{"auto-port-kept", func() Input {
		in := input(box("alpha"))
		in.HostPort = 49153
		return in
	}},
	{"door", func() Input { return doorInput(box("epsilon")) }},
	{"executor-door", func() Input {
		in := doorInput(box("zeta"))
		in.Box.Executor.Door = true
		in.Box.Executor.Egress = spec.Egress{Mode: spec.EgressList, Allow: []spec.Destination{
			mustDestination("api.github.com"), mustDestination("*.npmjs.org"), mustDestination("198.51.100.7:8080"),
		}}
		in.Box.Executor.Private = []spec.Destination{mustDestination("10.0.0.0/8:5432")}
		in.HostPort = 49153 // the gate keeps the port the executor had
		return in
	}},
}

// testSecret is a credential's value: it must reach the gate's environment
// and nothing a person is shown.
const testSecret = "sk-live-0123456789abcdef"

// doorInput gives b a door of every kind: a list, a private exception, a
// credential with its value, a name server, and a closed machine address.
func doorInput(b spec.Box) Input {
	b.Egress = spec.Egress{Mode: spec.EgressList, Allow: []spec.Destination{
		mustDestination("registry.npmjs.org"), mustDestination("*.github.com"), mustDestination("198.51.100.7:8080"),
	}}
	b.Private = []spec.Destination{mustDestination("192.168.1.10:5432")}
	b.Credentials = []spec.Credential{{
		Name: "anthropic", To: mustDestination("api.anthropic.com"), Header: "x-api-key", From: "env:ANTHROPIC_API_KEY",
	}}
	b.DNS = []netip.Addr{netip.MustParseAddr("192.0.2.53")}
	in := input(b)
	in.Door = Door{Secrets: map[string]string{"anthropic": testSecret}, Closed: []string{"203.0.113.9/32"}}
	return in
}

func mustDestination(s string) spec.Destination {
	d, err := spec.ParseDestination(s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestGolden(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			golden(t, c.name, mustYAML(t, mustProject(t, c.in())))
		})
	}
}

func TestStateDoesNotChangeTheProject(t *testing.T) {
	running := input(box("alpha"))
	stopped := input(box("alpha"))
	stopped.Box.State = spec.Stopped
	a, b := mustProject(t, running), mustProject(t, stopped)
	if !bytes.Equal(mustYAML(t, a), mustYAML(t, b)) {
		t.Error("a stopped box renders differently from a running one")
	}
	ha, hb := mustHashes(t, a), mustHashes(t, b)
	for s := range ha {
		if ha[s] != hb[s] {
			t.Errorf("%s: hash changes with state", s)
		}
	}
}

// TestContract checks design sections 1 and 8 on every golden project:
// three services, two networks, the agent alone on the inside network with
// the gate as its one way out.
func TestContract(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in()
			name := in.Box.Name
			p := mustProject(t, in)
			want := Labels(name)

			if p.Name != ProjectName(name) {
				t.Errorf("project name %q, want %q", p.Name, ProjectName(name))
			}
			if got := p.ServiceNames(); strings.Join(got, ",") != strings.Join(Services, ",") {
				t.Errorf("services %v, want %v", got, Services)
			}
			for sname, s := range p.Services {
				hasLabels(t, "service "+sname, s.Labels, want)
				if s.Labels[SettingsLabel] != SettingsJSON(in.Box, sname) {
					t.Errorf("%s: settings label %s, want %s", sname, s.Labels[SettingsLabel], SettingsJSON(in.Box, sname))
				}
				if s.Hostname != sname {
					t.Errorf("%s: hostname %q", sname, s.Hostname)
				}
				if s.Image != in.Image {
					t.Errorf("%s: image %q", sname, s.Image)
				}
				if s.PullPolicy != types.PullPolicyNever {
					t.Errorf("%s: pull_policy %q", sname, s.PullPolicy)
				}
				if s.Init == nil || !*s.Init {
					t.Errorf("%s: init not true", sname)
				}
				if s.Restart != types.RestartPolicyUnlessStopped {
					t.Errorf("%s: restart %q", sname, s.Restart)
				}
				if s.Sysctls["net.ipv6.conf.all.disable_ipv6"] != "1" {
					t.Errorf("%s: sysctls %v", sname, s.Sysctls)
				}
				if s.Privileged || s.UseAPISocket || s.NetworkMode != "" || s.Pid != "" || s.Ipc != "" {
					t.Errorf("%s: shares or escalates: privileged=%v api_socket=%v network_mode=%q pid=%q ipc=%q",
						sname, s.Privileged, s.UseAPISocket, s.NetworkMode, s.Pid, s.Ipc)
				}
				if len(s.Devices) != 0 || len(s.CapAdd) != 0 {
					t.Errorf("%s: devices %v cap_add %v", sname, s.Devices, s.CapAdd)
				}
				var nets []string
				for n := range s.Networks {
					nets = append(nets, n)
				}
				slices.Sort(nets)
				wantNets := []string{Network, InsideNetwork}
				switch door := in.Box.Executor.Door; {
				case sname == AgentService:
					wantNets = []string{InsideNetwork}
				case door && sname == ExecutorService:
					// The executor's door: off the network with a route out.
					wantNets = []string{ExecutorNetwork, InsideNetwork}
				case door && sname == GateService:
					wantNets = []string{Network, ExecutorNetwork, InsideNetwork}
				}
				if !slices.Equal(nets, wantNets) {
					t.Errorf("%s: networks %v, want %v", sname, nets, wantNets)
				}
				if got := s.Environment["BOX_NAME"]; got == nil || *got != name {
					t.Errorf("%s: BOX_NAME %v", sname, got)
				}
				if s.Deploy != nil {
					t.Errorf("%s: deploy set; limits belong in cpus/mem_limit", sname)
				}
				for k, v := range map[string]string{
					api.ProjectLabel:     p.Name,
					api.ServiceLabel:     sname,
					api.OneoffLabel:      "False",
					api.WorkingDirLabel:  in.WorkDir,
					api.ConfigFilesLabel: in.ConfigFile,
				} {
					if got, ok := s.CustomLabels[k]; !ok || got != v {
						t.Errorf("%s: compose label %s=%q, want %q", sname, k, got, v)
					}
				}
				if sname == GateService {
					continue // its own contract is below
				}
				if len(s.Volumes) != 1 {
					t.Errorf("%s: %d volumes", sname, len(s.Volumes))
				}
				for _, v := range s.Volumes {
					if v.Type != types.VolumeTypeVolume || v.Bind != nil {
						t.Errorf("%s: volume %+v is not a named volume", sname, v)
					}
					if _, ok := p.Volumes[v.Source]; !ok {
						t.Errorf("%s: volume %q is not the project's", sname, v.Source)
					}
					if v.Target != "/data" {
						t.Errorf("%s: volume at %q", sname, v.Target)
					}
				}
				if len(s.SecurityOpt) != 0 || s.ReadOnly || s.User != "" {
					t.Errorf("%s: security_opt %v read_only %v user %q", sname, s.SecurityOpt, s.ReadOnly, s.User)
				}
				if got := s.Environment[TokenVar]; got == nil || *got != testToken {
					t.Errorf("%s: %s not the token", sname, TokenVar)
				}
				if s.Runtime != in.Box.Runtime {
					t.Errorf("%s: runtime %q, want %q", sname, s.Runtime, in.Box.Runtime)
				}
				if float64(s.CPUS) != in.Box.CPUs || int64(s.MemLimit) != in.Box.Memory {
					t.Errorf("%s: cpus %v mem_limit %v, want %v %v", sname, s.CPUS, s.MemLimit, in.Box.CPUs, in.Box.Memory)
				}
				if s.HealthCheck == nil || strings.Join(s.HealthCheck.Test, " ") != "CMD /usr/local/bin/hb health "+sname {
					t.Errorf("%s: healthcheck %+v", sname, s.HealthCheck)
				}
				if strings.Join(s.Entrypoint, " ") != "/usr/local/bin/hb "+sname {
					t.Errorf("%s: entrypoint %v", sname, s.Entrypoint)
				}
			}
			for vname, v := range p.Volumes {
				hasLabels(t, "volume "+vname, v.Labels, want)
				if v.External || v.Name != VolumeName(name, vname) {
					t.Errorf("volume %s: external=%v name %q", vname, v.External, v.Name)
				}
			}
			if len(p.Volumes) != 2 {
				t.Errorf("volumes %v", p.VolumeNames())
			}
			wantNets := Network + "," + InsideNetwork
			if in.Box.Executor.Door {
				wantNets = Network + "," + ExecutorNetwork + "," + InsideNetwork
			}
			if got := p.NetworkNames(); strings.Join(got, ",") != wantNets {
				t.Errorf("networks %v, want %s", got, wantNets)
			}
			// The network the gate shares with the executor alone is closed as the inside one is.
			if n, ok := p.Networks[ExecutorNetwork]; in.Box.Executor.Door && (n.Name != ExecutorNetworkName(name) || !n.Internal || n.DriverOpts["com.docker.network.bridge.inhibit_ipv4"] != "true") {
				t.Errorf("network %s: name %q internal %v driver_opts %v, want %q internal with inhibit_ipv4", ExecutorNetwork, n.Name, n.Internal, n.DriverOpts, ExecutorNetworkName(name))
			} else if ok != in.Box.Executor.Door {
				t.Errorf("network %s made %v, the executor's door %v", ExecutorNetwork, ok, in.Box.Executor.Door)
			}
			for nname, n := range p.Networks {
				hasLabels(t, "network "+nname, n.Labels, want)
				if n.External {
					t.Errorf("network %s is external", nname)
				}
			}
			if n := p.Networks[Network]; n.Name != NetworkName(name) || n.Internal || len(n.DriverOpts) != 0 {
				t.Errorf("network %s: name %q internal %v driver_opts %v, want %q with a route out", Network, n.Name, n.Internal, n.DriverOpts, NetworkName(name))
			}
			// No route out, and no address of the engine's machine on its
			// bridge: internal alone still answers at the gateway.
			if n := p.Networks[InsideNetwork]; n.Name != InsideNetworkName(name) || !n.Internal || n.DriverOpts["com.docker.network.bridge.inhibit_ipv4"] != "true" {
				t.Errorf("network %s: name %q internal %v driver_opts %v, want %q internal with inhibit_ipv4", InsideNetwork, n.Name, n.Internal, n.DriverOpts, InsideNetworkName(name))
			}

			agent := p.Services[AgentService]
			if len(agent.Ports) != 0 || len(agent.Expose) != 0 {
				t.Errorf("agent publishes %v / exposes %v", agent.Ports, agent.Expose)
			}
			if agent.Volumes[0].Source != AgentVolume {
				t.Errorf("agent mounts %q", agent.Volumes[0].Source)
			}
			for k, v := range in.Box.Env {
				if got := agent.Environment[k]; got == nil || *got != v {
					t.Errorf("agent env %s=%v, want %q", k, got, v)
				}
			}
			for k, v := range agentEnv {
				if got := agent.Environment[k]; got == nil || *got != v {
					t.Errorf("agent env %s=%v, want %q", k, got, v)
				}
			}
			// The agent's tools go through the gate; executor and gate
			// themselves are reached directly.
			for k, v := range map[string]string{
				"HTTP_PROXY": "http://gate:3128", "HTTPS_PROXY": "http://gate:3128",
				"http_proxy": "http://gate:3128", "https_proxy": "http://gate:3128",
				"NO_PROXY": "executor,gate,localhost,127.0.0.1", "no_proxy": "executor,gate,localhost,127.0.0.1",
				"NODE_USE_ENV_PROXY": "1",
			} {
				if got := agent.Environment[k]; got == nil || *got != v {
					t.Errorf("agent env %s=%v, want %q", k, got, v)
				}
			}
			if !slices.Equal(agent.CapDrop, []string{"NET_RAW"}) {
				t.Errorf("agent cap_drop %v, want NET_RAW", agent.CapDrop)
			}
			for _, dep := range []string{ExecutorService, GateService} {
				d, ok := agent.DependsOn[dep]
				if !ok || d.Condition != types.ServiceConditionStarted || d.Restart || !d.Required {
					t.Errorf("agent depends_on %s: %+v (present %v), want started, required, no restart", dep, d, ok)
				}
			}
			if len(agent.DependsOn) != 2 {
				t.Errorf("agent depends_on %v", agent.DependsOn)
			}

			executor := p.Services[ExecutorService]
			if executor.Volumes[0].Source != ExecutorVolume {
				t.Errorf("executor mounts %q", executor.Volumes[0].Source)
			}
			for k := range in.Box.Env {
				if _, ok := executor.Environment[k]; ok {
					t.Errorf("executor gets the box's env %s", k)
				}
			}
			if in.Box.Executor.Door {
				checkExecutorDoor(t, in, executor, p.Services[GateService])
			} else {
				for k := range proxyEnv {
					if _, ok := executor.Environment[k]; ok {
						t.Errorf("executor gets the agent's proxy env %s", k)
					}
				}
				if len(executor.CapDrop) != 0 || len(executor.DependsOn) != 0 {
					t.Errorf("executor cap_drop %v depends_on %v", executor.CapDrop, executor.DependsOn)
				}
				checkPublishes(t, in, "executor", executor)
				if gate := p.Services[GateService]; len(gate.Ports) != 0 {
					t.Errorf("gate publishes %v", gate.Ports)
				}
			}

			checkGate(t, in, p.Services[GateService])

			out := mustYAML(t, p)
			if bytes.Contains(out, []byte(testToken)) {
				t.Error("the token is in the rendered YAML")
			}
			if !bytes.Contains(out, []byte(TokenVar+": "+Redacted)) {
				t.Error("the rendered YAML does not show the token as redacted")
			}
			for _, v := range in.Door.Secrets {
				if bytes.Contains(out, []byte(v)) {
					t.Errorf("a credential's value is in the rendered YAML")
				}
			}
			if bytes.Contains(out, []byte("docker.sock")) {
				t.Error("the Docker socket is in the project")
			}
			if got := p.Services[AgentService].Environment[TokenVar]; got == nil || *got != testToken {
				t.Error("YAML changed the project")
			}
			if got := gateConfig(t, p.Services[GateService]); !reflect.DeepEqual(got, GateConfig(in.Box, in.Door, false)) {
				t.Errorf("YAML changed the gate's configuration in the project: %+v", got)
			}
		})
	}
}

// checkGate is the gate's own contract: boxes' binary as nobody, with no
// capability, no new privileges, a read-only root, no volume, no port, no
// token and no limits, on both networks, configured by BOXES_GATE.
func checkGate(t *testing.T, in Input, g types.ServiceConfig) {
	t.Helper()
	if strings.Join(g.Entrypoint, " ") != GateBinary+" gate" {
		t.Errorf("gate: entrypoint %v", g.Entrypoint)
	}
	if g.User != "65534:65534" {
		t.Errorf("gate: user %q, want 65534:65534", g.User)
	}
	if !slices.Equal(g.CapDrop, []string{"ALL"}) || len(g.CapAdd) != 0 {
		t.Errorf("gate: cap_drop %v cap_add %v, want ALL and none", g.CapDrop, g.CapAdd)
	}
	if !g.ReadOnly {
		t.Error("gate: root not read-only")
	}
	if !slices.Equal(g.SecurityOpt, []string{"no-new-privileges:true"}) {
		t.Errorf("gate: security_opt %v", g.SecurityOpt)
	}
	if len(g.Volumes) != 0 || len(g.Tmpfs) != 0 || len(g.VolumesFrom) != 0 {
		t.Errorf("gate: volumes %v tmpfs %v volumes_from %v, want none", g.Volumes, g.Tmpfs, g.VolumesFrom)
	}
	// It publishes the executor's port when the executor has a door
	// (checkExecutorDoor), nothing else.
	if (len(g.Ports) != 0 && !in.Box.Executor.Door) || len(g.Expose) != 0 {
		t.Errorf("gate: publishes %v / exposes %v", g.Ports, g.Expose)
	}
	if _, ok := g.Environment[TokenVar]; ok {
		t.Error("gate: has the box's token")
	}
	if len(g.Environment) != 2 || g.Environment[gate.ConfigVar] == nil {
		t.Errorf("gate: environment %v, want only %s and BOX_NAME", keys(g.Environment), gate.ConfigVar)
	}
	// The gate runs boxes' own code, not the agent's: the box's limits and
	// runtime are the agent's and the executor's.
	if g.CPUS != 0 || g.MemLimit != 0 || g.Runtime != "" {
		t.Errorf("gate: cpus %v mem_limit %v runtime %q, want none", g.CPUS, g.MemLimit, g.Runtime)
	}
	if len(g.DependsOn) != 0 {
		t.Errorf("gate: depends_on %v", g.DependsOn)
	}
	if g.HealthCheck == nil || strings.Join(g.HealthCheck.Test, " ") != "CMD "+GateBinary+" gate --health" {
		t.Errorf("gate: healthcheck %+v", g.HealthCheck)
	}
	if got, want := gateConfig(t, g), GateConfig(in.Box, in.Door, false); !reflect.DeepEqual(got, want) {
		t.Errorf("gate: %s is %+v, want %+v", gate.ConfigVar, got, want)
	}
	if got, want := g.Labels[CredentialsLabel], credentialDigests(in.Box, in.Door); got != want {
		t.Errorf("gate: %s=%q, want %q", CredentialsLabel, got, want)
	}
	if got, want := g.Labels[ClosedLabel], strings.Join(gateConfig(t, g).Closed, ","); got != want || (len(in.Door.Closed) > 0 && got == "") {
		t.Errorf("gate: %s=%q, want the addresses it closes, %q", ClosedLabel, got, want)
	}
	var dns []string
	for _, a := range in.Box.DNS {
		dns = append(dns, a.String())
	}
	if !slices.Equal(g.DNS, dns) {
		t.Errorf("gate: dns %v, want %v", g.DNS, dns)
	}
	for _, l := range []string{SettingsLabel, CredentialsLabel} {
		for _, v := range in.Door.Secrets {
			if strings.Contains(g.Labels[l], v) {
				t.Errorf("gate: label %s holds a credential's value", l)
			}
		}
	}
}

// gateConfig is the gate's configuration as its environment carries it.
func gateConfig(t *testing.T, g types.ServiceConfig) gate.Config {
	t.Helper()
	v := g.Environment[gate.ConfigVar]
	if v == nil {
		t.Fatalf("gate: no %s", gate.ConfigVar)
	}
	var c gate.Config
	if err := json.Unmarshal([]byte(*v), &c); err != nil {
		t.Fatalf("gate: %s is not JSON: %v", gate.ConfigVar, err)
	}
	return c
}

func hasLabels(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: label %s=%q, want %q", what, k, got[k], v)
		}
	}
}

func TestPrintingWithoutToken(t *testing.T) {
	in := input(box("alpha"))
	in.Token = ""
	p := mustProject(t, in)
	for _, name := range []string{AgentService, ExecutorService} {
		if got := p.Services[name].Environment[TokenVar]; got == nil || *got != Redacted {
			t.Errorf("%s: %s=%v, want the placeholder", name, TokenVar, got)
		}
	}
	if _, ok := p.Services[GateService].Environment[TokenVar]; ok {
		t.Errorf("gate: has %s; the gate holds no token, not even the placeholder", TokenVar)
	}
	withToken := mustYAML(t, mustProject(t, input(box("alpha"))))
	if !bytes.Equal(mustYAML(t, p), withToken) {
		t.Error("a project built without the token renders differently from one with it")
	}
}

// TestPrintingRedactsCredentials: a credential's value reaches the gate's
// environment in the project that is run, and never the YAML a person sees,
// whether the project was built to be run or to be printed.
func TestPrintingRedactsCredentials(t *testing.T) {
	run := doorInput(box("alpha"))
	p := mustProject(t, run)
	creds := gateConfig(t, p.Services[GateService]).Credentials
	if len(creds) != 1 || creds[0].Value != testSecret || creds[0].Host != "api.anthropic.com" || creds[0].Header != "x-api-key" {
		t.Fatalf("the gate to run has credentials %+v, want the value of anthropic", creds)
	}
	shown := mustYAML(t, p)
	if bytes.Contains(shown, []byte(testSecret)) || bytes.Contains(shown, []byte(strings.TrimPrefix(testSecret, "sk-"))) {
		t.Errorf("the credential's value is in the printed YAML:\n%s", shown)
	}
	if !bytes.Contains(shown, []byte(`"value":"`+Redacted+`"`)) { // as BOXES_GATE's JSON spells it, < and > unescaped
		t.Errorf("the printed YAML does not show the credential as redacted:\n%s", shown)
	}
	if got := gateConfig(t, p.Services[GateService]).Credentials[0].Value; got != testSecret {
		t.Errorf("YAML changed the project's credential to %q", got)
	}

	printed := doorInput(box("alpha"))
	printed.Token = ""
	pp := mustProject(t, printed)
	if v := gateConfig(t, pp.Services[GateService]).Credentials[0].Value; v != Redacted {
		t.Errorf("a project built to be printed gives its gate the value %q, want %q", v, Redacted)
	}
	if !bytes.Equal(mustYAML(t, pp), shown) {
		t.Error("a project built without the token renders differently from one with it")
	}
	// The digest names the value without holding it; it is the same
	// whether the project is built to run or to print.
	if pp.Services[GateService].Labels[CredentialsLabel] != p.Services[GateService].Labels[CredentialsLabel] {
		t.Error("the credentials label differs between the printed and the run project")
	}
}

func TestRejects(t *testing.T) {
	for name, mutate := range map[string]func(*Input){
		"no image":          func(in *Input) { in.Image = "" },
		"no name":           func(in *Input) { in.Box.Name = "" },
		"bad name":          func(in *Input) { in.Box.Name = "Not_OK!" },
		"negative port":     func(in *Input) { in.Box.Executor.Port = -1 },
		"kept port too big": func(in *Input) { in.HostPort = 70000 },
		"env HOME":          func(in *Input) { in.Box.Env = map[string]string{"HOME": "/root"} },
		"env token":         func(in *Input) { in.Box.Env = map[string]string{TokenVar: "mine"} },
		"env BOX_NAME":      func(in *Input) { in.Box.Env = map[string]string{"BOX_NAME": "other"} },
		"env EXECUTOR_HOST": func(in *Input) { in.Box.Env = map[string]string{"EXECUTOR_HOST": "http://x"} },
		// The agent's way out is the gate's to say.
		"env HTTPS_PROXY":        func(in *Input) { in.Box.Env = map[string]string{"HTTPS_PROXY": "http://elsewhere:3128"} },
		"env https_proxy":        func(in *Input) { in.Box.Env = map[string]string{"https_proxy": "http://elsewhere:3128"} },
		"env NO_PROXY":           func(in *Input) { in.Box.Env = map[string]string{"NO_PROXY": "*"} },
		"env NODE_USE_ENV_PROXY": func(in *Input) { in.Box.Env = map[string]string{"NODE_USE_ENV_PROXY": "0"} },
	} {
		t.Run(name, func(t *testing.T) {
			in := input(box("alpha"))
			mutate(&in)
			if _, err := Project(in); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestNothingLeaks: the user's environment and files beside boxes.yaml do not
// reach the project, the way they would reach a `docker compose` run there.
func TestNothingLeaks(t *testing.T) {
	clean := mustProject(t, input(box("alpha")))

	dir := t.TempDir()
	for file, content := range map[string]string{
		".env":                        "COMPOSE_PROJECT_NAME=evil\nCOMPOSE_PROFILES=extra\nEXECUTOR_TOKEN=leaked\nTZ=Mars/Olympus\nHOME=/leaked\n",
		"compose.yaml":                "services:\n  extra:\n    image: busybox\n    volumes: ['/var/run/docker.sock:/var/run/docker.sock']\n",
		"docker-compose.override.yml": "services:\n  agent:\n    privileged: true\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]string{
		"COMPOSE_PROJECT_NAME":    "evil",
		"COMPOSE_PROFILES":        "extra",
		"COMPOSE_FILE":            filepath.Join(dir, "compose.yaml"),
		"COMPOSE_ENV_FILES":       filepath.Join(dir, ".env"),
		"DOCKER_DEFAULT_PLATFORM": "linux/s390x",
		"EXECUTOR_TOKEN":          "leaked",
		"TZ":                      "Mars/Olympus",
	} {
		t.Setenv(k, v)
	}
	in := input(box("alpha"))
	in.WorkDir = dir
	in.ConfigFile = filepath.Join(dir, "boxes.yaml")
	p := mustProject(t, in)

	if !bytes.Equal(mustYAML(t, p), mustYAML(t, clean)) {
		t.Errorf("the environment or the directory changed the project:\n%s", mustYAML(t, p))
	}
	hp, hc := mustHashes(t, p), mustHashes(t, clean)
	for s := range hc {
		if hp[s] != hc[s] {
			t.Errorf("%s: hash changed", s)
		}
	}
	if len(p.Environment) != 1 || p.Environment["COMPOSE_PROJECT_NAME"] != p.Name {
		t.Errorf("project environment %v, want only COMPOSE_PROJECT_NAME=%s", p.Environment, p.Name)
	}
	if len(p.Profiles) != 0 || len(p.DisabledServices) != 0 {
		t.Errorf("profiles %v disabled %v", p.Profiles, p.DisabledServices)
	}
}

func TestServiceHashes(t *testing.T) {
	base := func() Input { return input(box("alpha")) }
	ref := mustHashes(t, mustProject(t, base()))
	if len(ref) != 3 || ref[AgentService] == "" || ref[ExecutorService] == "" || ref[GateService] == "" ||
		ref[AgentService] == ref[ExecutorService] || ref[GateService] == ref[AgentService] || ref[GateService] == ref[ExecutorService] {
		t.Fatalf("hashes %v, want three distinct", ref)
	}

	t.Run("stable", func(t *testing.T) {
		in := base()
		in.Box.Env = map[string]string{"A": "1", "B": "2", "C": "3", "D": "4", "E": "5", "F": "6"}
		first := mustHashes(t, mustProject(t, in))
		for range 50 {
			in := base()
			in.Box.Env = map[string]string{"F": "6", "E": "5", "D": "4", "C": "3", "B": "2", "A": "1"}
			got := mustHashes(t, mustProject(t, in))
			for s := range first {
				if got[s] != first[s] {
					t.Fatalf("%s: hash %s then %s for the same input", s, first[s], got[s])
				}
			}
		}
	})

	t.Run("same token same hash", func(t *testing.T) {
		got := mustHashes(t, mustProject(t, base()))
		for s := range ref {
			if got[s] != ref[s] {
				t.Errorf("%s: hash changed with nothing changed", s)
			}
		}
	})

	// which are the services whose hashes must change; the others' must
	// not. The gate carries no token and no limits; the agent and the
	// executor carry none of the door's rules, so a rule change remakes the
	// gate alone.
	const agent, executor, gateSvc = AgentService, ExecutorService, GateService
	withCredential := func(in *Input, value string) {
		in.Box.Credentials = []spec.Credential{{Name: "api", To: mustDestination("api.example.com"), Header: "X-Key", From: "env:API_KEY"}}
		in.Door.Secrets = map[string]string{"api": value}
	}
	for _, c := range []struct {
		name   string
		which  []string
		mutate func(*Input)
	}{
		{"env", []string{agent}, func(in *Input) { in.Box.Env = map[string]string{"TZ": "UTC"} }},
		{"cpus", []string{agent, executor}, func(in *Input) { in.Box.CPUs = 3 }},
		{"memory", []string{agent, executor}, func(in *Input) { in.Box.Memory = 6 * gib }},
		{"runtime", []string{agent, executor}, func(in *Input) { in.Box.Runtime = "runsc" }},
		{"image", []string{agent, executor, gateSvc}, func(in *Input) {
			in.Image = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
		}},
		{"token", []string{agent, executor}, func(in *Input) { in.Token = "another-token" }},
		{"fixed port", []string{executor}, func(in *Input) { in.Box.Executor.Port = 8788 }},
		{"kept port", []string{executor}, func(in *Input) { in.HostPort = 49153 }},
		{"bind", []string{executor}, func(in *Input) { in.Box.Executor.Bind = "0.0.0.0" }},
		{"egress none", []string{gateSvc}, func(in *Input) { in.Box.Egress = spec.Egress{Mode: spec.EgressNone} }},
		{"egress list", []string{gateSvc}, func(in *Input) {
			in.Box.Egress = spec.Egress{Mode: spec.EgressList, Allow: []spec.Destination{mustDestination("a.example")}}
		}},
		{"private", []string{gateSvc}, func(in *Input) { in.Box.Private = []spec.Destination{mustDestination("10.1.2.3:5432")} }},
		{"dns", []string{gateSvc}, func(in *Input) { in.Box.DNS = []netip.Addr{netip.MustParseAddr("192.0.2.53")} }},
		{"credential", []string{gateSvc}, func(in *Input) { withCredential(in, "one") }},
		{"closed address", []string{gateSvc}, func(in *Input) { in.Door.Closed = []string{"203.0.113.9/32"} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.mutate(&in)
			got := mustHashes(t, mustProject(t, in))
			for s := range ref {
				mustChange := slices.Contains(c.which, s)
				if changed := got[s] != ref[s]; changed != mustChange {
					t.Errorf("%s: changed=%v, want %v", s, changed, mustChange)
				}
			}
		})
	}

	// A credential's value on this machine is in the gate's hash (and only
	// there): a new value remakes the gate.
	t.Run("credential value", func(t *testing.T) {
		one, two := base(), base()
		withCredential(&one, "one")
		withCredential(&two, "two")
		h1, h2 := mustHashes(t, mustProject(t, one)), mustHashes(t, mustProject(t, two))
		for s := range h1 {
			if changed := h1[s] != h2[s]; changed != (s == GateService) {
				t.Errorf("%s: changed=%v with the credential's value", s, changed)
			}
		}
	})

	// A credential's CA is in the gate's configuration, and so in its hash
	// alone; its file is named in the settings a plan compares.
	t.Run("credential ca", func(t *testing.T) {
		without, with, other := base(), base(), base()
		for _, in := range []*Input{&without, &with, &other} {
			withCredential(in, "value")
		}
		for in, pem := range map[*Input]string{&with: "-----BEGIN CERTIFICATE-----\none\n", &other: "-----BEGIN CERTIFICATE-----\ntwo\n"} {
			in.Box.Credentials[0].CA = "file:ca.pem"
			in.Door.CAs = map[string]string{"api": pem}
		}
		p := mustProject(t, with)
		if got := gateConfig(t, p.Services[GateService]).Credentials[0].CA; got != with.Door.CAs["api"] {
			t.Errorf("the gate's credential has CA %q", got)
		}
		if got := ServiceSettings(with.Box, GateService)["credentials.api"]; got != "X-Key to api.example.com from env:API_KEY ca file:ca.pem" {
			t.Errorf("the credential's settings: %q", got)
		}
		h0, h1, h2 := mustHashes(t, mustProject(t, without)), mustHashes(t, p), mustHashes(t, mustProject(t, other))
		for s := range h0 {
			if changed := h0[s] != h1[s]; changed != (s == GateService) {
				t.Errorf("%s: changed=%v with a ca:", s, changed)
			}
			if changed := h1[s] != h2[s]; changed != (s == GateService) {
				t.Errorf("%s: changed=%v with the CA file's content", s, changed)
			}
		}
	})

	// Reordering boxes.yaml's lists changes nothing.
	t.Run("rule order", func(t *testing.T) {
		ab, ba := base(), base()
		ab.Box.Egress = spec.Egress{Mode: spec.EgressList, Allow: []spec.Destination{mustDestination("a.example"), mustDestination("b.example:443")}}
		ba.Box.Egress = spec.Egress{Mode: spec.EgressList, Allow: []spec.Destination{mustDestination("b.example:443"), mustDestination("a.example")}}
		if h1, h2 := mustHashes(t, mustProject(t, ab)), mustHashes(t, mustProject(t, ba)); h1[GateService] != h2[GateService] {
			t.Error("the gate's hash depends on the order of egress:")
		}
	})

	t.Run("what compose computes", func(t *testing.T) {
		p := mustProject(t, base())
		want := mustHashes(t, p)
		// What Up does to the project before it hashes: record the image
		// digest among the (unhashed) custom labels.
		for name, s := range p.Services {
			s.CustomLabels.Add(api.ImageDigestLabel, testImage)
			p.Services[name] = s
		}
		for name := range p.Services {
			s, err := p.GetService(name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := dcompose.ServiceHash(s)
			if err != nil {
				t.Fatal(err)
			}
			if got != want[name] {
				t.Errorf("%s: compose computes %s, ServiceHashes says %s", name, got, want[name])
			}
		}
	})

	// ServiceHashes is written here, not called from docker/compose, so that
	// the planner does not link compose's engine: it must equal compose's for
	// every shape of box, and for the fields compose leaves out of the hash.
	t.Run("equals compose's", func(t *testing.T) {
		inputs := []Input{base()}
		for _, mutate := range []func(*Input){
			func(in *Input) { in.Box.Env = map[string]string{"TZ": "Europe/Berlin", "X": "$literal"} },
			func(in *Input) { in.Box.CPUs, in.Box.Memory, in.Box.Runtime = 3, 6*gib, "runsc" },
			func(in *Input) { in.Box.Executor.Port, in.Box.Executor.Bind = 8788, "0.0.0.0" },
			func(in *Input) { in.Box.Private = []spec.Destination{mustDestination("10.1.2.3:5432")} },
			func(in *Input) { withCredential(in, "value") },
			func(in *Input) { in.Box.State = spec.Stopped },
		} {
			in := base()
			mutate(&in)
			inputs = append(inputs, in)
		}
		for i, in := range inputs {
			p := mustProject(t, in)
			// The fields compose leaves out, set, so that leaving them out is checked too.
			s := p.Services[AgentService]
			replicas, scale := 2, 3
			s.Deploy = &types.DeployConfig{Replicas: &replicas}
			s.Build = &types.BuildConfig{Context: "."}
			s.PullPolicy, s.Scale, s.Profiles = types.PullPolicyAlways, &scale, []string{"extra"}
			s.DependsOn = types.DependsOnConfig{ExecutorService: {Condition: types.ServiceConditionStarted}}
			p.Services[AgentService] = s
			want := mustHashes(t, p)
			for name, s := range p.Services {
				got, err := dcompose.ServiceHash(s)
				if err != nil {
					t.Fatal(err)
				}
				if got != want[name] {
					t.Errorf("input %d, %s: compose computes %s, ServiceHashes says %s", i, name, got, want[name])
				}
			}
		}
	})

	t.Run("does not change the project", func(t *testing.T) {
		p := mustProject(t, base())
		s := p.Services[AgentService]
		replicas := 1
		s.Deploy = &types.DeployConfig{Replicas: &replicas}
		p.Services[AgentService] = s
		mustHashes(t, p)
		if p.Services[AgentService].Deploy.Replicas == nil {
			t.Error("ServiceHashes cleared deploy.replicas of the project")
		}
	})
}

// published is the host port the executor must be published on: the box's
// fixed port, else the one it keeps, else none (Docker picks).
func published(in Input) string {
	switch {
	case in.Box.Executor.Port != 0:
		return strconv.Itoa(in.Box.Executor.Port)
	case in.HostPort != 0:
		return strconv.Itoa(in.HostPort)
	}
	return ""
}

// The fleet label is on every container, volume and network, yet no config
// hash sees it: a box made before fleets existed is not recreated for it.
func TestFleetLabelOutsideHashes(t *testing.T) {
	b := box("web")
	plain := mustProject(t, input(b))
	b.Fleet = "team-a"
	fleet := mustProject(t, input(b))
	want := map[string]string{FleetLabel: "team-a"}
	for name, s := range fleet.Services {
		hasLabels(t, "service "+name, s.CustomLabels, want)
	}
	for name, v := range fleet.Volumes {
		hasLabels(t, "volume "+name, v.CustomLabels, want)
	}
	for name, n := range fleet.Networks {
		hasLabels(t, "network "+name, n.CustomLabels, want)
	}
	if a, b := mustHashes(t, plain), mustHashes(t, fleet); len(a) != len(Services) || !maps.Equal(a, b) {
		t.Errorf("service hashes changed with the fleet: %v → %v", a, b)
	}
	for name := range fleet.Networks {
		h1, _ := dcompose.NetworkHash(ptr(plain.Networks[name]))
		h2, _ := dcompose.NetworkHash(ptr(fleet.Networks[name]))
		if h1 != h2 {
			t.Errorf("network %s hash changed with the fleet", name)
		}
	}
	for name := range fleet.Volumes {
		h1, _ := dcompose.VolumeHash(plain.Volumes[name])
		h2, _ := dcompose.VolumeHash(fleet.Volumes[name])
		if h1 != h2 {
			t.Errorf("volume %s hash changed with the fleet", name)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Every volume of a box is the engine's default, local, with no options
// and not external: a restore's room is measured on a fresh local volume
// of the same engine (docker's VolumeRoom), which holds only while the
// box's volumes live where every local volume does.
func TestVolumesAreLocalDefaults(t *testing.T) {
	for _, b := range []spec.Box{box("web"), func() spec.Box { b := box("web"); b.Pool = "scratch"; return b }()} {
		p := mustProject(t, input(b))
		if len(p.Volumes) == 0 {
			t.Fatal("no volumes")
		}
		for name, v := range p.Volumes {
			if (v.Driver != "" && v.Driver != "local") || len(v.DriverOpts) > 0 || bool(v.External) {
				t.Errorf("volume %s: driver %q, options %v, external %v", name, v.Driver, v.DriverOpts, v.External)
			}
		}
	}
}

// docker compose interpolates what it reads: the printed project escapes
// every "$" so that it reads back as the box's own values.
func TestYAMLEscapesDollars(t *testing.T) {
	b := box("web")
	b.Env = map[string]string{"PRICE": "5$", "REF": "${HOME}", "PLAIN": "$USER and $$"}
	out := mustYAML(t, mustProject(t, input(b)))
	back, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  testDir,
		ConfigFiles: []types.ConfigFile{{Filename: "compose.yaml", Content: out}},
		Environment: types.Mapping{"HOME": "/home/someone", "USER": "someone"},
	}, func(o *loader.Options) { o.SetProjectName(ProjectName("web"), true) })
	if err != nil {
		t.Fatalf("docker compose's loader refuses the printed project: %v", err)
	}
	env := back.Services[AgentService].Environment
	for k, want := range b.Env {
		if got := env[k]; got == nil || *got != want {
			t.Errorf("env %s reads back as %v, want %q", k, got, want)
		}
	}
	settings := back.Services[AgentService].Labels[SettingsLabel]
	if !strings.Contains(settings, `"env.REF":"${HOME}"`) {
		t.Errorf("settings label reads back as %s", settings)
	}
}

// checkPublishes checks that s publishes the executor's port where in says.
func checkPublishes(t *testing.T, in Input, what string, s types.ServiceConfig) {
	t.Helper()
	if len(s.Ports) != 1 {
		t.Fatalf("%s ports %v", what, s.Ports)
	}
	port := s.Ports[0]
	wantPublished := published(in)
	if port.Target != ExecutorPort || port.Protocol != "tcp" || port.HostIP != in.Box.Executor.Bind || port.Published != wantPublished {
		t.Errorf("%s port %+v, want %s:%s->%d/tcp", what, port, in.Box.Executor.Bind, wantPublished, ExecutorPort)
	}
}

// checkExecutorDoor checks the executor's door: the executor publishes
// nothing, cannot forge packets, and sends its tools to the gate's executor
// side, which the gate answers for on the executor's network alone; the
// gate publishes the executor's port and relays it; the gate's
// configuration carries the executor's own rules.
func checkExecutorDoor(t *testing.T, in Input, executor, g types.ServiceConfig) {
	t.Helper()
	if len(executor.Ports) != 0 || len(executor.Expose) != 0 {
		t.Errorf("executor behind the gate publishes %v / exposes %v", executor.Ports, executor.Expose)
	}
	if !slices.Equal(executor.CapDrop, []string{"NET_RAW"}) || len(executor.DependsOn) != 0 {
		t.Errorf("executor cap_drop %v depends_on %v, want NET_RAW and none", executor.CapDrop, executor.DependsOn)
	}
	names := "agent,executor,gate,exec-gate,localhost,127.0.0.1"
	for k, v := range map[string]string{
		"HTTP_PROXY": "http://exec-gate:3130", "HTTPS_PROXY": "http://exec-gate:3130",
		"http_proxy": "http://exec-gate:3130", "https_proxy": "http://exec-gate:3130",
		"NO_PROXY": names, "no_proxy": names, "NODE_USE_ENV_PROXY": "1",
	} {
		if got := executor.Environment[k]; got == nil || *got != v {
			t.Errorf("executor env %s=%v, want %q", k, got, v)
		}
	}
	if n := g.Networks[ExecutorNetwork]; n == nil || !slices.Equal(n.Aliases, []string{ExecutorGate}) {
		t.Errorf("gate on %s: %+v, want alias %s", ExecutorNetwork, n, ExecutorGate)
	}
	for _, other := range []string{Network, InsideNetwork} {
		if n := g.Networks[other]; n != nil && slices.Contains(n.Aliases, ExecutorGate) {
			t.Errorf("gate is %s on %s too", ExecutorGate, other)
		}
	}
	checkPublishes(t, in, "gate", g)
	if g.Labels[HostPortLabel] != strconv.Itoa(in.HostPort) && in.Box.Executor.Port == 0 && in.HostPort != 0 {
		t.Errorf("gate: %s=%q, want the kept port %d", HostPortLabel, g.Labels[HostPortLabel], in.HostPort)
	}
	cfg, err := gate.ParseConfig([]byte(*g.Environment[gate.ConfigVar]))
	if err != nil {
		t.Fatalf("the gate's configuration: %v", err)
	}
	s := cfg.Executor
	if s == nil || s.Egress != in.Box.Executor.Egress.Mode.String() || len(s.Allow) != len(in.Box.Executor.Egress.Allow) ||
		len(s.Private) != len(in.Box.Executor.Private) || s.Listen != ExecutorGate || s.Relay != "executor:4788" {
		t.Errorf("the gate's executor side %+v, want the box's executor rules %+v", s, in.Box.Executor)
	}
	for _, svc := range []string{ExecutorService, GateService} {
		if !HasExecutorDoor(map[string]string{SettingsLabel: SettingsJSON(in.Box, svc)}) {
			t.Errorf("%s's settings do not record the executor's door", svc)
		}
	}
}

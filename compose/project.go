package compose

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/spec"
)

// Input is everything one box's project is made from.
type Input struct {
	Box spec.Box
	// Image is the exact image ID from boxes.lock, "sha256:…".
	Image string
	// Token is the box's bearer token. "" only when the project is built to be
	// printed: the containers then get Redacted, which no Executor accepts.
	Token string
	// HostPort is the host port to publish Executor on when Box.Executor.Port
	// is 0 (auto): 0 lets Docker pick one; non-zero keeps the port a box
	// already has across a recreate.
	HostPort int
	// WorkDir is the directory of boxes.yaml (compose's working_dir label).
	WorkDir string
	// ConfigFile is the path of boxes.yaml (compose's config_files label).
	ConfigFile string
	// Door is what the gate is made with besides boxes.yaml.
	Door Door
}

// Redacted stands in for the token wherever a project is shown to a person.
const Redacted = "<redacted>"

const (
	// HB is the in-image helper: the entrypoint of both services.
	HB = "/usr/local/bin/hb"
	// dataDir is where each service's volume is mounted.
	dataDir = "/data"
	// AgentHome is the agent user's home, inside the agent volume so it is
	// saved and restored with the box.
	AgentHome = dataDir + "/home/agent"
	// boxNameVar tells the processes of both containers which box they are.
	boxNameVar = "BOX_NAME"
	// stopGrace is how long a container gets between SIGTERM and SIGKILL.
	stopGrace = "10s"
)

// agentEnv is the agent's fixed environment: every tool's state under the
// agent volume, and the way to Executor over the box's private network.
var agentEnv = map[string]string{
	"EXECUTOR_HOST":     "http://" + ExecutorService + ":" + strconv.Itoa(ExecutorPort),
	"HOME":              AgentHome,
	"CLAUDE_CONFIG_DIR": AgentHome + "/.claude",
	"CODEX_HOME":        AgentHome + "/.codex",
	"HERMES_HOME":       AgentHome + "/.hermes",
	"XDG_CONFIG_HOME":   AgentHome + "/.config",
	"XDG_DATA_HOME":     AgentHome + "/.local/share",
	"XDG_STATE_HOME":    AgentHome + "/.local/state",
	"XDG_CACHE_HOME":    AgentHome + "/.cache",
}

// Project returns the compose project of one box, named ProjectName(box), as
// compose-go's loader normalises it: what `docker compose up` would run, with
// the labels the compose CLI would add so the library finds its containers.
func Project(in Input) (*types.Project, error) {
	if err := check(in); err != nil {
		return nil, err
	}
	project, err := loaded(in)
	if err != nil {
		return nil, fmt.Errorf("composing box %s: %w", in.Box.Name, err)
	}
	return finish(in, project), nil
}

// finish adds to a project as loaded what the compose CLI adds to its
// own, and the fleet's labels.
func finish(in Input, project *types.Project) *types.Project {
	if in.ConfigFile != "" {
		project.ComposeFiles = []string{in.ConfigFile}
	}
	// The fleet label rides outside the config hashes (CustomLabels are not
	// serialised): a box made before fleets existed keeps its containers, and
	// compose never sees its network or volumes as diverged.
	fleet := FleetLabels(in.Box.Fleet)
	if in.Box.Pool != "" {
		fleet[PoolLabel] = in.Box.Pool
	}
	for svc, s := range project.Services {
		s.CustomLabels = composeLabels(project, svc)
		maps.Copy(s.CustomLabels, fleet)
		project.Services[svc] = s
	}
	for k, v := range project.Volumes {
		v.CustomLabels = maps.Clone(fleet)
		project.Volumes[k] = v
	}
	for k, n := range project.Networks {
		n.CustomLabels = maps.Clone(fleet)
		project.Networks[k] = n
	}
	return project
}

// composeLabels are the labels the compose CLI (ToProject) adds to every
// service and the library needs to find and converge its containers, but
// compose's version, which the Docker engine adds (it is the linked
// library's). They stay out of the config hash (CustomLabels are not
// serialised).
func composeLabels(p *types.Project, service string) types.Labels {
	return types.Labels{
		ComposeProjectLabel:     p.Name,
		ComposeServiceLabel:     service,
		ComposeWorkingDirLabel:  p.WorkingDir,
		ComposeConfigFilesLabel: strings.Join(p.ComposeFiles, ","),
		ComposeOneoffLabel:      "False",
	}
}

// check refuses an Input no project is made of.
func check(in Input) error {
	name := in.Box.Name
	if name == "" {
		return errors.New("composing a box: the box has no name")
	}
	if in.Image == "" {
		return fmt.Errorf("composing box %s: no image", name)
	}
	for _, port := range []int{in.Box.Executor.Port, in.HostPort} {
		if port < 0 || port > 65535 {
			return fmt.Errorf("composing box %s: host port %d out of range", name, port)
		}
	}
	for k := range in.Box.Env {
		if reserved(k) {
			return fmt.Errorf("composing box %s: env %s is set by boxes and cannot be overridden", name, k)
		}
	}
	return nil
}

// loadModel runs the model through compose-go's loader so its defaults and
// normalisation apply exactly as for a compose file, while nothing of the
// process environment or of the disk can reach the project: the environment
// is empty, there is no .env or env_file, and interpolation is off because the
// model holds literal values (a "$" in a box's env stays a "$"). Without
// validate the model is not checked against compose's schema, which
// ServiceHashesOf has checked on a box of the same shape.
func loadModel(in Input, m map[string]any, validate bool) (*types.Project, error) {
	loads.Add(1)
	details := types.ConfigDetails{
		WorkingDir:  in.WorkDir,
		ConfigFiles: []types.ConfigFile{{Filename: in.ConfigFile, Config: m}},
		Environment: types.Mapping{},
	}
	return loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName(ProjectName(in.Box.Name), true)
		o.SkipInterpolation = true
		o.SkipInclude = true
		o.SkipExtends = true
		o.SkipValidation = !validate
	})
}

// model is the box as a compose file would spell it, the way the loader reads
// YAML: maps are map[string]any, lists []any, numbers int or float64.
func model(in Input) map[string]any {
	b := in.Box
	labels := func() map[string]any { return anyMap(Labels(b.Name)) }
	token := in.Token
	if token == "" {
		token = Redacted
	}

	agent := service(in, token, AgentService, AgentVolume)
	env := agent["environment"].(map[string]any)
	for k, v := range b.Env {
		env[k] = v
	}
	for k, v := range agentEnv {
		env[k] = v
	}
	for k, v := range proxyEnv {
		env[k] = v
	}
	// The agent is on the inside network alone, and cannot forge packets
	// onto it: its one way out is the gate.
	agent["networks"] = map[string]any{InsideNetwork: nil}
	agent["cap_drop"] = []any{"NET_RAW"}
	// Executor and gate are made first, so that a create refused at the
	// agent's (its name taken) finds them made, and removes them. They are
	// started all at once all the same (docker's Engine.Start): nothing in
	// the agent's start needs them, apply waits for all three to answer,
	// and an ordered start costs a whole container start here
	// (docs/decisions.md). Not restart: a recreated executor or gate must
	// not take the agent's tmux sessions down with it.
	started := map[string]any{
		"condition": types.ServiceConditionStarted,
		"restart":   false,
		"required":  true,
	}
	agent["depends_on"] = map[string]any{ExecutorService: started, GateService: started}
	// No tty or stdin_open: `boxes enter` runs tmux through `docker exec -it`,
	// which gets a terminal of its own. A tty on PID 1 would only merge the
	// agent's stderr into stdout and put carriage returns into its logs.

	executor := service(in, token, ExecutorService, ExecutorVolume)
	executor["networks"] = map[string]any{Network: nil, InsideNetwork: nil}
	executor["ports"] = []any{executorPort(b, in.HostPort)}
	networks := map[string]any{
		Network:       map[string]any{"labels": labels()},
		InsideNetwork: insideNetwork(labels()),
	}
	if b.Executor.Door {
		executorDoor(executor)
		networks[ExecutorNetwork] = insideNetwork(labels())
	}

	return map[string]any{
		"services": map[string]any{
			AgentService:    agent,
			ExecutorService: executor,
			GateService:     gateService(in),
		},
		"volumes": map[string]any{
			AgentVolume:    map[string]any{"labels": labels()},
			ExecutorVolume: map[string]any{"labels": labels()},
		},
		"networks": networks,
	}
}

// service is what the agent and the executor share: boxes' image running
// hb as role, health-checked by hb, with its /data volume, on the box's
// network, and the box's runtime and limits.
func service(in Input, token, role, volume string) map[string]any {
	b := in.Box
	s := map[string]any{
		// The hostname is the role: box names need not be valid
		// hostnames, and BOX_NAME tells the guest which box it is.
		"hostname":    role,
		"image":       in.Image,
		"pull_policy": types.PullPolicyNever,
		"entrypoint":  []any{HB, role},
		"init":        true,
		"restart":     types.RestartPolicyUnlessStopped,
		"sysctls":     map[string]any{"net.ipv6.conf.all.disable_ipv6": "1"},
		"labels":      serviceLabels(b, role, in.HostPort),
		"environment": map[string]any{TokenVar: token, boxNameVar: b.Name},
		"healthcheck": map[string]any{
			"test":         []any{"CMD", HB, "health", role},
			"interval":     "10s",
			"timeout":      "5s",
			"retries":      3,
			"start_period": "30s",
		},
		"volumes": []any{map[string]any{
			"type":   types.VolumeTypeVolume,
			"source": volume,
			"target": dataDir,
		}},
		"networks":          map[string]any{Network: nil},
		"stop_grace_period": stopGrace,
	}
	if b.Runtime != "" {
		s["runtime"] = b.Runtime
	}
	// cpus and mem_limit are what the create path turns into
	// HostConfig.NanoCPUs and HostConfig.Memory; deploy.resources would
	// do the same but is swarm's vocabulary.
	if b.CPUs > 0 {
		s["cpus"] = b.CPUs
	}
	if b.Memory > 0 {
		s["mem_limit"] = int(b.Memory)
	}
	return s
}

// executorPort publishes the executor's port: on boxes.yaml's port, else
// on the one the engine chose before (hostPort), else on one it chooses.
func executorPort(b spec.Box, hostPort int) map[string]any {
	port := map[string]any{
		"target":    ExecutorPort,
		"host_ip":   b.Executor.Bind,
		"protocol":  "tcp",
		"published": "",
	}
	switch {
	case b.Executor.Port != 0:
		port["published"] = strconv.Itoa(b.Executor.Port)
	case hostPort != 0:
		port["published"] = strconv.Itoa(hostPort)
	default:
		delete(port, "published")
	}
	if b.Executor.Bind == "" {
		delete(port, "host_ip")
	}
	return port
}

// reserved reports whether boxes itself sets the environment variable k.
func reserved(k string) bool {
	_, fixed := agentEnv[k]
	_, proxy := proxyEnv[k]
	return fixed || proxy || k == TokenVar || k == boxNameVar
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// serviceLabels are the resource labels plus the declared settings, which a
// plan reads back to name what changed.
func serviceLabels(b spec.Box, service string, keptPort int) map[string]any {
	l := anyMap(Labels(b.Name))
	l[SettingsLabel] = SettingsJSON(b, service)
	// A stopped container lists no published port; this label still tells a
	// plan which auto-assigned port a recreate pinned.
	if service == PortService(b) && keptPort != 0 && b.Executor.Port == 0 {
		l[HostPortLabel] = strconv.Itoa(keptPort)
	}
	return l
}

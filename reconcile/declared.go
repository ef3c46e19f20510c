package reconcile

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/par"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// NewPlan decides one action per box. It is pure: the same input gives the same plan.
func NewPlan(in Input) (*Plan, error) {
	if in.Config == nil {
		return nil, errors.New("no boxes.yaml")
	}
	p := &Plan{Image: in.Image}
	for name := range in.Target {
		p.Target = append(p.Target, name)
	}
	sort.Strings(p.Target)

	declared := map[string]spec.Box{}
	needsImage := map[string]bool{}
	for _, b := range in.Config.Boxes {
		declared[b.Name] = b
		if in.targeted(b.Name) {
			needsImage[b.Host] = true
		}
	}
	for name := range in.Target {
		if _, ok := declared[name]; ok {
			continue
		}
		if !observedAnywhere(in.Observed, in.Config.Fleet, name) {
			return nil, fmt.Errorf("--target %s: no such box in boxes.yaml or on any engine", name)
		}
	}
	if err := imageReachable(in, needsImage); err != nil {
		return nil, err
	}
	if err := conflicts(in, declared); err != nil {
		return nil, err
	}
	if err := heldByOtherFleets(in); err != nil {
		return nil, err
	}
	fleet := in.Config.Fleet

	holders := holdersOf(in.Observed)
	planned, err := planEach(in.Config.Boxes, func(b spec.Box) (BoxPlan, bool, error) {
		if !in.targeted(b.Name) {
			return BoxPlan{}, false, nil
		}
		if other, found := observedElsewhere(in.Observed, holders, fleet, b.Name, b.Host); found {
			bp, err := planMove(in, b, other)
			return bp, true, err
		}
		bp, err := planDeclared(in, b)
		if err != nil {
			return bp, true, fmt.Errorf("planning %s: %w", b.Name, err)
		}
		return bp, true, nil
	})
	if err != nil {
		return nil, err
	}
	p.Boxes = append(p.Boxes, planned...)

	for _, d := range deletions(in) {
		p.Boxes = append(p.Boxes, planDelete(in, d.host, d.name, d.r))
	}
	sort.Slice(p.Boxes, func(i, j int) bool { return p.Boxes[i].Name < p.Boxes[j].Name })
	if err := MissingRuntime(in.Config, in.Observed, p.Boxes); err != nil {
		return nil, err
	}
	if err := OverHost(in.Config, in.Observed, p.Boxes); err != nil {
		return nil, err
	}
	images, err := imageTransfers(in, p.Boxes)
	if err != nil {
		return nil, err
	}
	p.Images = images
	if len(in.Target) == 0 {
		p.Pools = poolPlans(in, p)
		p.LeasedKept = leasedKept(in)
	}
	return p, nil
}

// imageReachable fails unless every host in hosts (those of the boxes
// planned) was observed and has the lock's image or can get it: from
// another host that has it, or from its registry (imageTransfers).
func imageReachable(in Input, hosts map[string]bool) error {
	if len(hosts) == 0 {
		return nil
	}
	if in.Image == "" {
		return ErrNoImage
	}
	sorted := make([]string, 0, len(hosts))
	for host := range hosts {
		sorted = append(sorted, host)
	}
	sort.Strings(sorted) // the same error for the same input
	_, haveSource := imageSource(in)
	for _, host := range sorted {
		o := in.Observed[host]
		if o == nil {
			return fmt.Errorf("host %q was not observed", host)
		}
		if !o.Images[in.Image] && !haveSource && in.ImageRef == "" {
			return imageMissing(host, in.Image)
		}
	}
	return nil
}

type deletion struct {
	host, name string
	r          engine.Resources
}

// deletions are the boxes a plan deletes: undeclared, targeted, and carrying
// this fleet's label. Another fleet's box is none of this fleet's business,
// and one made before fleets existed is left to boxes rm.
func deletions(in Input) []deletion {
	declared := map[string]bool{}
	for _, b := range in.Config.Boxes {
		declared[b.Name] = true
	}
	fleet := in.Config.Fleet
	hosts := make([]string, 0, len(in.Observed))
	for h := range in.Observed {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var out []deletion
	for _, host := range hosts {
		o := in.Observed[host]
		for _, name := range o.Boxes() {
			if declared[name] || !in.targeted(name) {
				continue
			}
			r := o.Of(name)
			if !r.Owned(fleet) || r.HeldBy(fleet) != "" {
				continue
			}
			if o.Leases(fleet)[name].Held() {
				continue // leased: deleted by its reset (see LeasedKept)
			}
			out = append(out, deletion{host, name, r})
		}
	}
	return out
}

func planDeclared(in Input, b spec.Box) (BoxPlan, error) {
	bp := BoxPlan{Name: b.Name, Host: b.Host, State: b.State}
	var r engine.Resources
	if o := in.Observed[b.Host]; o != nil {
		r = o.Of(b.Name)
	}
	restoring, incomplete := in.Restoring[b.Name]
	if incomplete && restoring.Host != b.Host {
		incomplete = false // left on a host the box has left: not this box's
	}
	if r.Empty() {
		bp.Action = Create
		bp.Reasons = []Reason{{Kind: "new"}}
		bp.Door = DoorOf(b.Settings)
		switch {
		case incomplete:
			seedFrom(restoring, &bp)
			bp.Reasons = append(bp.Reasons, seedAgain(restoring))
		case b.Restore != "":
			bp.Restore = b.Restore
			bp.Reasons = append(bp.Reasons, Reason{Kind: "restore", New: b.Restore})
		case b.From != "":
			bp.From = b.From
			bp.Reasons = append(bp.Reasons, Reason{Kind: "fork", New: b.From})
		}
		if bp.From != "" {
			if err := forkSource(in, b.Host, bp.From); err != nil {
				return bp, err
			}
		}
		return bp, nil
	}
	if incomplete {
		return planUnfinished(in, b, r, bp, restoring)
	}
	frozen := in.Frozen[b.Name] && len(r.Containers) > 0

	if b.Executor.Port == 0 {
		bp.HostPort = boxHostPort(r)
	}
	reasons, err := recreateReasons(in, b, r, bp.HostPort)
	if err != nil {
		return bp, err
	}
	if len(reasons) > 0 && leased(in, b) {
		bp.Held = reasons
		return planState(b, r, bp, frozen), nil
	}
	strayNets, onStray := StrayNetworks(b.Name, r)
	if len(strayNets) > 0 {
		for _, name := range []string{compose.NetworkName(b.Name), compose.InsideNetworkName(b.Name)} {
			if n := countNamed(strayNets, name); n > 0 {
				reasons = append(reasons, Reason{Kind: "networks", Old: name, New: strconv.Itoa(n + 1)})
			}
		}
	}
	if len(reasons) > 0 {
		bp.Action = Recreate
		bp.Reasons = reasons
		bp.GateOnly = GateOnly(reasons)
		bp.ExecutorAndGate = ExecutorDoorOnly(reasons)
		bp.StrayNetworks = strayNets
		for _, c := range r.Containers {
			if (HasKind(reasons, "duplicate") && c.Name != compose.ContainerName(b.Name, c.Service)) || onStray[c.ID] {
				bp.Strays = append(bp.Strays, NamedID{Name: c.Name, ID: c.ID})
			}
		}
		if frozen {
			bp.Reasons = append(bp.Reasons, Reason{Kind: "frozen"})
		}
		return bp, nil
	}

	return planState(b, r, bp, frozen), nil
}

// planUnfinished plans box b whose restore from an archive (or fork) was
// cut short: it never runs on part of its data, and is seeded again from
// the same archive (or box). With no container yet (the cut came before
// compose made them) that is a create over the volumes already there; with
// containers, a recreate.
func planUnfinished(in Input, b spec.Box, r engine.Resources, bp BoxPlan, restoring statedir.Restoring) (BoxPlan, error) {
	seedFrom(restoring, &bp)
	if bp.From != "" {
		if err := forkSource(in, b.Host, bp.From); err != nil {
			return bp, err
		}
	}
	if len(r.Containers) == 0 {
		bp.Action = Create
		bp.Reasons = []Reason{seedAgain(restoring)}
		bp.Door = DoorOf(b.Settings)
		return bp, nil
	}
	reasons, err := recreateReasons(in, b, r, 0)
	if err != nil && !errors.Is(err, ErrVolumeMissing) {
		return bp, err
	}
	bp.Action = Recreate
	bp.Reasons = append([]Reason{seedAgain(restoring)}, withoutKind(reasons, "nocontainers")...)
	bp.Strays = strays(b.Name, r, reasons)
	return bp, nil
}

// planState plans box b, whose containers are as declared, into its
// declared state: started, stopped, or left alone. A frozen box (a save
// died with it paused) is started or stopped with that said.
func planState(b spec.Box, r engine.Resources, bp BoxPlan, frozen bool) BoxPlan {
	switch {
	case b.State == spec.Running:
		reasons := startReasons(r)
		if frozen {
			reasons = append(reasons, Reason{Kind: "frozen"})
		}
		if len(reasons) > 0 {
			bp.Action, bp.Reasons = Start, reasons
			bp.GateOnly = GateOnly(reasons)
			return bp
		}
	case anyRunning(r):
		bp.Action = Stop
		bp.Reasons = []Reason{{Kind: "state", Old: string(spec.Running), New: string(spec.Stopped)}}
		if frozen {
			bp.Reasons = append(bp.Reasons, Reason{Kind: "frozen"})
		}
		return bp
	}
	bp.Action = NoOp
	return bp
}

// strays are the containers of a box to remove before recreating it: those
// an interrupted recreate left beside the ones with their service's name.
func strays(box string, r engine.Resources, reasons []Reason) []NamedID {
	if !HasKind(reasons, "duplicate") {
		return nil
	}
	var out []NamedID
	for _, c := range r.Containers {
		if c.Name != compose.ContainerName(box, c.Service) {
			out = append(out, NamedID{Name: c.Name, ID: c.ID})
		}
	}
	return out
}

func withoutKind(rs []Reason, kind string) []Reason {
	var out []Reason
	for _, r := range rs {
		if r.Kind != kind {
			out = append(out, r)
		}
	}
	return out
}

// startReasons say why a box declared running needs a start: containers
// stopped (by boxes stop or docker compose stop), created by an apply that
// was cut short before it started them, or paused. A box whose agent is
// stopped is a box stopped; a container stopped beside an agent that runs
// (a gate killed) is named, for it alone is started.
func startReasons(r engine.Resources) []Reason {
	var reasons []Reason
	for _, service := range compose.Services {
		c, _ := r.Container(service)
		switch c.State {
		case engine.Created:
			reasons = append(reasons, Reason{Kind: "created", Service: service})
		case engine.Paused:
			reasons = append(reasons, Reason{Kind: "paused", Service: service})
		case engine.Exited:
			reasons = append(reasons, Reason{Kind: "stopped", Service: service, ExitCode: c.ExitCode})
		}
	}
	if agent, _ := r.Container(compose.AgentService); HasKind(reasons, "stopped") && !agent.State.Alive() {
		reasons = append([]Reason{{Kind: "state", Old: string(spec.Stopped), New: string(spec.Running)}}, withoutKind(reasons, "stopped")...)
	}
	return reasons
}

func anyRunning(r engine.Resources) bool {
	for _, c := range r.Containers {
		if c.State.Alive() {
			return true
		}
	}
	return false
}

// Troubled reports whether a container is restarting or exited with a code
// that a stop does not give, so that observing reads its restart count.
func Troubled(c engine.Container) bool {
	return c.State == engine.Restarting || (c.State == engine.Exited && !stopExit(c.ExitCode))
}

// stopExit reports whether code is what a container stopped from outside
// exits with: 0 (clean), 130, 137, 143 (SIGINT, SIGKILL, SIGTERM from
// docker stop, compose stop or boxes stop). Anything else, an OOM kill or a
// start error, is a crash.
func stopExit(code int) bool {
	return code == 0 || code == 130 || code == 137 || code == 143
}

// crashReason is the reason a container of a box declared running must be
// replaced because it crashed, if it did.
func crashReason(c engine.Container) (Reason, bool) {
	r := Reason{Service: c.Service, ExitCode: c.ExitCode, Restarts: c.Restarts}
	switch {
	case c.OOMKilled:
		r.Old = "killed for lack of memory"
	case c.Error != "":
		r.Old = c.Error
	}
	switch {
	case c.State == engine.Restarting:
		r.Kind = "restarting"
	case c.State == engine.Exited && (c.OOMKilled || c.Error != "" || !stopExit(c.ExitCode)):
		r.Kind = "exited"
	default:
		return Reason{}, false
	}
	return r, true
}

// planEach plans each box of boxes with one, in parallel (a box's plan
// reads the input and writes nothing shared). The plans keep the boxes'
// order; of the boxes that fail, the first's error is returned, as a loop
// would.
func planEach(boxes []spec.Box, one func(spec.Box) (BoxPlan, bool, error)) ([]BoxPlan, error) {
	type result struct {
		bp  BoxPlan
		ok  bool
		err error
	}
	results := make([]result, len(boxes))
	par.Each(len(boxes), func(i int) {
		r := &results[i]
		r.bp, r.ok, r.err = one(boxes[i])
	})
	var out []BoxPlan
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		if r.ok {
			out = append(out, r.bp)
		}
	}
	return out, nil
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/reconcile"
)

// doctorCheck is one finding; its JSON is hb doctor's, plus where it was made.
type doctorCheck struct {
	Where    string `json:"where"` // host or box
	Name     string `json:"name"`
	OK       bool   `json:"ok"`
	Severity string `json:"severity"` // ok, warn or error
	Detail   string `json:"detail"`
}

type doctorReport struct {
	Box    string        `json:"box"`
	OK     bool          `json:"ok"`
	Checks []doctorCheck `json:"checks"`
}

func (r *doctorReport) add(where, name, severity, format string, args ...any) {
	r.Checks = append(r.Checks, doctorCheck{Where: where, Name: name, OK: severity != "error", Severity: severity, Detail: fmt.Sprintf(format, args...)})
}

func newDoctorCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor NAME",
		Short: "Check a box from the host and from inside (hb doctor); exit 1 on a problem",
		Args:  exactlyOne("doctor", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := observedWorkspace(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer ws.close()
			rep, err := doctor(cmd.Context(), ws, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(env.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printDoctor(env, rep)
			}
			if !rep.OK {
				return &ExitError{Code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	return cmd
}

// doctor checks box name as ws last observed it.
func doctor(ctx context.Context, ws *workspace, name string) (*doctorReport, error) {
	e, agent, err := ws.container(name, compose.AgentService, false)
	if err != nil {
		return nil, err
	}
	rep := &doctorReport{Box: name}
	r := ws.observed[e.Host].Of(name)
	executor, haveExecutor := r.Container(compose.ExecutorService)

	for _, c := range []struct {
		service string
		c       reconcile.Container
		ok      bool
	}{{compose.AgentService, agent, true}, {compose.ExecutorService, executor, haveExecutor}} {
		switch {
		case !c.ok:
			rep.add("host", c.service+" container", "error", "missing (boxes apply recreates it)")
		case c.c.State != "running":
			rep.add("host", c.service+" container", "error", "%s (boxes start %s)", c.c.State, name)
		default:
			rep.add("host", c.service+" container", "ok", "running, %s", c.c.Name)
		}
		if c.ok {
			checkImage(rep, ws, c.service, c.c)
		}
	}
	if published := publishedPorts(agent); published != "" {
		rep.add("host", "agent publishes nothing", "error", "publishes %s", published)
	} else {
		rep.add("host", "agent publishes nothing", "ok", "no port")
	}
	if haveExecutor && executor.State == "running" {
		checkExecutorPort(ctx, rep, ws, e.Host, name, executor)
	}
	if agent.State == "running" {
		checkInBox(ctx, rep, e, agent)
	}
	rep.OK = true
	for _, c := range rep.Checks {
		rep.OK = rep.OK && c.OK
	}
	return rep, nil
}

func checkImage(rep *doctorReport, ws *workspace, service string, c reconcile.Container) {
	switch want := ws.image(); {
	case want == "":
		rep.add("host", service+" image", "warn", "boxes.lock has no image to compare with")
	case c.Image != want:
		rep.add("host", service+" image", "error", "runs %s, boxes.lock has %s (boxes apply recreates it)", short(c.Image), short(want))
	default:
		rep.add("host", service+" image", "ok", "the lock's %s", short(want))
	}
}

func publishedPorts(c reconcile.Container) string {
	var b bytes.Buffer
	for _, p := range c.Ports {
		if p.HostPort != 0 {
			fmt.Fprintf(&b, "%s:%d->%d ", p.HostIP, p.HostPort, p.ContainerPort)
		}
	}
	return string(bytes.TrimSpace(b.Bytes()))
}

// checkExecutorPort checks the executor is published where boxes.yaml says
// and speaks MCP there: 200 and a protocol version with the token, 401 without.
func checkExecutorPort(ctx context.Context, rep *doctorReport, ws *workspace, host, name string, c reconcile.Container) {
	port, ok := c.Published(compose.ExecutorPort)
	if !ok {
		rep.add("host", "executor port", "error", "%d is not published", compose.ExecutorPort)
		return
	}
	detail := port.HostIP + ":" + strconv.Itoa(port.HostPort)
	if b, ok := ws.cfg.Box(name); ok && b.Executor.Bind != "" && b.Executor.Bind != port.HostIP {
		rep.add("host", "executor port", "error", "published on %s, boxes.yaml says %s (boxes plan shows the recreate)", detail, b.Executor.Bind)
	} else {
		rep.add("host", "executor port", "ok", "published on %s", detail)
	}
	if host != "" {
		// A remote host's published address need not be reachable from
		// here; the in-box handshake covers the Executor.
		rep.add("host", "mcp handshake", "warn", "box on host %s: checked from inside the box only", host)
		return
	}
	url := reconcile.ExecutorURL(port.HostIP, port.HostPort) + "/mcp"
	token, ok, err := ws.tokens.Get(name)
	switch {
	case err != nil:
		rep.add("host", "mcp with token", "error", "reading the token: %v", err)
	case !ok:
		rep.add("host", "mcp with token", "error", "no token in .boxes/secrets (boxes plan recovers it from the box)")
	default:
		if err := docker.Initialize(ctx, url, token); err != nil {
			rep.add("host", "mcp with token", "error", "initialize at %s: %v", url, err)
		} else {
			rep.add("host", "mcp with token", "ok", "initialize at %s answered with a protocol version", url)
		}
	}
	var status *docker.StatusError
	err = docker.Initialize(ctx, url, "")
	switch {
	case errors.As(err, &status) && status.Code == http.StatusUnauthorized:
		rep.add("host", "mcp without token", "ok", "refused with 401")
	case err == nil:
		rep.add("host", "mcp without token", "error", "answered without a token")
	default:
		rep.add("host", "mcp without token", "error", "want 401, got: %v", err)
	}
}

// checkInBox runs hb doctor --json in the agent container and takes its checks.
func checkInBox(ctx context.Context, rep *doctorReport, e *docker.Engine, agent reconcile.Container) {
	out, stderr, code, err := runHB(ctx, e, agent.ID, agentUser, "doctor", "--json")
	if err != nil {
		rep.add("box", "hb doctor", "error", "could not run: %v", err)
		return
	}
	var inner struct {
		OK     bool          `json:"ok"`
		Checks []doctorCheck `json:"checks"`
	}
	if err := json.Unmarshal(out, &inner); err != nil || len(inner.Checks) == 0 {
		rep.add("box", "hb doctor", "error", "exit %d without a report: %s", code, stderr)
		return
	}
	for _, c := range inner.Checks {
		c.Where = "box"
		rep.Checks = append(rep.Checks, c)
	}
	if inner.OK != (code == 0) {
		rep.add("box", "hb doctor", "error", "exit %d disagrees with its report (ok=%v)", code, inner.OK)
	}
}

func printDoctor(env *Env, rep *doctorReport) {
	for _, c := range rep.Checks {
		label := map[string]string{"ok": "ok", "warn": "warn"}[c.Severity]
		if label == "" {
			label = "FAIL"
		}
		fmt.Fprintf(env.Out, "%-4s  %-4s  %-26s %s\n", label, c.Where, c.Name, c.Detail)
	}
	if rep.OK {
		fmt.Fprintf(env.Out, "box %s is healthy\n", rep.Box)
	} else {
		fmt.Fprintf(env.Out, "box %s has problems (FAIL lines above)\n", rep.Box)
	}
}

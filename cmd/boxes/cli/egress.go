package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	egress "github.com/hermes-box/boxes/gate"
	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// EgressFormat is the format_version of egress --json.
const EgressFormat = 1

// egressReport is egress --json: the box's effective rules and its gate's
// recent refusals.
type egressReport struct {
	FormatVersion int              `json:"format_version"`
	Box           string           `json:"box"`
	Host          string           `json:"host"` // boxes.yaml's name, "" for the local engine (as ls --json)
	Gate          string           `json:"gate"` // the gate container's state, "missing" without one
	Current       bool             `json:"current"`
	Egress        string           `json:"egress"` // open, none or list
	Allow         []string         `json:"allow"`
	Private       []string         `json:"private"`
	Closed        []string         `json:"closed"`
	Credentials   []egressCred     `json:"credentials"`
	Machine       egressMachine    `json:"machine"`
	Refusals      []egress.Refusal `json:"refusals"`
	// Executor is the executor's side: its own rules when it has a door.
	Executor egressExecutor `json:"executor"`
}

// egressExecutor is the executor's side of egress --json.
type egressExecutor struct {
	// Door is false for an executor that reaches out by itself (no
	// executor: egress: in boxes.yaml): no rule of the gate applies to it.
	Door bool `json:"door"`
	// Egress is open, none or list with a door; "" without.
	Egress  string   `json:"egress"`
	Allow   []string `json:"allow"`
	Private []string `json:"private"`
	// Refusals are the gate's recent refusals of the executor's requests.
	Refusals []egress.Refusal `json:"refusals"`
}

// egressMachine is the engine's machine as the box's gate closes it.
type egressMachine struct {
	// Addresses are its public addresses now (CIDRs), every one of which
	// the gate must close.
	Addresses []string `json:"addresses"`
	// Exposed are those the gate leaves open: the machine gained them after
	// the gate was made, and the agent reaches the machine there until
	// boxes apply remakes the gate.
	Exposed []string `json:"exposed"`
	// Status is closed, exposed, or unknown: no gate, or one made by an
	// earlier boxes, which does not record what it closes.
	Status string `json:"status"`
}

type egressCred struct {
	Name   string `json:"name"`
	To     string `json:"to"`
	Header string `json:"header"`
	From   string `json:"from"`
	Route  string `json:"route"` // where the agent sends HTTPS requests for the gate to carry
}

func newEgressCommand(env *Env) *cobra.Command {
	var asJSON, resolve bool
	var last int
	var check string
	cmd := &cobra.Command{
		Use:   "egress NAME",
		Short: "Show what box NAME may reach, and what its gate refused lately",
		Long: `Show box NAME's network door: the destinations its agent may reach through
the gate (egress:), the private ranges the gate closes and the exceptions
(private:), the credentials the gate adds (names and sources, never values)
and the gate's most recent refusals: when, the destination, and the rule
that refused it. When a tool in the box fails to reach something, this says
whether the gate stopped it and why.

With --check URL, say before anything runs whether the box's gate lets a
request for URL through, and which entry of boxes.yaml decides: the gate's
own proxy answers, in this process, from boxes.yaml and the addresses of
the engine's machine; nothing is sent and the box need not exist. A name
is not resolved unless --resolve resolves it here (the gate resolves it
again when the request is made). Exit 0 allowed, 1 refused, 2 no answer
(a bad URL, a box boxes.yaml does not declare).

  boxes egress alpha
  boxes egress alpha --json --last 100
  boxes egress alpha --check https://api.anthropic.com/v1/messages`,
		Args: checkArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("check") {
				if cmd.Flags().Changed("last") {
					return &ExitError{Code: checkBad, Err: errLastWithCheck}
				}
				return runCheck(cmd, env, args[0], check, resolve, asJSON)
			}
			if resolve {
				return errors.New("--resolve goes with --check URL")
			}
			if last < 1 || last > 10000 {
				return fmt.Errorf("--last %d: give a number of refusals from 1 to 10000", last)
			}
			return inWorkspace(env, func(ws *workspace.Workspace) error {
				r, err := egressOf(cmd, ws, args[0], last)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(env, r)
				}
				return writeEgress(env.Out, r)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, fmt.Sprintf("print the rules and refusals as JSON (format_version %d); with --check, the answer (format_version %d)", EgressFormat, EgressCheckFormat))
	cmd.Flags().IntVar(&last, "last", 20, "show at most this many recent refusals")
	cmd.Flags().StringVar(&check, "check", "", "say whether the gate lets a request for this URL through, and why (exit 0 allowed, 1 refused, 2 no answer)")
	cmd.Flags().BoolVar(&resolve, "resolve", false, "with --check, resolve the URL's name here and check its address as the gate does")
	cmd.SetFlagErrorFunc(checkFlagError)
	return cmd
}

func egressOf(cmd *cobra.Command, ws *workspace.Workspace, name string, last int) (egressReport, error) {
	b, ok := ws.Config.Box(name)
	if !ok {
		return egressReport{}, ws.Undeclared(name)
	}
	r := egressReport{FormatVersion: EgressFormat, Box: name, Host: b.Host, Gate: "missing",
		Allow: []string{}, Private: []string{}, Credentials: []egressCred{}, Refusals: []egress.Refusal{},
		Machine: egressMachine{Addresses: []string{}, Exposed: []string{}, Status: "unknown"}}
	settings := compose.ServiceSettings(b, compose.GateService)
	r.Egress = b.Egress.Mode.String()
	for _, d := range b.Egress.Allow {
		r.Allow = append(r.Allow, d.String())
	}
	for _, d := range b.Private {
		r.Private = append(r.Private, d.String())
	}
	r.Closed = append(egress.PrivateRanges(), "the engine's machine and every bridge gateway")
	r.Executor = egressExecutor{Door: b.Executor.Door, Allow: []string{}, Private: []string{}, Refusals: []egress.Refusal{}}
	if b.Executor.Door {
		r.Executor.Egress = b.Executor.Egress.Mode.String()
		for _, d := range b.Executor.Egress.Allow {
			r.Executor.Allow = append(r.Executor.Allow, d.String())
		}
		for _, d := range b.Executor.Private {
			r.Executor.Private = append(r.Executor.Private, d.String())
		}
	}
	for _, c := range b.Credentials {
		r.Credentials = append(r.Credentials, egressCred{Name: c.Name, To: c.To.String(), Header: c.Header, From: c.From,
			Route: "http://" + compose.GateService + ":" + strconv.Itoa(egress.RoutePort) + "/" + c.Name + "/"})
	}
	host, c, err := ws.BoxContainer(cmd.Context(), name, compose.GateService, false, "")
	var missing *workspace.NoContainerError
	if errors.As(err, &missing) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	r.Gate = string(c.State)
	r.Current = compose.SettingsDiff(c.Labels[compose.SettingsLabel], settings) == nil
	// The gate as just observed: its logs without observing the box again.
	e, err := ws.Engine(cmd.Context(), host)
	if err != nil {
		return r, err
	}
	r.Machine.Addresses = append(r.Machine.Addresses, compose.MachineAddresses(e.MachineAddresses())...)
	if open, _, known := compose.MachineClosed(c.Labels, r.Machine.Addresses); known {
		r.Machine.Exposed = append(r.Machine.Exposed, open...)
		r.Machine.Status = "closed"
		if len(open) > 0 {
			r.Machine.Status = "exposed"
		}
	}
	var out bytes.Buffer
	if err := e.Logs(cmd.Context(), c.ID, engine.LogOptions{Tail: "2000"}, &out, io.Discard); err != nil {
		return r, fmt.Errorf("reading the gate's refusals: %w", err)
	}
	refusals, err := egress.ParseRefusals(&out)
	if err != nil {
		return r, fmt.Errorf("reading the gate's refusals: %w", err)
	}
	agent, executor := bySide(refusals)
	r.Refusals = append(r.Refusals, lastOf(agent, last)...)
	r.Executor.Refusals = append(r.Executor.Refusals, lastOf(executor, last)...)
	return r, nil
}

// bySide splits the gate's refusals into the agent's and the executor's.
func bySide(all []egress.Refusal) (agent, executor []egress.Refusal) {
	for _, f := range all {
		if f.Side == egress.SideExecutor {
			executor = append(executor, f)
		} else {
			agent = append(agent, f)
		}
	}
	return agent, executor
}

// lastOf is the last n of refusals.
func lastOf(refusals []egress.Refusal, n int) []egress.Refusal {
	if len(refusals) > n {
		return refusals[len(refusals)-n:]
	}
	return refusals
}

func writeEgress(w io.Writer, r egressReport) error {
	fmt.Fprintf(w, "box %s (%s): the agent's one way out is its gate (%s)\n", r.Box, reconcile.HostLabel(r.Host), r.Gate)
	if r.Gate != "missing" && !r.Current {
		fmt.Fprintln(w, "  the gate runs other rules than boxes.yaml declares: boxes plan shows the change")
	}
	writeEgressMode(w, r.Egress, r.Allow)
	fmt.Fprintf(w, "  closed:   %s\n", strings.Join(r.Closed, ", "))
	switch {
	case r.Machine.Status == "exposed":
		fmt.Fprintf(w, "  EXPOSED:  the engine's machine has %s, which the gate does not close: the agent reaches the machine there until boxes apply remakes the gate\n", compose.Addresses(r.Machine.Exposed))
	case r.Machine.Status == "unknown" && r.Gate != "missing":
		fmt.Fprintln(w, "  machine:  unknown whether the gate closes all of the engine's machine: it was made by an earlier boxes and does not say (boxes apply remakes it)")
	}
	if len(r.Private) > 0 {
		fmt.Fprintf(w, "  private:  open exceptions: %s\n", strings.Join(r.Private, ", "))
	}
	for _, c := range r.Credentials {
		fmt.Fprintf(w, "  credential %s: %s added to requests to %s (value from %s); HTTPS through %s\n", c.Name, c.Header, c.To, c.From, c.Route)
	}
	if err := writeRefusals(w, "  ", r.Refusals); err != nil {
		return err
	}
	return writeExecutorEgress(w, r.Executor)
}

// writeEgressMode writes the egress line of one side of a gate: its mode
// ("list", "none" or "open") and, for a list, the destinations allowed.
func writeEgressMode(w io.Writer, mode string, allow []string) {
	switch mode {
	case "list":
		fmt.Fprintf(w, "  egress:   %d allowed\n", len(allow))
		for _, d := range allow {
			fmt.Fprintf(w, "              %s\n", d)
		}
	case "none":
		fmt.Fprintln(w, "  egress:   none (every destination refused)")
	default:
		fmt.Fprintln(w, "  egress:   open (any public address)")
	}
}

// writeExecutorEgress writes the executor's side of egress.
func writeExecutorEgress(w io.Writer, e egressExecutor) error {
	if !e.Door {
		fmt.Fprintln(w, "executor: reaches out by itself (boxes.yaml gives it no egress:), under no rule of the gate")
		return nil
	}
	fmt.Fprintf(w, "executor: its one way out is the gate too (%s), under its own rules\n", compose.ExecutorGateURL)
	writeEgressMode(w, e.Egress, e.Allow)
	fmt.Fprintln(w, "  closed:   as for the agent")
	if len(e.Private) > 0 {
		fmt.Fprintf(w, "  private:  open exceptions: %s\n", strings.Join(e.Private, ", "))
	}
	return writeRefusals(w, "  ", e.Refusals)
}

// writeRefusals writes one side's refusals, or that there are none.
func writeRefusals(w io.Writer, indent string, refusals []egress.Refusal) error {
	if len(refusals) == 0 {
		fmt.Fprintln(w, indent+"no refusals in the gate's log")
		return nil
	}
	fmt.Fprintf(w, "%srecent refusals (%d):\n", indent, len(refusals))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range refusals {
		// What the box asked for is printed as data: a terminal escape
		// or a bidirectional override in it is shown, not obeyed.
		fmt.Fprintf(tw, "%s  %s\t%s\t%s\t%s\n", indent, f.Time.Local().Format(time.DateTime), text.Printable(f.Destination), text.Printable(f.Rule), text.Printable(f.Reason))
	}
	return tw.Flush()
}

package workspace

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/statedir"
)

// Row is one box in boxes ls.
type Row struct {
	Name string `json:"name"`
	// Fleet is the box's boxes.fleet label; "" for one made before fleets.
	Fleet    string `json:"fleet"`
	Host     string `json:"host"`
	Declared bool   `json:"declared"`
	State    string `json:"state"`
	Image    string `json:"image"`
	// URL is where a person on this machine reaches the executor; "" when
	// no address here does (see Reach).
	URL string `json:"executor_url"`
	// Reach is how the executor is reached from this machine: "direct" (at
	// URL), "ssh-forward" (on a remote's loopback: boxes open forwards a
	// port to it over ssh), "host-only" (on the loopback of a remote
	// reached without ssh) or "api-forward" (on a cluster: boxes open
	// forwards a port to it through the API server); "" when it publishes
	// no port.
	Reach      string `json:"executor_reach"`
	LastBackup string `json:"last_backup"`
}

// Executor is where the executor is reached from this machine, in words
// for boxes ls: its URL, or how else; "" when it publishes no port.
func (r Row) Executor() string {
	switch r.Reach {
	case "ssh-forward":
		return "via ssh forward: boxes open " + r.Name
	case "host-only":
		return "on host " + r.Host + "'s loopback only"
	case engine.ReachAPIForward:
		return "via the API server: boxes open " + r.Name
	}
	return r.URL
}

// Rows are the boxes boxes ls lists; their JSON is the array of rows.
type Rows []Row

// WriteText writes rows as the table boxes ls prints, with a FLEET column
// first when fleets (ls --all).
func (rs Rows) WriteText(w io.Writer, fleets bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if fleets {
		fmt.Fprint(tw, "FLEET\t")
	}
	fmt.Fprintln(tw, "NAME\tHOST\tSTATE\tIMAGE\tEXECUTOR\tLAST BACKUP")
	for _, r := range rs {
		if fleets {
			fmt.Fprintf(tw, "%s\t", orDash(r.Fleet))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, reconcile.HostName(r.Host), r.State, r.Image, orDash(r.Executor()), orDash(r.LastBackup))
	}
	_ = tw.Flush()
}

// boxState is the STATE in ls of box, whose resources are r: its agent
// container's state, with the executor's and the gate's added where they
// differ, in the engine's words ("running (executor exited)", "running
// (gate paused)"), or said missing ("running (no executor)"). A box is
// usable only when all three run (the agent reaches nothing but through
// its gate), so "running" alone must mean all three.
func boxState(box string, r engine.Resources) string {
	a, haveAgent := r.Container(compose.AgentService)
	var others []string
	for _, service := range []string{compose.ExecutorService, compose.GateService} {
		c, ok := r.Container(service)
		switch {
		case ok && (!haveAgent || c.State != a.State):
			others = append(others, service+" "+string(c.State))
		// A box made before the network door has no gate: its agent is
		// not on the inside network, and does not need one to get out.
		case !ok && haveAgent && (service == compose.ExecutorService || slices.Contains(a.Networks, compose.InsideNetworkName(box))):
			others = append(others, "no "+service)
		}
	}
	state := "absent"
	switch {
	case haveAgent:
		state = string(a.State)
	case len(others) > 0:
		state = "no agent"
	}
	if len(others) > 0 {
		state += " (" + strings.Join(others, ", ") + ")"
	}
	return state
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ObserveList observes every host, then lists every box (List).
func (w *Workspace) ObserveList(ctx context.Context, all bool) (Rows, error) {
	if err := w.Observe(ctx); err != nil {
		return nil, err
	}
	return w.List(all)
}

// List is every box as last observed, for boxes ls: the declared boxes by
// name, then the undeclared ones host by host in Hosts order.
// With all, every box on the engines, whichever fleet (or none) holds it.
//
// It removes the leftovers of saves that died from backups/ first (see
// backup.RemoveLeftovers). A restore record that cannot be read fails it:
// the box's row could say "running" on part of an archive.
func (w *Workspace) List(all bool) (Rows, error) {
	if _, err := backup.RemoveLeftovers(filepath.Join(w.Dir(), "backups")); err != nil {
		w.opts.Warn("removing what saves that died left in backups/: %v", err)
	}
	restoring, err := statedir.Beside(w.Path).Restores().All()
	if err != nil {
		return nil, err
	}
	l := lister{w: w, backups: backupsIn(filepath.Join(w.Dir(), "backups")), restoring: restoring}
	var rows Rows
	seen := map[string]bool{}
	for _, b := range w.Config.Boxes {
		seen[b.Name] = true
		rows = append(rows, l.row(b.Name, b.Host, true))
	}
	for _, host := range w.Hosts() {
		o := w.Observed[host]
		if o == nil {
			continue
		}
		for _, name := range o.Boxes() {
			if !seen[name] && (all || o.Of(name).Owned(w.Config.Fleet)) {
				seen[name] = true
				rows = append(rows, l.row(name, host, false))
			}
		}
	}
	// Declared first, then by fleet and name; stable keeps host order.
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Declared != rows[j].Declared {
			return rows[i].Declared
		}
		if rows[i].Declared {
			return false
		}
		return rows[i].Fleet < rows[j].Fleet
	})
	return rows, nil
}

// lister makes the rows of boxes ls from what w last observed.
type lister struct {
	w         *Workspace
	backups   backupFiles
	restoring map[string]statedir.Restoring
}

// row is box name's row, on host.
func (l lister) row(name, host string, declared bool) Row {
	w := l.w
	row := Row{Name: name, Host: host, Declared: declared, State: "absent", Image: "-", LastBackup: l.backups.newest(name, time.Time{})}
	if declared {
		row.Fleet = w.Config.Fleet
	}
	if o := w.Observed[host]; o != nil {
		l.observed(&row, o.Of(name))
	}
	// A box whose restore was cut short runs on part of an archive
	// until apply or load seeds it again: it is not "running".
	if rec, ok := l.restoring[name]; ok && rec.Host == host && row.State != "absent" {
		row.State = "restore incomplete"
		if rec.From != "" {
			row.State = "fork incomplete"
		}
	}
	switch {
	case declared:
	case row.Fleet == "":
		row.State += " (no fleet)" // made before fleets; only boxes rm removes it
	case row.Fleet == w.Config.Fleet:
		row.State += " (undeclared)"
	}
	return row
}

// observed fills row in from the box's resources r on its host.
func (l lister) observed(row *Row, r engine.Resources) {
	w := l.w
	// Only a backup of this box: not one of a box deleted before
	// that had its name.
	row.LastBackup = l.backups.newest(row.Name, boxMade(row.Name, r))
	if f := r.Fleets(); len(f) > 0 {
		row.Fleet = strings.Join(f, ",")
	} else if !r.Empty() {
		row.Fleet = ""
	}
	row.State = boxState(row.Name, r)
	if a, ok := r.Container(compose.AgentService); ok {
		row.Image = "stale"
		if a.Image == w.Image() {
			row.Image = "current"
		}
	}
	// The executor's port, published by the executor or, behind its
	// door, by the gate.
	if _, p, ok := r.Published(compose.ExecutorPort); ok {
		row.Reach, row.URL = "direct", reconcile.ExecutorURL(p.HostIP, p.HostPort)
		// The engine knows the address a person here reaches it on,
		// if any: a remote's loopback is not this machine's.
		if e, ok := w.engines[row.Host]; ok {
			r := e.ExecutorReach(p.HostIP, p.HostPort)
			row.Reach, row.URL = r.How, r.URL
		}
	} else if c, ok := r.Container(compose.ExecutorService); ok && c.State == engine.Running {
		// No port: an engine that forwards one to the box itself.
		if _, ok := w.engines[row.Host].(engine.BoxForwarder); ok {
			row.Reach = engine.ReachAPIForward
		}
	}
}

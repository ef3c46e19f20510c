package workspace

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/reconcile"
)

// Row is one box in boxes ls.
type Row struct {
	Name string `json:"name"`
	// Fleet is the box's boxes.fleet label; "" for one made before fleets.
	Fleet      string `json:"fleet"`
	Host       string `json:"host"`
	Declared   bool   `json:"declared"`
	State      string `json:"state"`
	Image      string `json:"image"`
	URL        string `json:"executor_url"`
	LastBackup string `json:"last_backup"`
}

// List is every box as last observed, for boxes ls: the declared boxes by
// name, then the undeclared ones host by host in Hosts order.
// With all, every box on the engines, whichever fleet (or none) holds it.
//
// It removes the leftovers of saves that died from backups/ first (see
// backup.RemoveLeftovers).
func (w *Workspace) List(all bool) []Row {
	if _, err := backup.RemoveLeftovers(filepath.Join(w.Dir(), "backups")); err != nil {
		w.opts.Warn("removing what saves that died left in backups/: %v", err)
	}
	backups := w.Backups()
	var rows []Row
	seen := map[string]bool{}
	add := func(name, host string, declared bool) {
		seen[name] = true
		row := Row{Name: name, Host: host, Declared: declared, State: "absent", Image: "-", LastBackup: backups[name]}
		if declared {
			row.Fleet = w.Config.Fleet
		}
		if o := w.Observed[host]; o != nil {
			r := o.Of(name)
			if f := r.Fleets(); len(f) > 0 {
				row.Fleet = strings.Join(f, ",")
			} else if !r.Empty() {
				row.Fleet = ""
			}
			if a, ok := r.Container(compose.AgentService); ok {
				row.State = a.State
				row.Image = "stale"
				if a.Image == w.Image() {
					row.Image = "current"
				}
			}
			if x, ok := r.Container(compose.ExecutorService); ok {
				if p, ok := x.Published(compose.ExecutorPort); ok {
					row.URL = reconcile.ExecutorURL(p.HostIP, p.HostPort)
					// A remote engine knows the address a person here reaches it on.
					if e, ok := w.engines[host].(interface{ ExecutorURL(string, int) string }); ok {
						row.URL = e.ExecutorURL(p.HostIP, p.HostPort)
					}
				}
			}
		}
		switch {
		case declared:
		case row.Fleet == "":
			row.State += " (no fleet)" // made before fleets; only boxes rm removes it
		case row.Fleet == w.Config.Fleet:
			row.State += " (undeclared)"
		}
		rows = append(rows, row)
	}
	for _, b := range w.Config.Boxes {
		add(b.Name, b.Host, true)
	}
	for _, host := range w.Hosts() {
		o := w.Observed[host]
		if o == nil {
			continue
		}
		for _, name := range o.Boxes() {
			if !seen[name] && (all || o.Of(name).Owned(w.Config.Fleet)) {
				add(name, host, false)
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
	return rows
}

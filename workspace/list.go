package workspace

import (
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/reconcile"
)

// Row is one box in boxes ls.
type Row struct {
	Name       string `json:"name"`
	Host       string `json:"host"`
	Declared   bool   `json:"declared"`
	State      string `json:"state"`
	Image      string `json:"image"`
	URL        string `json:"executor_url"`
	LastBackup string `json:"last_backup"`
}

// List is every box as last observed, for boxes ls: the declared boxes by
// name, then the undeclared ones host by host in Hosts order.
func (w *Workspace) List() []Row {
	backups := w.Backups()
	var rows []Row
	seen := map[string]bool{}
	add := func(name, host string, declared bool) {
		seen[name] = true
		row := Row{Name: name, Host: host, Declared: declared, State: "absent", Image: "-", LastBackup: backups[name]}
		if o := w.Observed[host]; o != nil {
			r := o.Of(name)
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
				}
			}
		}
		if !declared {
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
			if !seen[name] {
				add(name, host, false)
			}
		}
	}
	return rows
}

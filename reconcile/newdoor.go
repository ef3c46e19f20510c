package reconcile

import (
	"strings"

	"github.com/hermes-box/boxes/spec"
)

// Door is what a box being created may reach through its gate, shown in
// its plan as a new resource's attributes are, so that a reviewer sees it
// before the box exists: the egress rules, the private exceptions, and each
// credential's name, header and destination. A credential's value, and
// where it is read, are never part of it.
type Door struct {
	// Egress is open (every public address), none, or list.
	Egress string `json:"egress"`
	// Allow are the destinations of a list, as written.
	Allow []string `json:"allow"`
	// Private are the exceptions to the private ranges the gate closes.
	Private []string `json:"private"`
	// Credentials are the headers the gate adds, sorted by name.
	Credentials []DoorCredential `json:"credentials"`
	// Executor is the executor's door, when it has one: nil when it
	// reaches out by itself.
	Executor *ExecutorDoor `json:"executor,omitempty"`
}

// ExecutorDoor is what the executor may reach through the gate.
type ExecutorDoor struct {
	// Egress is open, none, or list.
	Egress string `json:"egress"`
	// Allow are the destinations of a list, as written.
	Allow []string `json:"allow"`
	// Private are the exceptions to the private ranges the gate closes.
	Private []string `json:"private"`
}

// DoorCredential is one credential of a Door, without its value.
type DoorCredential struct {
	Name   string `json:"name"`
	Header string `json:"header"`
	To     string `json:"to"`
}

// DoorOf is the door boxes.yaml gives a box's settings.
func DoorOf(s spec.Settings) *Door {
	d := &Door{Egress: s.Egress.Mode.String(), Allow: []string{}, Private: []string{}, Credentials: []DoorCredential{}}
	for _, a := range s.Egress.Allow {
		d.Allow = append(d.Allow, a.String())
	}
	for _, p := range s.Private {
		d.Private = append(d.Private, p.String())
	}
	for _, c := range s.Credentials {
		d.Credentials = append(d.Credentials, DoorCredential{Name: c.Name, Header: c.Header, To: c.To.String()})
	}
	if e := s.Executor; e.Door {
		d.Executor = &ExecutorDoor{Egress: e.Egress.Mode.String(), Allow: []string{}, Private: []string{}}
		for _, a := range e.Egress.Allow {
			d.Executor.Allow = append(d.Executor.Allow, a.String())
		}
		for _, p := range e.Private {
			d.Executor.Private = append(d.Executor.Private, p.String())
		}
	}
	return d
}

// lines are the door as a plan shows it, one attribute a line.
func (d *Door) lines() []string {
	egress := "every public address (egress: open)"
	switch d.Egress {
	case spec.EgressNone.String():
		egress = "nothing outside the box (egress: none)"
	case spec.EgressList.String():
		egress = strings.Join(d.Allow, ", ")
	}
	private := "none: private ranges and the engine's machine stay closed"
	if len(d.Private) > 0 {
		private = strings.Join(d.Private, ", ")
	}
	out := []string{"egress      = " + egress, "private     = " + private}
	for _, c := range d.Credentials {
		out = append(out, "credential  = "+c.Name+": header "+c.Header+" added on requests to "+c.To+" (value not shown)")
	}
	if e := d.Executor; e != nil {
		egress := "every public address (executor: egress: open, through the gate)"
		switch e.Egress {
		case spec.EgressNone.String():
			egress = "nothing outside the box (executor: egress: none)"
		case spec.EgressList.String():
			egress = strings.Join(e.Allow, ", ") + " (executor: egress:, through the gate)"
		}
		private := "private: none: private ranges and the engine's machine stay closed"
		if len(e.Private) > 0 {
			private = "private: " + strings.Join(e.Private, ", ")
		}
		out = append(out, "executor    = "+egress, "executor    = "+private)
	}
	return out
}

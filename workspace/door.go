package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/gate"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// Doors are what the gates of the named boxes (every box for none) are made
// with besides boxes.yaml: their credentials' values, read here and now,
// and the public addresses of their hosts' machines, closed to the agent
// whatever the rules say. unread holds, by box, why a value could not be
// read, naming the credential and where it was looked for: only a box whose
// gate is to be made needs it. Every value is read, as a plan compares each
// gate's with its digest; a cmd: runs once per workspace, whatever number
// of boxes share it.
func (w *Workspace) Doors(ctx context.Context, names map[string]bool) (doors map[string]compose.Door, unread map[string]error) {
	out := map[string]compose.Door{}
	unread = map[string]error{}
	closed := map[string][]string{}
	for _, b := range w.Config.Boxes {
		if len(names) > 0 && !names[b.Name] {
			continue
		}
		if _, ok := closed[b.Host]; !ok {
			closed[b.Host] = compose.MachineAddresses(w.machineAddresses(b.Host))
		}
		d := compose.Door{Secrets: map[string]string{}, Closed: closed[b.Host]}
		var errs []error
		for _, c := range b.Credentials {
			v, err := w.credentialValue(ctx, c)
			if err != nil {
				h := "the value lives on this machine, never in boxes.yaml: set it, or change from: (env:NAME, file:PATH or cmd:COMMAND)"
				if strings.HasPrefix(c.From, "cmd:") {
					h = "the value is what the command prints on this machine: run it here (sh -c, in boxes.yaml's directory) to see why, or change from:"
				}
				errs = append(errs, hint.Wrap(fmt.Errorf("box %s, credential %s: %w", b.Name, c.Name, err), "%s", h))
				continue
			}
			d.Secrets[c.Name] = c.Prefix + v
			if c.CA == "" {
				continue
			}
			pem, err := credentialCA(c, filepath.Dir(w.Path))
			if err != nil {
				errs = append(errs, hint.Wrap(fmt.Errorf("box %s, credential %s: %w", b.Name, c.Name, err),
					"ca: file:PATH names a PEM file of the certificates the destination's must chain to, read on this machine"))
				continue
			}
			if d.CAs == nil {
				d.CAs = map[string]string{}
			}
			d.CAs[c.Name] = pem
		}
		out[b.Name] = d
		if len(errs) > 0 {
			unread[b.Name] = errors.Join(errs...)
		}
	}
	return out, unread
}

// machineAddresses are the addresses of the machine host's engine runs
// on, as that engine says; none when it is not connected (a host a
// targeted plan leaves out).
func (w *Workspace) machineAddresses(host string) []netip.Addr {
	w.mu.Lock()
	e, ok := w.engines[host]
	w.mu.Unlock()
	if !ok {
		return nil
	}
	return e.MachineAddresses()
}

// ClosedAddresses are the public addresses of the machine host's engine
// runs on, as a gate made now closes them (compose.MachineAddresses): the
// engine's, when it is connected, else found without reaching it (its
// connector finds them from the host's address).
func (w *Workspace) ClosedAddresses(host string) ([]string, error) {
	w.mu.Lock()
	_, connected := w.engines[host]
	w.mu.Unlock()
	if connected {
		return compose.MachineAddresses(w.machineAddresses(host)), nil
	}
	h := spec.Host{}
	if host != "" {
		var ok bool
		if h, ok = w.Config.Hosts[host]; !ok {
			return nil, fmt.Errorf("no host %q in %s", host, w.opts.Shown(w.Path))
		}
	}
	f, ok := w.opts.Connect.(engine.MachineFinder)
	if !ok {
		return []string{}, nil
	}
	addrs, err := f.MachineAddresses(h)
	if err != nil {
		return nil, err
	}
	return compose.MachineAddresses(addrs), nil
}

// gateErrors are the unread credentials of the boxes p makes a gate for
// (create, recreate, move), joined; nil when every one could be read.
func gateErrors(p *reconcile.Plan, unread map[string]error) error {
	var errs []error
	for _, b := range p.Boxes {
		switch b.Action {
		case reconcile.Create, reconcile.Recreate, reconcile.Move:
			if err := unread[b.Name]; err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// credentialValue reads a credential's value from where from: says: env:NAME
// from this process's environment, file:PATH from a file (~/ is the home
// directory; a relative path is from boxes.yaml's directory), its trailing
// line break dropped, cmd:COMMAND from what the command prints (see
// runCommand), run once for the workspace.
func (w *Workspace) credentialValue(ctx context.Context, c spec.Credential) (string, error) {
	dir := filepath.Dir(w.Path)
	kind, where, _ := strings.Cut(c.From, ":")
	var v string
	switch kind {
	case "cmd":
		out, err := w.commands.output(ctx, where, dir)
		if err != nil {
			return "", err
		}
		v = out
	case "env":
		val, ok := os.LookupEnv(where)
		if !ok {
			return "", fmt.Errorf("%s is not set in this environment", where)
		}
		v = val
	case "file":
		path, err := localPath(where, dir)
		if err != nil {
			return "", err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", where, errors.Unwrap(err))
		}
		v = strings.TrimRight(string(data), "\r\n")
	default:
		return "", fmt.Errorf("from: is not env:NAME, file:PATH or cmd:COMMAND")
	}
	if v == "" {
		return "", fmt.Errorf("%s is empty", c.From)
	}
	if strings.ContainsAny(v, "\r\n\x00") {
		return "", fmt.Errorf("%s holds a line break or NUL, which no header value may", c.From)
	}
	return v, nil
}

// localPath is a path as boxes.yaml writes it, on this machine: ~/ is the
// home directory, and a relative path is from dir, boxes.yaml's.
func localPath(where, dir string) (string, error) {
	if rest, ok := strings.CutPrefix(where, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, rest), nil
	}
	if !filepath.IsAbs(where) {
		return filepath.Join(dir, where), nil
	}
	return where, nil
}

// maxCA bounds a ca: file: it travels in the gate's environment, where one
// variable may hold 128 KiB at most, and it is a few certificates.
const maxCA = 64 << 10

// credentialCA reads a credential's ca: file (file:PATH, read as from:
// reads one), which must be PEM certificates and nothing else.
func credentialCA(c spec.Credential, dir string) (string, error) {
	where := strings.TrimPrefix(c.CA, "file:")
	path, err := localPath(where, dir)
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("ca: reading %s: %w", where, errors.Unwrap(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCA+1))
	if err != nil {
		return "", fmt.Errorf("ca: reading %s: %w", where, err)
	}
	if len(data) > maxCA {
		return "", fmt.Errorf("ca: %s is over %d KiB: a ca: file holds the few certificates the destination's chain to, not a whole bundle", where, maxCA>>10)
	}
	if err := gate.CheckCA(string(data)); err != nil {
		return "", fmt.Errorf("ca: %s %w", where, err)
	}
	return string(data), nil
}

// doorChecks is what doctor tries of b's network door: its egress mode and,
// for a list, the first named destination it allows; the same of the
// executor's door when it has one.
func doorChecks(b spec.Box) *doctor.Door {
	d := sideChecks(b.Egress)
	if b.Executor.Door {
		d.Executor = sideChecks(b.Executor.Egress)
	}
	return d
}

// sideChecks is what doctor tries of one side's rules, egress.
func sideChecks(egress spec.Egress) *doctor.Door {
	d := &doctor.Door{Egress: egress.Mode.String()}
	if egress.Mode == spec.EgressList {
		for _, a := range egress.Allow {
			if a.Prefix.IsValid() || a.Wildcard() {
				continue
			}
			switch a.Port {
			case 0, 443:
				d.Allowed = "https://" + a.Host + "/"
			default:
				d.Allowed = fmt.Sprintf("http://%s:%d/", a.Host, a.Port)
			}
			break
		}
	}
	return d
}

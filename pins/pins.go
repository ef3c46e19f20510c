// Package pins resolves the newest pins for boxes.lock from the registries
// that publish them: npm for claude, codex and executor, nodejs.org for node,
// and GitHub for uv and the Hermes agent.
//
// Every response is checked before it becomes a pin: the HTTP status, the
// document's shape, the version's form and the hash's form. A pin that comes
// back from Resolve is in the form provision/provision.sh accepts.
package pins

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hermes-box/boxes/spec"
)

// Tools are the pins that are tools (all but base), in lock order.
var Tools = func() []string {
	var names []string
	for _, d := range spec.PinDefs {
		if d.Kind != spec.BaseImage {
			names = append(names, d.Name)
		}
	}
	return names
}()

// The registries a zero Resolver asks.
const (
	DefaultNPM       = "https://registry.npmjs.org"
	DefaultNode      = "https://nodejs.org/dist"
	DefaultGitHubAPI = "https://api.github.com"
	DefaultGitHub    = "https://github.com"
)

// defaultClient is used when Resolver.Client is nil.
var defaultClient = &http.Client{Timeout: 30 * time.Second}

// Resolver asks the registries for the newest pins. The zero value asks the
// public registries; the fields point it elsewhere (a mirror, a test server).
// A Resolver may be used by several goroutines at once.
type Resolver struct {
	Client    *http.Client // nil: a client with a 30 s timeout
	NPM       string       // npm registry base URL; "" = https://registry.npmjs.org
	Node      string       // Node dist base; "" = https://nodejs.org/dist
	GitHubAPI string       // "" = https://api.github.com
	GitHub    string       // release downloads base; "" = https://github.com
	UserAgent string       // sent as User-Agent when set
}

// Result is a resolved pin and, for people, where it came from: "dist-tag
// latest" (npm), "LTS Jod" (node), "release 0.5.4" (uv), "release v0.3.1"
// or "branch main" (hermes, whose pin is the commit that tag or branch names).
type Result struct {
	Pin  spec.ToolPin
	From string
}

// Resolve returns the newest pin for tool ("node", "claude", …); current is
// the lock's pin now. It is Lookup without the origin; see Lookup.
func (r *Resolver) Resolve(ctx context.Context, tool string, current spec.ToolPin) (spec.ToolPin, error) {
	res, err := r.Lookup(ctx, tool, current)
	return res.Pin, err
}

// Lookup returns the newest pin for tool and where it came from. current is
// the lock's pin now, and it steers the lookup for two tools:
//
//   - claude, codex, executor: current.Package, if set, names the npm package
//     to ask for instead of the default.
//   - node: if current.Version is set, the result stays on its major version
//     (the newest LTS release of that major), so that a lock update never
//     moves a box to a new Node major by itself; clear the pin to move.
//
// For uv and hermes current is not used. Errors name the tool and the URL.
func (r *Resolver) Lookup(ctx context.Context, tool string, current spec.ToolPin) (Result, error) {
	var (
		res Result
		err error
	)
	d, _ := spec.PinDefOf(tool)
	switch {
	case d.Kind == spec.NPMPackage:
		pkg := current.Package
		if pkg == "" {
			pkg = d.Package
		}
		res, err = r.npm(ctx, pkg)
	case tool == "node":
		res, err = r.node(ctx, current.Version)
	case tool == "uv":
		res, err = r.uv(ctx)
	case tool == "hermes":
		res, err = r.hermes(ctx)
	default:
		return Result{}, fmt.Errorf("unknown tool %q: known tools are %s", tool, strings.Join(Tools, ", "))
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", tool, err)
	}
	return res, nil
}

// ResolveAll looks up every tool in tools at once (each once, however often
// it is named). current gives each tool's pin now (nil: none). The map holds
// the tools that resolved; the error joins, in the order of tools, the errors
// of those that did not.
func (r *Resolver) ResolveAll(ctx context.Context, tools []string, current func(tool string) spec.ToolPin) (map[string]Result, error) {
	names := unique(tools)
	results := make([]Result, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, tool := range names {
		var pin spec.ToolPin
		if current != nil {
			pin = current(tool)
		}
		wg.Go(func() {
			results[i], errs[i] = r.Lookup(ctx, tool, pin)
		})
	}
	wg.Wait()
	out := make(map[string]Result, len(names))
	for i, tool := range names {
		if errs[i] == nil {
			out[tool] = results[i]
		}
	}
	return out, errors.Join(errs...)
}

// unique returns names without repeats, in first-seen order.
func unique(names []string) []string {
	var out []string
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// base returns url with any trailing slash removed, or def when url is empty.
func base(url, def string) string {
	if url == "" {
		return def
	}
	return strings.TrimRight(url, "/")
}

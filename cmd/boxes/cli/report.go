package cli

import (
	"fmt"
	"strings"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/handoff"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// sentinelHints is the one hint of each error callers branch on.
var sentinelHints = []struct {
	err  error
	hint string
}{
	{reconcile.ErrLocked, "wait for it to finish; a killed boxes process releases its lock by itself"},
	{archive.ErrWrongPassphrase, "check " + backup.EnvPassphrase + ", or " + backup.EnvIdentity + " for an archive saved to age recipients"},
	{reconcile.ErrNoToken, "run boxes plan, which recovers it from the box's containers"},
	{reconcile.ErrUndeclared, "declare it under boxes: in boxes.yaml first"},
	{workspace.ErrNoConfig, "run boxes init to write one, or pass -f FILE"},
	{reconcile.ErrNoImage, "boxes build makes the image and records it (or boxes lock image REF pins one the engine has)"},
	{reconcile.ErrImageMissing, "boxes build makes it on this engine (or boxes lock image REF pins one it has)"},
	{reconcile.ErrUnmanagedConflict, "boxes never touches resources it did not label; rename or remove them yourself, or rename the box"},
	{backup.ErrExists, "name another file with -o"},
	{backup.ErrNotArchive, "boxes save writes NAME-YYYYMMDD-HHMMSS" + archive.Ext + "; rename an archive only back to the name it was given"},
	{errNoPassphrase, "set " + backup.EnvPassphrase},
}

// hints are the hints of every error in err's tree, outermost first: those
// a HintError carries, and those of the sentinels and typed errors found.
func hints(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if h, ok := e.(interface{ HintLines() []string }); ok {
			out = append(out, h.HintLines()...)
		} else if h := hintOf(e); h != "" {
			out = append(out, h)
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// hintOf is the hint of e itself, not of what it wraps.
func hintOf(e error) string {
	switch t := e.(type) {
	case *HintError:
		return t.Hint
	case *workspace.UndeclaredError:
		if len(t.Declared) == 0 {
			return "it declares no box yet; add one under boxes:"
		}
		return "declared boxes: " + strings.Join(t.Declared, ", ")
	case *workspace.NotRunningError:
		return "boxes start " + t.Box
	case *backup.NotEmptyError:
		return "name another directory: boxes extract " + t.File + " DIR"
	case *workspace.ExistsError:
		return fmt.Sprintf("load it under another name, or boxes save then boxes rm %s first", t.Box)
	case *workspace.UnfinishedError:
		return fmt.Sprintf("boxes load %s %s, or boxes apply", shown(t.Archive), t.Box)
	case *workspace.PartialError:
		return "boxes plan shows what is left"
	case *workspace.NoResourcesError:
		return "run boxes plan to see what boxes.yaml asks for"
	case *workspace.NoContainerError:
		return "boxes plan shows what apply would create"
	case *hb.NotReadyError:
		return fmt.Sprintf("boxes logs %s shows what hb init is doing", t.Box)
	case *handoff.NoBrowserError:
		return "set " + handoff.EnvBrowser + " to the browser's command, e.g. " + handoff.EnvBrowser + "=firefox"
	case *reconcile.StaleError:
		if t.Edited {
			return "a saved plan is applied as it was saved; run boxes plan -out " + t.File + " again"
		}
		return "run boxes plan -out " + t.File + " again and review it"
	}
	is, _ := e.(interface{ Is(error) bool })
	for _, s := range sentinelHints {
		if e == s.err || (is != nil && is.Is(s.err)) {
			return s.hint
		}
	}
	return ""
}

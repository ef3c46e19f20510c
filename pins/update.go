package pins

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-box/boxes/spec"
)

// DefaultBase is the base image a lock without one is pinned to.
const DefaultBase = "ubuntu:24.04"

// Change is one pin before and after an update; lock update --json prints a list of them.
type Change struct {
	Pin     string `json:"pin"`
	Old     string `json:"old,omitempty"`
	New     string `json:"new"`
	From    string `json:"from,omitempty"`
	Changed bool   `json:"changed"`
}

// UnknownPinError is a pin name that is not one of spec.PinNames.
type UnknownPinError struct{ Name string }

func (e *UnknownPinError) Error() string { return fmt.Sprintf("lock update: unknown pin %q", e.Name) }

// Hint names the pins there are.
func (e *UnknownPinError) Hint() string { return "the pins are " + strings.Join(spec.PinNames, ", ") }

// Select checks pin names given by a user, once each in the order given;
// none means every pin.
func Select(args []string) ([]string, error) {
	if len(args) == 0 {
		return slices.Clone(spec.PinNames), nil
	}
	var names []string
	for _, a := range args {
		if !slices.Contains(spec.PinNames, a) {
			return nil, &UnknownPinError{Name: a}
		}
		if !slices.Contains(names, a) {
			names = append(names, a)
		}
	}
	return names, nil
}

// Has reports whether p holds pin name whole: an integrity hash included
// where the build needs one (every tool but hermes, pinned by commit).
func Has(p spec.Pins, name string) bool {
	if name == "base" {
		return p.Base.Image != "" && p.Base.Digest != ""
	}
	t := p.Tool(name)
	d, _ := spec.PinDefOf(name)
	return t != nil && t.Version != "" && (d.IntegrityArg == "" || t.Integrity != "")
}

// BaseDigest is the digest a registry has now for an image reference.
type BaseDigest func(ctx context.Context, image string) (string, error)

// Update resolves the pins names (spec.PinNames) with r, and the base
// image's digest with base. Either every named pin resolves and the new
// pins come back, or the joined errors of those that did not.
func (r *Resolver) Update(ctx context.Context, current spec.Pins, names []string, base BaseDigest) (spec.Pins, []Change, error) {
	updated := current
	var changes []Change
	var errs []error
	tools := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "base" })
	if len(tools) > 0 {
		results, err := r.ResolveAll(ctx, tools, func(tool string) spec.ToolPin { return *current.Tool(tool) })
		errs = append(errs, err)
		for _, tool := range tools {
			if res, ok := results[tool]; ok {
				*updated.Tool(tool) = res.Pin
				old := *current.Tool(tool)
				changes = append(changes, Change{Pin: tool, Old: old.Version, New: res.Pin.Version, From: res.From, Changed: old != res.Pin})
			}
		}
	}
	if slices.Contains(names, "base") {
		image := current.Base.Image
		if image == "" {
			image = DefaultBase
		}
		// A reference already carrying a digest is asked for by its tag.
		image, _, _ = strings.Cut(image, "@")
		digest, err := base(ctx, image)
		if err != nil {
			errs = append(errs, fmt.Errorf("base: %w", err))
		} else {
			updated.Base = spec.BasePin{Image: image, Digest: digest}
			changes = append([]Change{{Pin: "base", Old: current.Base.Digest, New: digest, From: image,
				Changed: current.Base.Image != image || current.Base.Digest != digest}}, changes...)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return current, nil, err
	}
	return updated, changes, nil
}

// Sources says where each pin's newest comes from, as a sentence's list
// wrapped at width columns: "base (…), node (…), claude, codex and executor
// (npm latest and its integrity), …".
func Sources(width int) string {
	var items []string
	for i := 0; i < len(spec.PinDefs); {
		d := spec.PinDefs[i]
		names := []string{d.Name}
		for i++; i < len(spec.PinDefs) && spec.PinDefs[i].From == d.From; i++ {
			names = append(names, spec.PinDefs[i].Name)
		}
		items = append(items, andList(names)+" ("+d.From+")")
	}
	var b strings.Builder
	col := 0
	for i, w := range strings.Fields(andList(items)) {
		if i > 0 && col+1+len(w) > width {
			b.WriteByte('\n')
			col = 0
		} else if i > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

// andList is "a", "a and b", "a, b and c".
func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

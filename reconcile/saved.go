package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/hermes-box/boxes/engine"
)

// SavedVersion is the format of a saved plan file (plan -out), apart from
// the plan's own JSON format inside it.
const SavedVersion = 1

// PlanOptions are what a plan was asked for beyond the files: plan's
// --replace and --target. A saved plan carries them, so apply FILE checks
// freshness with the very options the plan was made with.
type PlanOptions struct {
	Replace []string `json:"replace,omitempty"`
	Target  []string `json:"target,omitempty"`
}

// Saved is what plan -out writes: the plan, its options and a fingerprint
// of what it was made from. It holds no secret.
type Saved struct {
	Version     int         `json:"saved_plan_version"`
	Fingerprint string      `json:"fingerprint"`
	Options     PlanOptions `json:"options"`
	Plan        *Plan       `json:"plan"`
}

// ErrNotSavedPlan is a file that is not a saved plan of any version.
var ErrNotSavedPlan = errors.New("not a saved boxes plan")

// StaleError says why a saved plan no longer holds.
type StaleError struct {
	File string
	// Edited is true when the file's own plan no longer matches its fingerprint.
	Edited bool
}

func (e *StaleError) Error() string {
	if e.Edited {
		return fmt.Sprintf("%v: %s was changed after it was saved", ErrStalePlan, e.File)
	}
	return fmt.Sprintf("%v: the files or the boxes changed since %s was saved", ErrStalePlan, e.File)
}

// Hint is what to do about it.
func (e *StaleError) Hint() string {
	if e.Edited {
		return "a saved plan is applied as it was saved; run boxes plan -out " + e.File + " again"
	}
	return "run boxes plan -out " + e.File + " again and review it"
}

func (e *StaleError) Unwrap() error { return ErrStalePlan }

// WriteSaved writes p, made with opts from what fingerprint digests, to path.
func WriteSaved(path, fingerprint string, opts PlanOptions, p *Plan) error {
	data, err := json.MarshalIndent(Saved{Version: SavedVersion, Fingerprint: fingerprint, Options: opts, Plan: p}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadSaved reads a saved plan; shown is how messages name the file.
func ReadSaved(path, shown string) (*Saved, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such plan file", shown)
	}
	if err != nil {
		return nil, err
	}
	var s Saved
	if err := json.Unmarshal(data, &s); err != nil || (s.Version == 0 && s.Plan == nil) {
		return nil, fmt.Errorf("%s: %w", shown, ErrNotSavedPlan)
	}
	if s.Version != SavedVersion {
		return nil, fmt.Errorf("%s is a saved plan of version %d; this boxes reads version %d", shown, s.Version, SavedVersion)
	}
	if s.Plan == nil {
		return nil, fmt.Errorf("%s: %w", shown, ErrNotSavedPlan)
	}
	return &s, nil
}

// Fresh checks the saved plan against a plan made now from the same
// options: both must have the fingerprint the file carries, so that neither
// a change to the files or the boxes nor an edit of the file's actions goes
// unnoticed. files and observed are what now was made from.
func (s *Saved) Fresh(file string, files map[string]string, fleet string, observed map[string]*engine.Observed, now *Plan) error {
	if Fingerprint(files, fleet, observed, s.Plan) != s.Fingerprint {
		if Fingerprint(files, fleet, observed, now) == s.Fingerprint {
			return &StaleError{File: file, Edited: true}
		}
		return &StaleError{File: file}
	}
	if Fingerprint(files, fleet, observed, now) != s.Fingerprint {
		return &StaleError{File: file}
	}
	return nil
}

// Fingerprint digests what a plan was made from and what it does: both
// files' bytes, every labelled resource and the plan's actions. Fields that
// change on their own (volume sizes, health, the newest backup) are left
// out, so a plan stays fresh while a box it deletes writes a byte; so are
// the hosts' CPUs, memory and runtimes.
func Fingerprint(files map[string]string, fleet string, observed map[string]*engine.Observed, p *Plan) string {
	type seen struct {
		Files    map[string]string           `json:"files"`
		Observed map[string]*engine.Observed `json:"observed"`
		Plan     *Plan                       `json:"plan"`
	}
	// Only this fleet's resources count: another fleet's apply must not make
	// this fleet's saved plan stale.
	strip := map[string]*engine.Observed{}
	for h, o := range observed {
		c := o.ForFleet(fleet)
		c.Unmanaged = engine.Unmanaged{}
		vols := make([]engine.Volume, len(c.Volumes))
		for i, v := range c.Volumes {
			v.Size = 0
			vols[i] = v
		}
		c.Volumes = vols
		strip[h] = c
	}
	var plan *Plan
	if p != nil {
		plan = p.Stable()
		for i, b := range plan.Boxes {
			if b.Delete != nil {
				d := *b.Delete
				d.Backup = ""
				plan.Boxes[i].Delete = &d
			}
		}
	}
	data, _ := json.Marshal(seen{Files: files, Observed: strip, Plan: plan}) // plain data always marshals
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

package reconcile

import "path/filepath"

// StateDir is the name of the git-ignored directory beside boxes.yaml that
// holds what boxes keeps on this machine: tokens, locks, and the records of
// restores, moves and freezes.
const StateDir = ".boxes"

// State is the .boxes/ directory beside one boxes.yaml. Every path under
// it is built here, once.
type State struct {
	// Dir is the directory itself.
	Dir string
}

// StateBeside is the state directory of the boxes.yaml at configPath.
func StateBeside(configPath string) State {
	return State{Dir: filepath.Join(filepath.Dir(configPath), StateDir)}
}

// ApplyLock is the one-apply-at-a-time lock file.
func (s State) ApplyLock() string { return filepath.Join(s.Dir, "apply.lock") }

// BoxLock is box name's lock file.
func (s State) BoxLock(name string) string { return filepath.Join(s.Dir, "locks", name+".lock") }

// Secrets holds each box's token (NAME.env) and the keys of moves.
func (s State) Secrets() string { return filepath.Join(s.Dir, "secrets") }

// Frozen holds the records of boxes a save froze.
func (s State) Frozen() string { return filepath.Join(s.Dir, "frozen") }

// Restores holds the records of restores not yet done.
func (s State) Restores() string { return filepath.Join(s.Dir, "restores") }

// Moves holds the records of moves not yet done.
func (s State) Moves() string { return filepath.Join(s.Dir, "moves") }

// MoveKey is the key file of box name's move begun at stamp, relative to
// the directory of boxes.yaml (as move records keep it).
func MoveKey(name, stamp string) string {
	return filepath.Join(StateDir, "secrets", name+"-"+stamp+".move-key")
}

// Package statedir is the .boxes/ directory beside a boxes.yaml: what boxes
// keeps on this machine (each box's token, the locks, and the records of
// the work a kill may cut short: freezes, restores and forks, moves). It
// builds every path under .boxes/ once.
package statedir

import "path/filepath"

// Name is the name of the git-ignored directory beside boxes.yaml that
// holds what boxes keeps on this machine.
const Name = ".boxes"

// Dir is the .boxes/ directory beside one boxes.yaml.
type Dir struct {
	// Path is the directory itself.
	Path string
}

// Beside is the state directory of the boxes.yaml at configPath.
func Beside(configPath string) Dir {
	return Dir{Path: filepath.Join(filepath.Dir(configPath), Name)}
}

// ApplyLock is the one-apply-at-a-time lock file.
func (s Dir) ApplyLock() string { return filepath.Join(s.Path, "apply.lock") }

// BoxLock is box name's lock file.
func (s Dir) BoxLock(name string) string { return filepath.Join(s.Path, "locks", name+".lock") }

// Secrets holds each box's token (NAME.env) and the keys of moves.
func (s Dir) Secrets() string { return filepath.Join(s.Path, "secrets") }

// Frozen holds the records of boxes a save froze.
func (s Dir) Frozen() string { return filepath.Join(s.Path, "frozen") }

// Restores holds the records of restores not yet done.
func (s Dir) Restores() string { return filepath.Join(s.Path, "restores") }

// Moves holds the records of moves not yet done.
func (s Dir) Moves() string { return filepath.Join(s.Path, "moves") }

// MoveKey is the key file of box name's move begun at stamp, relative to
// the directory of boxes.yaml (as move records keep it).
func MoveKey(name, stamp string) string {
	return filepath.Join(Name, "secrets", name+"-"+stamp+".move-key")
}

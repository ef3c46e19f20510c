// Package statedir is the .boxes/ directory beside a boxes.yaml: what boxes
// keeps on this machine (each box's token, the locks, and the records of
// the work a kill may cut short: freezes, restores and forks, moves). It
// builds every path under .boxes/ once.
//
// # Records
//
// Each kind of record is a store of one file per box, made from the
// directory beside a boxes.yaml (Beside(configPath).Restores(), .Moves(),
// .Freezes(), .Tokens()), and every store keeps one contract:
//
//   - Get(box) (R, bool, error): no record is the zero R, false and no
//     error. A record that is there but cannot be used (unreadable, not
//     valid JSON, not a valid record of its kind, or the record of another
//     box than its file's name says) is an error: a *BadRecordError, which
//     wraps ErrBadRecord (test with errors.Is), names the file, says what
//     boxes will not guess without it, and has as its hint what to do.
//     Nothing reads a bad record as no record: a restore record means a
//     box's data is not yet checked, a freeze record that a box may still
//     be frozen, a move record how far a move got, and forgetting one
//     forgets exactly the work a kill cut short.
//   - All() (map[string]R, error): every record, by box name. A missing
//     directory holds none; any bad record is the error, never skipped.
//   - Writing (Put, Begin, Hold) is atomic and durable: a temporary file in
//     the directory (mode 0600), synced, renamed over the record, the
//     directory synced; the directory is made 0700. Removing (Remove,
//     Done, Release) a record that is not there is no error.
//
// Freezes also tell a record whose save still runs (Freeze.Held) from a
// dead save's (Stale, TakeStale). TakeStale alone takes a bad freeze
// record, for the thaw that clears it (see there). Tokens (.boxes/secrets/BOX.env) are
// not JSON, and are never listed, but are read and written alike.
//
// Locks (.boxes/apply.lock, .boxes/locks/BOX.lock) are no records: the
// kernel's lock is what counts, and the holder's line in the file only
// names it in messages (read best-effort). The keys of moves
// (.boxes/secrets/BOX-STAMP.move-key) are read by the move that wrote them.
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

// Tokens is the store of each box's token, in Secrets.
func (s Dir) Tokens() Tokens { return Tokens{Dir: s.Secrets()} }

// Freezes is the store of the records of boxes a save froze.
func (s Dir) Freezes() Freezes { return Freezes{Dir: filepath.Join(s.Path, "frozen")} }

// Restores is the store of the records of restores not yet done.
func (s Dir) Restores() Restores { return Restores{Dir: filepath.Join(s.Path, "restores")} }

// Moves is the store of the records of moves not yet done.
func (s Dir) Moves() Moves { return Moves{Dir: filepath.Join(s.Path, "moves")} }

// MoveKey is the key file of box name's move begun at stamp, relative to
// the directory of boxes.yaml (as move records keep it).
func MoveKey(name, stamp string) string {
	return filepath.Join(Name, "secrets", name+"-"+stamp+".move-key")
}

package apply

import (
	"fmt"

	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// token is the box's stored token, minted and stored first when the box has none.
// It is written before any resource exists, so a create killed half-way resumes with it.
func (a *Applier) token(bp reconcile.BoxPlan, box spec.Box) (string, error) {
	// A box made with a fresh token never reads the file, which the new
	// token replaces, bad or not.
	if !freshToken(bp, box) {
		token, ok, err := a.Tokens.Get(bp.Name)
		if err != nil {
			return "", err
		}
		if ok {
			return token, nil
		}
	}
	if bp.Action != reconcile.Create && bp.Action != reconcile.Recreate {
		return "", fmt.Errorf("box %s: %w", bp.Name, ErrNoToken)
	}
	token, err := statedir.NewToken()
	if err != nil {
		return "", err
	}
	return token, a.Tokens.Put(bp.Name, token)
}

// freshToken reports whether box is made with a token minted now, whatever
// token file this directory holds. A box restored from an archive: the
// archive's box may still run elsewhere with the old token; so does a
// fork's source. A pool box made, or remade without a token its engine
// still holds: the file may be a previous holder's, kept by the directory
// that leased the box before a reset from another directory deleted it,
// and the next holder must get a box the previous one cannot drive.
func freshToken(bp reconcile.BoxPlan, box spec.Box) bool {
	switch {
	case bp.Action == reconcile.Create:
		return bp.Restore != "" || bp.From != "" || box.Pool != ""
	case bp.Action == reconcile.Recreate && box.Pool != "":
		// The plan knows a pool box's token only from its engine
		// (workspace's tokens); without one it names the reason "token".
		return reconcile.HasKind(bp.Reasons, "token")
	}
	return false
}

package reconcile

import (
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// MadeWith reports whether box b's executor, among its resources r, was
// made with token: its config hash is what the plan hashes for it with
// that token (the environment, token and all, is in the hash). A token
// other than the executor's gives another hash, and so does a box whose
// settings changed since it was made: only its engine can then say the
// token it has. A plan so reads no pool box's token from the engine that
// its token file already names.
func MadeWith(in Input, b spec.Box, r engine.Resources, token string) bool {
	c, ok := r.Container(compose.ExecutorService)
	if !ok || token == "" {
		return false
	}
	hostPort := 0
	if b.Executor.Port == 0 {
		hostPort = boxHostPort(r)
	}
	in.Tokens = map[string]string{b.Name: token}
	h := wantedHashes(in, b, hostPort)
	return h.token() && h.matches(compose.ExecutorService, c.ConfigHash) && h.err == nil
}

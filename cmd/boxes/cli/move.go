package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// newMover wires the applier's moves to the workspace's engines.
func newMover(ws *workspace.Workspace, progress reconcile.Progress) *backup.Mover {
	return &backup.Mover{
		Engine: func(ctx context.Context, host string) (backup.Engine, error) { return engineOf(ctx, ws, host) },
		Agent: func(ctx context.Context, host, box string) (reconcile.Container, error) {
			e, err := engineOf(ctx, ws, host)
			if err != nil {
				return reconcile.Container{}, err
			}
			o, err := e.Observe(ctx)
			if err != nil {
				return reconcile.Container{}, err
			}
			c, ok := o.Of(box).Container(compose.AgentService)
			if !ok {
				return c, &workspace.NoContainerError{Box: box, Service: compose.AgentService}
			}
			return c, nil
		},
		Recipients: ws.Config.Recipients,
		Writer:     "boxes " + versionString(),
		Init:       hb.Wait{Timeout: InitTimeout},
		Step:       progress.Step,
		StreamWith: func(ctx context.Context, from, to, image string) error {
			src, err := engineOf(ctx, ws, from)
			if err != nil {
				return err
			}
			dst, err := engineOf(ctx, ws, to)
			if err != nil {
				return err
			}
			_, err = dst.StreamImage(ctx, src, image)
			return err
		},
		DoctorWith: func(ctx context.Context, host, box string) error {
			e, err := engineOf(ctx, ws, host)
			if err != nil {
				return err
			}
			o, err := e.Observe(ctx, ws.Image())
			if err != nil {
				return err
			}
			b := doctor.Box{Name: box, Host: host, Resources: o.Of(box), Image: ws.Image()}
			if decl, ok := ws.Config.Box(box); ok {
				b.Bind = decl.Executor.Bind
			}
			b.Token, _, b.TokenErr = ws.Tokens.Get(box)
			rep := doctor.Check(ctx, b, doctor.Probes{Runner: e})
			if rep.OK {
				return nil
			}
			var failed []string
			for _, c := range rep.Checks {
				if !c.OK {
					failed = append(failed, fmt.Sprintf("%s %s: %s", c.Where, c.Name, c.Detail))
				}
			}
			return fmt.Errorf("doctor found problems: %s", strings.Join(failed, "; "))
		},
		SameWith: func(ctx context.Context, a, b string) (bool, error) {
			ea, err := engineOf(ctx, ws, a)
			if err != nil {
				return false, err
			}
			eb, err := engineOf(ctx, ws, b)
			if err != nil {
				return false, err
			}
			return ea.ID() != "" && ea.ID() == eb.ID(), nil
		},
	}
}

// confirmMoves names the moved boxes whose old copy apply may delete once
// the new one is verified: those named by --confirm-delete, or whose name
// is typed at the terminal. Without either the old copy stays, stopped.
func confirmMoves(env *Env, in *bufio.Reader, p *reconcile.Plan, confirmed []string) map[string]bool {
	ok := map[string]bool{}
	for _, n := range confirmed {
		ok[n] = true
	}
	out := map[string]bool{}
	for _, b := range p.Boxes {
		if b.Action != reconcile.Move || b.Move == nil {
			continue
		}
		if ok[b.Name] {
			out[b.Name] = true
			continue
		}
		if !env.IsTTY {
			continue
		}
		fmt.Fprintf(env.Out, "\nBox %s moves from %s to %s. Once the new copy is verified, the old copy on %s can be deleted with its volumes.\n  Type the box's name to delete it, or press Enter to keep it (stopped): ",
			b.Name, hostWord(b.Move.From), hostWord(b.Move.To), hostWord(b.Move.From))
		answer, _ := in.ReadString('\n')
		if strings.TrimSpace(answer) == b.Name {
			out[b.Name] = true
		}
	}
	return out
}

func hostWord(h string) string {
	if h == "" {
		return "local"
	}
	return h
}

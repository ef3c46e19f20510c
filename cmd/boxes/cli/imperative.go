package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/reconcile"
)

// boxOp runs fn on one existing box under its per-box lock.
func boxOp(ctx context.Context, env *Env, name, what string, fn func(*workspace, reconcile.Resources, *docker.Engine) error) error {
	ws, err := observedWorkspace(ctx, env)
	if err != nil {
		return err
	}
	defer ws.close()
	for host, o := range ws.observed {
		r := o.Of(name)
		if r.Empty() {
			continue
		}
		lock, err := reconcile.LockBox(env.File, name, what)
		if err != nil {
			return err
		}
		defer lock.Unlock()
		return fn(ws, r, ws.engines[host])
	}
	return withHint(fmt.Errorf("box %s has no resources on any engine", name), "run boxes plan to see what boxes.yaml asks for")
}

func newStopCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use: "stop NAME", Short: "Stop a box now (plan then reports any drift from boxes.yaml)", Args: exactlyOne("stop", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return boxOp(cmd.Context(), env, args[0], "boxes stop", func(_ *workspace, _ reconcile.Resources, e *docker.Engine) error {
				if err := e.Stop(cmd.Context(), compose.ProjectName(args[0])); err != nil {
					return err
				}
				fmt.Fprintf(env.Out, "stopped %s\n", args[0])
				return nil
			})
		},
	}
}

func newStartCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use: "start NAME", Short: "Start a stopped box now", Args: exactlyOne("start", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return boxOp(cmd.Context(), env, name, "boxes start", func(ws *workspace, _ reconcile.Resources, e *docker.Engine) error {
				box, ok := ws.cfg.Box(name)
				if !ok {
					return fmt.Errorf("box %s is not in boxes.yaml; boxes start only starts declared boxes", name)
				}
				token, ok, err := ws.tokens.Get(name)
				if err != nil || !ok {
					return withHint(fmt.Errorf("box %s has no token in .boxes/secrets", name), "run boxes plan, which recovers it")
				}
				p, err := compose.Project(compose.Input{Box: box, Image: ws.image(), Token: token, WorkDir: env.Dir(), ConfigFile: env.File})
				if err != nil {
					return err
				}
				if err := e.Start(cmd.Context(), p); err != nil {
					return err
				}
				url, err := e.WaitReady(cmd.Context(), name, token)
				if err != nil {
					return err
				}
				fmt.Fprintf(env.Out, "started %s; executor at %s\n", name, url)
				return nil
			})
		},
	}
}

func newRmCommand(env *Env) *cobra.Command {
	var confirm string
	cmd := &cobra.Command{
		Use: "rm NAME", Short: "Delete a box now: containers, network and volumes", Args: exactlyOne("rm", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return boxOp(cmd.Context(), env, name, "boxes rm", func(ws *workspace, r reconcile.Resources, e *docker.Engine) error {
				backup := newestBackups(filepath.Join(env.Dir(), "backups"))[name]
				if backup == "" {
					backup = "no backup found"
				}
				fmt.Fprintf(env.Out, "box %s: %d containers, %d networks, %d volumes; backup: %s\n", name, len(r.Containers), len(r.Networks), len(r.Volumes), backup)
				if confirm != name {
					if !env.IsTTY {
						return withHint(fmt.Errorf("rm deletes %s's data and there is no terminal to confirm it; nothing was changed", name), "pass --confirm %s", name)
					}
					fmt.Fprintf(env.Out, "Type the box's name to delete it with its volumes: ")
					answer, _ := bufio.NewReader(env.In).ReadString('\n')
					if strings.TrimSpace(answer) != name {
						return errors.New("not confirmed; nothing was changed")
					}
				}
				for _, c := range r.Containers {
					if err := e.RemoveContainer(cmd.Context(), c.ID); err != nil {
						return err
					}
				}
				for _, n := range r.Networks {
					if err := e.RemoveNetwork(cmd.Context(), n.ID); err != nil {
						return err
					}
				}
				for _, v := range r.Volumes {
					if err := e.RemoveVolume(cmd.Context(), v.Name); err != nil {
						return err
					}
				}
				if err := ws.tokens.Remove(name); err != nil {
					return err
				}
				fmt.Fprintf(env.Out, "removed %s\n", name)
				if _, declared := ws.cfg.Box(name); declared {
					env.Warnf("%s is still declared in boxes.yaml; the next apply creates it again", name)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&confirm, "confirm", "", "the box's name, to delete without a prompt")
	return cmd
}

// lsRow is one box in boxes ls.
type lsRow struct {
	Name       string `json:"name"`
	Host       string `json:"host"`
	Declared   bool   `json:"declared"`
	State      string `json:"state"`
	Image      string `json:"image"`
	URL        string `json:"executor_url"`
	LastBackup string `json:"last_backup"`
}

func newLsCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "ls", Short: "List every box: host, state, image, executor URL, last backup", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := observedWorkspace(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer ws.close()
			rows := lsRows(ws)
			if asJSON {
				enc := json.NewEncoder(env.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			tw := tabwriter.NewWriter(env.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tHOST\tSTATE\tIMAGE\tEXECUTOR\tLAST BACKUP")
			for _, r := range rows {
				host := r.Host
				if host == "" {
					host = "local"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, host, r.State, r.Image, orDash(r.URL), orDash(r.LastBackup))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func lsRows(ws *workspace) []lsRow {
	backups := newestBackups(filepath.Join(ws.env.Dir(), "backups"))
	var rows []lsRow
	seen := map[string]bool{}
	add := func(name, host string, declared bool) {
		seen[name] = true
		row := lsRow{Name: name, Host: host, Declared: declared, State: "absent", Image: "-", LastBackup: backups[name]}
		if o := ws.observed[host]; o != nil {
			r := o.Of(name)
			if a, ok := r.Container(compose.AgentService); ok {
				row.State = a.State
				row.Image = "stale"
				if a.Image == ws.image() {
					row.Image = "current"
				}
			}
			if x, ok := r.Container(compose.ExecutorService); ok {
				if p, ok := x.Published(compose.ExecutorPort); ok {
					row.URL = reconcile.ExecutorURL(p.HostIP, p.HostPort)
					if e := ws.engines[host]; e != nil {
						row.URL = e.ExecutorURL(p.HostIP, p.HostPort)
					}
				}
			}
		}
		if !declared {
			row.State += " (undeclared)"
		}
		rows = append(rows, row)
	}
	for _, b := range ws.cfg.Boxes {
		add(b.Name, b.Host, true)
	}
	for host, o := range ws.observed {
		for _, name := range o.Boxes() {
			if !seen[name] {
				add(name, host, false)
			}
		}
	}
	return rows
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

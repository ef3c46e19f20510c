package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/imagebuild"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// shown is path relative to the working directory when it lies below it.
func shown(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return path
	}
	return rel
}

// loadLock reads boxes.lock; a missing lock is (nil, nil).
func loadLock(env *Env) (*spec.Lock, error) {
	data, err := os.ReadFile(env.LockFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := spec.ParseLock(shown(env.LockFile()), data)
	if err != nil {
		return nil, err
	}
	l.Path = env.LockFile()
	return l, nil
}

func newValidateCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check boxes.yaml and boxes.lock, offline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := openWorkspace(env, docker.Options{})
			if err != nil {
				return err
			}
			defer ws.Close()
			lock := ws.Lock
			fmt.Fprintf(env.Out, "%s: %d boxes OK\n", filepath.Base(env.File), len(ws.Config.Boxes))
			switch {
			case lock == nil:
				env.Warnf("boxes.lock not found; plan will need it")
				fmt.Fprintln(env.Err, "boxes: hint: boxes lock update, then boxes build (or boxes lock image REF for an image the engine has)")
			case lock.Image == nil:
				env.Warnf("boxes.lock has pins but no image; plan will need one")
				fmt.Fprintln(env.Err, "boxes: hint: boxes build makes it (or boxes lock image REF pins one the engine has)")
			default:
				fmt.Fprintf(env.Out, "boxes.lock: image %s OK\n", lock.Image.ID)
				if inputs, ok := imagebuild.CurrentInputs(lock); ok && lock.Image.Inputs != "" && lock.Image.Inputs != inputs {
					env.Warnf("boxes.lock: image.inputs is not the digest of this recipe and these pins: the image was built from other inputs")
					fmt.Fprintln(env.Err, "boxes: hint: boxes build makes the image of the current pins")
				}
			}
			return nil
		},
	}
}

func newSchemaCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of boxes.yaml",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := env.Out.Write(spec.Schema())
			return err
		},
	}
}

func newInitCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a starter boxes.yaml and .gitignore",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return initDir(env, dir)
		},
	}
}

func initDir(env *Env, dir string) error {
	wrote, err := workspace.Init(dir)
	for _, f := range wrote {
		fmt.Fprintf(env.Out, "wrote %s\n", f)
	}
	if errors.Is(err, workspace.ErrExists) {
		return withHint(err, "edit it, or run boxes validate")
	}
	return err
}

package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

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

func newSchemaCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of boxes.yaml",
		Long:  schemaHelp,
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

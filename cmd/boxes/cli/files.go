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
)

// loadConfig reads boxes.yaml, with a hint when it is missing.
func loadConfig(env *Env) (*spec.Config, error) {
	data, err := os.ReadFile(env.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, withHint(fmt.Errorf("%s not found", shown(env.File)), "run boxes init to write one, or pass -f FILE")
	}
	if err != nil {
		return nil, err
	}
	cfg, err := spec.Parse(shown(env.File), data)
	if err != nil {
		return nil, err
	}
	// Messages name the file as the user sees it; everything else wants the absolute path.
	cfg.Path = env.File
	return cfg, nil
}

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
	file := filepath.Join(dir, "boxes.yaml")
	if _, err := os.Stat(file); err == nil {
		return withHint(fmt.Errorf("%s already exists; not overwriting it", file), "edit it, or run boxes validate")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeSchemaAndScaffold(env, dir, file); err != nil {
		return err
	}
	ignore := filepath.Join(dir, ".gitignore")
	have, err := os.ReadFile(ignore)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	add := ""
	for _, line := range []string{".boxes/", "backups/"} {
		if !containsLine(string(have), line) {
			add += line + "\n"
		}
	}
	if add == "" {
		return nil
	}
	if len(have) > 0 && have[len(have)-1] != '\n' {
		add = "\n" + add
	}
	f, err := os.OpenFile(ignore, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(add); err != nil {
		f.Close()
		return err
	}
	fmt.Fprintf(env.Out, "wrote %s\n", ignore)
	return f.Close()
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

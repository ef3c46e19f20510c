package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/spec"
)

// loadConfig reads boxes.yaml, with a hint when it is missing.
func loadConfig(env *Env) (*spec.Config, error) {
	cfg, err := spec.Load(env.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, withHint(fmt.Errorf("%s not found", env.File), "run boxes init to write one, or pass -f FILE")
	}
	return cfg, err
}

// loadLock reads boxes.lock; a missing lock is (nil, nil).
func loadLock(env *Env) (*spec.Lock, error) {
	l, err := spec.LoadLock(env.LockFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return l, err
}

func newValidateCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check boxes.yaml and boxes.lock, offline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(env)
			if err != nil {
				return err
			}
			lock, err := loadLock(env)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Out, "%s: %d boxes OK\n", filepath.Base(env.File), len(cfg.Boxes))
			switch {
			case lock == nil:
				env.Warnf("boxes.lock not found; plan will need it")
				fmt.Fprintln(env.Err, "boxes: hint: build the image (see README) and pin it with boxes lock image REF")
			case lock.Image == nil:
				env.Warnf("boxes.lock has pins but no image; plan will need one")
				fmt.Fprintln(env.Err, "boxes: hint: pin an image with boxes lock image REF")
			default:
				fmt.Fprintf(env.Out, "boxes.lock: image %s OK\n", lock.Image.ID)
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
	file := filepath.Join(dir, "boxes.yaml")
	if _, err := os.Stat(file); err == nil {
		return withHint(fmt.Errorf("%s already exists; not overwriting it", file), "edit it, or run boxes validate")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(file, spec.Scaffold(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(env.Out, "wrote %s\n", file)
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
	for _, l := range splitLines(text) {
		if l == line {
			return true
		}
	}
	return false
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

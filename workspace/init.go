package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-box/boxes/spec"
)

// ErrExists is a boxes.yaml that init would overwrite.
var ErrExists = errors.New("already exists; not overwriting it")

// Init writes a starter boxes.yaml in dir, and adds .boxes/ and backups/ to
// its .gitignore (keeping what is there). It returns the files it wrote.
func Init(dir string) ([]string, error) {
	file := filepath.Join(dir, "boxes.yaml")
	if _, err := os.Stat(file); err == nil {
		return nil, fmt.Errorf("%s %w", file, ErrExists)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, spec.Scaffold(spec.FleetFromDir(file)), 0o644); err != nil {
		return nil, err
	}
	wrote := []string{file}
	ignore := filepath.Join(dir, ".gitignore")
	have, err := os.ReadFile(ignore)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return wrote, err
	}
	add := ""
	for _, line := range []string{".boxes/", "backups/"} {
		if !containsLine(string(have), line) {
			add += line + "\n"
		}
	}
	if add == "" {
		return wrote, nil
	}
	if len(have) > 0 && have[len(have)-1] != '\n' {
		add = "\n" + add
	}
	f, err := os.OpenFile(ignore, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return wrote, err
	}
	if _, err := f.WriteString(add); err != nil {
		f.Close()
		return wrote, err
	}
	return append(wrote, ignore), f.Close()
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

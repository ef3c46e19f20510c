package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/spec"
)

// ErrExists is a boxes.yaml that init would overwrite.
var ErrExists = hint.New("already exists; not overwriting it", "edit it, or run boxes validate")

// SchemaFile is where Init puts the JSON Schema of boxes.yaml, beside it, for
// the editors that read the scaffold's first line.
const SchemaFile = "boxes.schema.json"

// SchemaLine is the first line Init writes: editors with yaml-language-server
// (VS Code's YAML extension, Neovim's yamlls, …) read the schema it names.
const SchemaLine = "# yaml-language-server: $schema=./" + SchemaFile + "\n"

// Init writes a starter boxes.yaml in dir naming its schema, the schema
// beside it, and adds .boxes/ and backups/ to its .gitignore (keeping what is
// there). It returns the files it wrote.
func Init(dir string) ([]string, error) {
	file := filepath.Join(dir, "boxes.yaml")
	if _, err := os.Stat(file); err == nil {
		return nil, fmt.Errorf("%s %w", file, ErrExists)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, append([]byte(SchemaLine), spec.Scaffold(spec.FleetFromDir(file))...), 0o644); err != nil {
		return nil, err
	}
	wrote := []string{file}
	schema := filepath.Join(dir, SchemaFile)
	if err := os.WriteFile(schema, spec.Schema(), 0o644); err != nil {
		return wrote, err
	}
	wrote = append(wrote, schema)
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

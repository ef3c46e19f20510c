package compose

import (
	"bytes"
	"maps"

	"github.com/compose-spec/compose-go/v2/types"
)

// YAML renders the project as compose YAML for a person to read, with the
// token replaced by Redacted. p itself is not changed. Every "$" is written
// "$$", compose's escape, so that docker compose, which interpolates every
// value it reads, gives the box's values back unchanged.
func YAML(p *types.Project) ([]byte, error) {
	shown := *p
	shown.Services = make(types.Services, len(p.Services))
	for name, s := range p.Services {
		if _, ok := s.Environment[TokenVar]; ok {
			s.Environment = maps.Clone(s.Environment)
			s.Environment[TokenVar] = new(Redacted)
		}
		s.Environment = redactGate(s.Environment)
		shown.Services[name] = s
	}
	out, err := shown.MarshalYAML()
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(out, []byte("$"), []byte("$$")), nil
}

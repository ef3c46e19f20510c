package workspace

import "github.com/hermes-box/boxes/compose"

// NoImage stands in for the image in a compose project when boxes.lock has
// none yet.
const NoImage = "<no image locked: run boxes build>"

// ComposeYAML is box name's generated compose project as YAML, its token
// redacted; placeholder says the lock has no image and NoImage stands in.
func (w *Workspace) ComposeYAML(name string) (out []byte, placeholder bool, err error) {
	box, ok := w.Config.Box(name)
	if !ok {
		return nil, false, w.Undeclared(name)
	}
	image := w.Image()
	if image == "" {
		image, placeholder = NoImage, true
	}
	p, err := compose.Project(compose.Input{Box: box, Image: image, WorkDir: w.Dir(), ConfigFile: w.Path})
	if err != nil {
		return nil, placeholder, err
	}
	out, err = compose.YAML(p)
	return out, placeholder, err
}

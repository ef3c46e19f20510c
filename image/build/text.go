package build

import (
	"fmt"
	"io"

	"github.com/hermes-box/boxes/internal/text"
)

// WriteText writes the result as boxes build prints it: what was done, the
// image, and the lock written.
func (r Result) WriteText(w io.Writer) {
	if r.Built {
		fmt.Fprintf(w, "built %s in %.1fs, %d of %s from the cache\n", r.Ref, r.Seconds, r.Cached, text.Plural(r.Steps, "step", "steps"))
	} else {
		fmt.Fprintln(w, "boxes.lock's image is current (same inputs, and the engine has it); nothing to build. --force rebuilds")
	}
	fmt.Fprintf(w, "image %s (%s), inputs %s\n", r.Image, r.Ref, r.Inputs)
	if r.Pushed != "" {
		fmt.Fprintf(w, "pushed as %s\n", r.Pushed)
	}
	switch {
	case r.Lock != "" && r.Pushed != "":
		fmt.Fprintf(w, "%s: image section written, its ref the pushed digest: hosts that lack the image pull it\n", r.Lock)
	case r.Lock != "":
		fmt.Fprintf(w, "%s: image section written\n", r.Lock)
	}
}

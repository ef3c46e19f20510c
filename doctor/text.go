package doctor

import (
	"fmt"
	"io"
)

// WriteText writes the report as boxes doctor prints it: a line per check,
// then the verdict.
func (r *Report) WriteText(w io.Writer) {
	for _, c := range r.Checks {
		label := map[string]string{"ok": "ok", "warn": "warn"}[c.Severity]
		if label == "" {
			label = "FAIL"
		}
		fmt.Fprintf(w, "%-4s  %-4s  %-26s %s\n", label, c.Where, c.Name, c.Detail)
	}
	if r.OK {
		fmt.Fprintf(w, "box %s is healthy\n", r.Box)
	} else {
		fmt.Fprintf(w, "box %s has problems (FAIL lines above)\n", r.Box)
	}
}

package build

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Printer shows the builder's output on w: every step with the time,
// whether it came from the cache, and (unless quiet) what its command
// printed. The builder's bookkeeping lines (layer IDs, intermediate
// containers) are left out.
func Printer(w io.Writer, quiet bool) func(string) {
	return func(l string) {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "Step "):
			// An instruction can be hundreds of characters (the ARG list).
			if r := []rune(l); len(r) > 120 {
				l = string(r[:119]) + "…"
			}
			fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), l)
		case t == "---> Using cache":
			fmt.Fprintln(w, "         (from the cache)")
		case t == "", strings.HasPrefix(t, "---> "), strings.HasPrefix(t, "Removing intermediate container"),
			strings.HasPrefix(t, "Successfully built"), strings.HasPrefix(t, "Successfully tagged"):
		default:
			if !quiet {
				fmt.Fprintf(w, "         %s\n", l)
			}
		}
	}
}

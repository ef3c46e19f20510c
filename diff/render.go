package diff

import (
	"fmt"
	"io"
	"strings"

	"github.com/hermes-box/boxes/reconcile"
)

// ShortCommit is the commit as people read it.
func (r *Result) ShortCommit() string {
	if len(r.Commit) > 12 {
		return r.Commit[:12]
	}
	return r.Commit
}

// against is REF and its commit, each quoted by q (plain text or Markdown code).
func (r *Result) against(q func(string) string) string {
	if r.Ref == r.Commit || strings.HasPrefix(r.Commit, r.Ref) {
		return q(r.ShortCommit())
	}
	return fmt.Sprintf("%s (%s)", q(r.Ref), q(r.ShortCommit()))
}

func plain(s string) string { return s }
func code(s string) string  { return "`" + s + "`" }

func (r *Result) unknownLine() string {
	return "Not known without the engines: " + strings.Join(Unknown, ", ") + ". boxes plan shows them."
}

// RenderText writes the header, then the plan as boxes plan writes it.
func (r *Result) RenderText(w io.Writer, colour bool) {
	fmt.Fprintf(w, "boxes diff: boxes.yaml and boxes.lock against %s, as if %s had been applied.\n", r.against(plain), r.Ref)
	fmt.Fprintln(w, r.unknownLine())
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s.\n", n)
	}
	fmt.Fprintln(w)
	r.Plan.RenderText(w, colour)
}

// RenderMarkdown writes the diff for a pull-request comment.
func (r *Result) RenderMarkdown(w io.Writer) {
	notes := make([]string, 0, len(r.Notes)+1)
	for _, n := range r.Notes {
		notes = append(notes, "Note: "+n+".")
	}
	notes = append(notes, r.unknownLine())
	r.Plan.RenderMarkdownView(w, reconcile.MarkdownView{
		Title:    "boxes diff against " + r.against(code),
		Notes:    notes,
		NoEngine: true,
	})
}

// JSON is a plan's JSON (format_version and all) with what the diff was made against.
type JSON struct {
	reconcile.JSONPlan
	Ref     string   `json:"ref"`
	Commit  string   `json:"commit"`
	Notes   []string `json:"notes"`
	Unknown []string `json:"unknown"`
}

// JSON is the diff in its machine form.
func (r *Result) JSON() JSON {
	notes := r.Notes
	if notes == nil {
		notes = []string{}
	}
	return JSON{JSONPlan: r.Plan.JSON(), Ref: r.Ref, Commit: r.Commit, Notes: notes, Unknown: Unknown}
}

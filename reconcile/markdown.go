package reconcile

import (
	"fmt"
	"io"
	"strings"
)

// MarkdownView says how a plan is headed in a pull-request comment.
type MarkdownView struct {
	// Title leads the summary line, e.g. "boxes plan" or "boxes diff against `main`".
	Title string
	// Notes are shown in italics under everything else: what the plan could not see.
	Notes []string
	// NoEngine marks a plan made without the engines: a delete's backup was
	// not looked for, rather than not found.
	NoEngine bool
}

// RenderMarkdownView writes the plan for a pull-request comment so that it
// reads at a glance once rendered: the summary line in bold first, then every
// delete in a quote of its own naming the volumes that go, then one table row
// per changed box with its reasons, and only then the terraform-like plan,
// folded, in a diff fence so the code host colours + and -.
func (p *Plan) RenderMarkdownView(w io.Writer, v MarkdownView) {
	title := v.Title
	if title == "" {
		title = "boxes plan"
	}
	fmt.Fprintf(w, "**%s: %s**\n", title, p.SummaryLine())
	if len(p.Target) > 0 {
		fmt.Fprintf(w, "\n_Limited to --target %s._\n", strings.Join(p.Target, ", "))
	}
	if p.Changes() {
		p.markdownDeletes(w, v.NoEngine)
		p.markdownTable(w)
		p.markdownFull(w)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(w, "\n_%s_\n", n)
	}
}

// markdownDeletes writes a caution per deleted box, naming the volumes that
// go and its backup ("not looked for" without an engine).
func (p *Plan) markdownDeletes(w io.Writer, noEngine bool) {
	for _, b := range p.Boxes {
		if b.Action != Delete || b.Delete == nil {
			continue
		}
		var vols []string
		for _, vol := range b.Delete.Volumes {
			vols = append(vols, fmt.Sprintf("`%s` (%s)", vol.Name, HumanSize(vol.Size)))
		}
		backup := "backup: " + b.Delete.backupText()
		if noEngine && b.Delete.Backup == "" {
			backup = "backups not looked for (no engine)"
		}
		// A GitHub alert: a red box with "Caution" on the code host.
		fmt.Fprintf(w, "\n> [!CAUTION]\n> **Box `%s` is deleted with its data%s.**", b.Name, onHost(b.Host))
		if len(vols) > 0 {
			fmt.Fprintf(w, " Volumes %s go;", strings.Join(vols, ", "))
		}
		fmt.Fprintf(w, " %s. Applying asks for the box's name (or `--confirm-delete %s`).\n", backup, b.Name)
	}
}

// markdownTable writes each move's note, then a table row per changed box.
func (p *Plan) markdownTable(w io.Writer) {
	for _, b := range p.Boxes {
		if b.Action == Move && b.Move != nil {
			fmt.Fprint(w, b.Move.note(b.Name))
		}
	}
	fmt.Fprint(w, "\n| | box | action | why |\n| --- | --- | --- | --- |\n")
	for _, b := range p.Boxes {
		if b.Action == NoOp {
			continue
		}
		var why []string
		for _, r := range b.Reasons {
			why = append(why, cell(r.String()))
		}
		name, action := "`"+b.Name+"`", string(b.Action)
		if b.GateOnly {
			action += " the gate (the agent keeps running)"
		}
		if b.ExecutorAndGate {
			action += " the executor and the gate (the agent keeps running)"
		}
		if b.Action == Delete {
			name, action = "**`"+b.Name+"`**", "**delete, with its data**"
		}
		fmt.Fprintf(w, "| `%s` | %s%s | %s | %s |\n", symbols[b.Action], name, onHost(b.Host), action, strings.Join(why, "<br>"))
	}
}

// markdownFull writes the terraform-like plan, folded, in a diff fence.
func (p *Plan) markdownFull(w io.Writer) {
	fmt.Fprint(w, "\n<details><summary>Full plan</summary>\n\n```diff\n")
	for _, t := range p.Images {
		fmt.Fprintf(w, "# %s\n", t)
	}
	for _, b := range p.Boxes {
		if b.Action == NoOp {
			continue
		}
		// A line starting with "-" is red in a diff fence: keep red for deletes,
		// and mark a recreate (volumes kept) with "!" instead of "-/+".
		symbol := symbols[b.Action]
		if b.Action == Recreate {
			symbol = "!"
		}
		fmt.Fprintf(w, "%s %s %s%s\n", symbol, b.Action, b.Name, onHost(b.Host))
		for _, r := range b.Reasons {
			fmt.Fprintf(w, "#     %s\n", r.String())
		}
		if d := b.Door; d != nil {
			for _, line := range d.lines() {
				fmt.Fprintf(w, "+     %s\n", line)
			}
		}
		if d := b.Delete; d != nil {
			for _, line := range d.lines() {
				fmt.Fprintf(w, "-     %s\n", line)
			}
		}
		if m := b.Move; m != nil {
			for _, line := range m.lines() {
				fmt.Fprintf(w, "#     %s\n", line)
			}
		}
	}
	fmt.Fprint(w, "```\n\n</details>\n")
}

func onHost(host string) string {
	if host == "" {
		return ""
	}
	return " on host " + host
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

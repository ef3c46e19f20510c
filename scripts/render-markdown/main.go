// Command render-markdown turns Markdown (a plan's --markdown, say) into a
// standalone HTML page styled like a code host's comment, GitHub-flavoured
// (tables, strikethrough, task lists) and with raw HTML such as <details>
// kept, so that headless Chromium can take a picture of what reviewers see.
//
//	render-markdown < plan.md > plan.html
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>%s</title>
<style>
body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; font-size: 14px; line-height: 1.5;
  color: #1f2328; background: #fff; margin: 0; padding: 16px; width: 880px; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; }
.comment > header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px; color: #59636e; }
.comment > .body { padding: 16px; }
.body > :first-child { margin-top: 0; }
p, blockquote, table, pre, details { margin: 0 0 16px; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 85%%; background: #eff2f5; border-radius: 6px; padding: .2em .4em; }
pre { background: #f6f8fa; border-radius: 6px; padding: 16px; overflow: auto; font-size: 85%%; line-height: 1.45; }
pre code { background: none; padding: 0; font-size: 100%%; }
blockquote { border-left: .25em solid #d1d9e0; color: #59636e; padding: 0 1em; margin-left: 0; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; vertical-align: top; }
th { font-weight: 600; background: #f6f8fa; }
summary { cursor: pointer; }
blockquote.caution { border-left-color: #d1242f; color: #1f2328; }
blockquote.caution .alert-title { color: #d1242f; font-weight: 600; margin-bottom: 4px; }
.diff-add { color: #116329; background: #dafbe1; display: block; }
.diff-del { color: #82071e; background: #ffebe9; display: block; }
.diff-change { color: #953800; background: #fff1e5; display: block; }
.diff-comment { color: #59636e; display: block; }
</style></head>
<body><div class="comment"><header>github-actions commented</header><div class="body">
%s
</div></div></body></html>
`

func main() {
	src, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "render-markdown:", err)
		os.Exit(1)
	}
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(html.WithUnsafe()),
	)
	var body bytes.Buffer
	if err := md.Convert(src, &body); err != nil {
		fmt.Fprintln(os.Stderr, "render-markdown:", err)
		os.Exit(1)
	}
	fmt.Printf(page, "boxes plan", alerts(colourDiff(body.String())))
}

// colourDiff colours the lines of ```diff blocks by their first character,
// as the code host's highlighter does: + green, - red, ! orange, # grey.
func colourDiff(doc string) string {
	const open, end = `<pre><code class="language-diff">`, `</code></pre>`
	var out strings.Builder
	for {
		i := strings.Index(doc, open)
		if i < 0 {
			out.WriteString(doc)
			return out.String()
		}
		j := strings.Index(doc[i:], end)
		if j < 0 {
			out.WriteString(doc)
			return out.String()
		}
		out.WriteString(doc[:i+len(open)])
		block := doc[i+len(open) : i+j]
		for _, line := range strings.SplitAfter(block, "\n") {
			if line == "" {
				continue
			}
			text := strings.TrimSuffix(line, "\n")
			class := ""
			switch {
			case strings.HasPrefix(text, "+"):
				class = "diff-add"
			case strings.HasPrefix(text, "-"):
				class = "diff-del"
			case strings.HasPrefix(text, "!"):
				class = "diff-change"
			case strings.HasPrefix(text, "#"):
				class = "diff-comment"
			}
			if class == "" {
				out.WriteString(line)
				continue
			}
			fmt.Fprintf(&out, `<span class="%s">%s</span>`, class, text)
		}
		out.WriteString(end)
		doc = doc[i+j+len(end):]
	}
}

// alerts renders GitHub's alert blockquotes ("> [!CAUTION]" on the first
// line) as GitHub does: a coloured bar and title. Only CAUTION is used.
func alerts(doc string) string {
	return strings.ReplaceAll(doc, "<blockquote>\n<p>[!CAUTION]\n",
		`<blockquote class="caution"><p class="alert-title">&#9888; Caution</p><p>`)
}

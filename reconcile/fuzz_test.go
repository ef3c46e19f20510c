package reconcile_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

var fuzzKinds = []string{"new", "restore", "state", "created", "paused", "frozen", "image", "config", "missing", "nocontainers", "dead",
	"restarting", "exited", "network", "disconnected", "published", "volume", "duplicate", "renamed", "replace", "token", "undeclared", "incomplete", "other", "fork"}

var fuzzActions = []reconcile.Action{reconcile.Create, reconcile.Start, reconcile.Stop, reconcile.Recreate, reconcile.Delete, reconcile.NoOp}

// fuzzPlan reads a plan out of arbitrary bytes: each box takes a byte for
// its action, one for its reasons, and a name and values cut from the text.
func fuzzPlan(data []byte, text string) *reconcile.Plan {
	p := &reconcile.Plan{Image: text}
	words := strings.Split(text, "|")
	word := func(i int) string { return words[i%len(words)] }
	for i := 0; i+1 < len(data) && len(p.Boxes) < 50; i += 2 {
		b := reconcile.BoxPlan{Name: word(i), Host: word(i + 1), Action: fuzzActions[int(data[i])%len(fuzzActions)], State: spec.State(word(i + 2))}
		for j := 0; j < int(data[i+1])%4; j++ {
			b.Reasons = append(b.Reasons, reconcile.Reason{
				Kind: fuzzKinds[(int(data[i+1])+j)%len(fuzzKinds)], Service: word(i + j), Field: word(i + j + 1),
				Old: word(i + j + 2), New: word(i + j + 3), ExitCode: int(int8(data[i])), Restarts: int(data[i+1]),
			})
		}
		if b.Action == reconcile.Delete && data[i]%3 != 0 {
			b.Delete = &reconcile.Deletion{
				Containers: []reconcile.NamedID{{Name: word(i), ID: word(i + 1)}},
				Volumes:    []reconcile.DeletedVolume{{Name: word(i + 2), Size: int64(int8(data[i+1])) << (data[i] % 64), Unread: word(i + 3)}},
				Backup:     word(i + 4),
			}
		}
		p.Boxes = append(p.Boxes, b)
	}
	if len(data)%2 == 1 {
		p.Target = words
	}
	return p
}

// FuzzRender: every plan renders in all four forms without a panic; the JSON
// reads back with the same boxes and actions, and the text ends with the
// summary line.
func FuzzRender(f *testing.F) {
	f.Add([]byte{}, "")
	f.Add([]byte{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}, "alpha|edge|running|agent|env.TZ|UTC|Europe/Berlin")
	f.Add([]byte{3, 11, 4, 2, 4, 0}, "web||stopped|executor|\x1b[31m|\xff|💥")
	f.Add([]byte{4, 255, 4, 128, 9}, "old|host|x|<details>|```|-1")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		p := fuzzPlan(data, text)
		var buf bytes.Buffer
		p.RenderText(&buf, false)
		if !strings.HasSuffix(buf.String(), p.SummaryLine()+"\n") && p.Changes() {
			t.Fatalf("text does not end with the summary:\n%s", buf.String())
		}
		buf.Reset()
		p.RenderText(&buf, true)
		buf.Reset()
		p.RenderMarkdown(&buf)
		if !strings.HasPrefix(buf.String(), "**boxes plan:** "+p.SummaryLine()) {
			t.Fatalf("markdown does not start with the summary:\n%s", buf.String())
		}
		buf.Reset()
		if err := p.RenderJSON(&buf); err != nil {
			t.Fatalf("RenderJSON: %v", err)
		}
		var back reconcile.JSONPlan
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatalf("JSON does not read back: %v\n%s", err, buf.String())
		}
		if len(back.Boxes) != len(p.Boxes) || back.Changes != p.Changes() || back.Summary != p.Summary() {
			t.Fatalf("JSON read back differs: %+v", back)
		}
		for i, b := range back.Boxes {
			if b.Action != p.Boxes[i].Action || len(b.Reasons) != len(p.Boxes[i].Reasons) {
				t.Fatalf("box %d read back as %+v", i, b)
			}
		}
		_ = p.Stable()
	})
}

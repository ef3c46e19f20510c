package spec

import (
	"strings"
	"testing"
)

// executorExample gives the executor a door in the defaults, and boxes and
// a pool that inherit, replace or leave parts of it.
const executorExample = `version: 1
defaults:
  egress: [api.anthropic.com]
  executor:
    egress: [api.github.com, "*.npmjs.org", "198.51.100.7:8080"]
    private: ["192.168.1.10:5432"]
boxes:
  inherits: {}
  own:
    executor: {egress: none, bind: 0.0.0.0}
  exceptions:
    executor:
      private: [10.0.0.0/8]
  open:
    executor: {egress: open, private: []}
pools:
  scratch: {size: 1}
`

func TestParseExecutorDoor(t *testing.T) {
	cfg, err := Parse("boxes.yaml", []byte(executorExample))
	if err != nil {
		t.Fatal(err)
	}
	text := func(ds []Destination) string {
		out := make([]string, len(ds))
		for i, d := range ds {
			out[i] = d.String()
		}
		return strings.Join(out, " ")
	}
	const list = "api.github.com *.npmjs.org 198.51.100.7:8080"
	d := cfg.Defaults.Executor
	if !d.Door || d.Egress.Mode != EgressList || text(d.Egress.Allow) != list || text(d.Private) != "192.168.1.10:5432" {
		t.Errorf("defaults' executor: %+v", d)
	}
	boxes := map[string]Box{}
	for _, b := range cfg.Boxes {
		boxes[b.Name] = b
	}
	for _, tc := range []struct {
		name, egress, allow, private, bind string
	}{
		{"inherits", "list", list, "192.168.1.10:5432", "127.0.0.1"},
		{"own", "none", "", "192.168.1.10:5432", "0.0.0.0"},
		{"exceptions", "list", list, "10.0.0.0/8", "127.0.0.1"},
		{"open", "open", "", "", "127.0.0.1"},
	} {
		e := boxes[tc.name].Executor
		if !e.Door || e.Egress.Mode.String() != tc.egress || text(e.Egress.Allow) != tc.allow || text(e.Private) != tc.private || e.Bind != tc.bind {
			t.Errorf("box %s's executor: %+v", tc.name, e)
		}
		// The agent's rules are its own.
		if b := boxes[tc.name]; b.Egress.Mode != EgressList || text(b.Egress.Allow) != "api.anthropic.com" || len(b.Private) != 0 {
			t.Errorf("box %s's agent rules: %+v %v", tc.name, b.Egress, b.Private)
		}
	}
	if p := cfg.Pools[0]; !p.Executor.Door || text(p.Executor.Egress.Allow) != list {
		t.Errorf("pool's executor: %+v", p.Executor)
	}
	// Each box owns its executor's lists.
	boxes["inherits"].Executor.Egress.Allow[0] = Destination{Host: "changed"}
	boxes["inherits"].Executor.Private[0] = Destination{Host: "changed"}
	if cfg.Defaults.Executor.Egress.Allow[0].Host != "api.github.com" || cfg.Defaults.Executor.Private[0].Host != "" || boxes["exceptions"].Executor.Egress.Allow[0].Host != "api.github.com" {
		t.Error("an executor's lists are shared with the defaults or another box")
	}

	// Without executor: egress: the executor has no door, whatever the agent's rules.
	cfg, err = Parse("boxes.yaml", []byte("version: 1\ndefaults: {egress: none}\nboxes:\n  a: {executor: {port: 4800}}\n  b: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range cfg.Boxes {
		if b.Executor.Door || b.Executor.Egress.Allow != nil || b.Executor.Private != nil {
			t.Errorf("box %s's executor has a door it was not given: %+v", b.Name, b.Executor)
		}
	}
}

func TestParseExecutorDoorErrors(t *testing.T) {
	box := func(lines ...string) string {
		return "version: 1\nboxes:\n  a:\n    executor:\n" + strings.Join(lines, "\n") + "\n"
	}
	const opens = `list it under executor: private: (private: [`
	for _, tc := range []struct {
		name, src string
		line, col int
		msg, hint string
	}{
		{"egress URL", box(`      egress: [api.x.com, "https://x"]`), 5, 27, `egress: "https://x": a destination is a host name, not a URL`, "write the host alone: x"},
		{"egress empty", box(`      egress: []`), 5, 15, "egress: [] lists no destination", "write egress: none"},
		{"egress word", box(`      egress: closed`), 5, 15, `egress is open, none or a list of destinations, not "closed"`, "egress: open"},
		{"egress one destination", box(`      egress: api.x.com`), 5, 15, `not "api.x.com"`, "egress: [api.x.com]"},
		{"egress duplicate", box(`      egress: [api.x.com, API.X.COM]`), 5, 27, `"API.X.COM" is the same destination as "api.x.com" (line 5)`, "remove one"},
		{"egress port", box(`      egress: ["x.com:0"]`), 5, 16, "port 0 is out of range", ""},
		{"egress mapping", box(`      egress: {open: true}`), 5, 15, "found a mapping", ""},
		{"private scalar", box(`      egress: open`, `      private: 192.168.1.10`), 6, 16, `private is a list of destinations, not "192.168.1.10"`, "private: [192.168.1.10]"},
		{"private URL", box(`      egress: open`, `      private: ["https://db.lan"]`), 6, 17, "not a URL", "db.lan"},
		{"private without a door", box(`      private: [10.0.0.0/8]`), 5, 7, "executor: private: lists exceptions to the executor's door, which it has only with executor: egress:", "egress: open keeps"},
		{"private without a door in the defaults", "version: 1\ndefaults:\n  executor: {private: [db.lan]}\nboxes:\n  a: {}\n", 3, 14, "only with executor: egress:", ""},
		{"unknown key", box(`      egres: none`), 5, 7, `unknown key "egres"`, `did you mean "egress"?`},
		{"closed address", box(`      egress: [api.x.com, 10.0.0.1]`), 5, 27, `executor: egress: "10.0.0.1" is in 10.0.0.0/8, a private range the gate closes whatever executor: egress: says`, opens + `"10.0.0.1"])`},
		{"closed, opened to the agent only", box(`      egress: [169.254.169.254]`, `    private: [169.254.0.0/16]`), 5, 16, "169.254.0.0/16, the link-local range", opens},
		{"closed IPv6", box(`      egress: ["fd00::1"]`), 5, 16, "fc00::/7", "list the name under executor: private:"},
		{"closed, inherited", "version: 1\ndefaults:\n  executor: {egress: [10.1.2.3], private: [10.1.2.3]}\nboxes:\n  a:\n    executor: {private: [db.lan]}\n", 6, 25,
			`executor: egress: "10.1.2.3", from the defaults, is in 10.0.0.0/8, a private range the gate closes whatever executor: egress: says, and box a's executor's private: does not open it`, opens},
		{"closed in a pool", "version: 1\nboxes: {}\npools:\n  p:\n    size: 1\n    executor: {egress: [\"10.9.0.0/16:443\"]}\n", 6, 25, `executor: egress: "10.9.0.0/16:443" is in 10.0.0.0/8`, opens},
		{"on a kubernetes host", "version: 1\nhosts:\n  k: {kubernetes: {context: c, namespace: n}}\nboxes:\n  a:\n    host: k\n    executor: {egress: none}\n", 7, 24, "a is on kubernetes: host k, for which the executor's door (executor: egress:) is not built", "leave executor: egress: out"},
		{"on a kubernetes host, from the defaults", "version: 1\nhosts:\n  k: {kubernetes: {context: c, namespace: n}}\ndefaults:\n  executor: {egress: none}\nboxes: {}\npools:\n  p: {size: 1, host: k}\n", 5, 22, "p is on kubernetes: host k", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := firstError(t, tc.src, tc.line, tc.col, tc.msg, tc.hint)
			if len(errs) != 1 {
				t.Errorf("%d errors, want one: %v", len(errs), errs)
			}
		})
	}
	// Accepted: what the executor's own private: opens, and the agent's
	// rules closing what the executor's open.
	for _, src := range []string{
		box(`      egress: [10.0.0.1, api.x.com]`, `      private: ["10.0.0.0/8"]`),
		"version: 1\ndefaults:\n  executor: {egress: [10.1.2.3], private: [10.1.2.3]}\nboxes:\n  a: {egress: none}\n",
		box(`      egress: none`, `      private: [db.lan]`),
	} {
		if _, err := Parse("boxes.yaml", []byte(src)); err != nil {
			t.Errorf("refused: %v\n%s", err, src)
		}
	}
}

package spec

import (
	"regexp"
	"testing"
)

func TestParseFrom(t *testing.T) {
	src := `version: 1
pools:
  scratch: {size: 2, from: "base@clean"}
boxes:
  base: {}
  trial: {from: "base@before-upgrade"}
  copy: {from: base}
  plain: {}
`
	cfg, err := Parse("boxes.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"base": "", "trial": "base@before-upgrade", "copy": "base", "plain": ""}
	for name, from := range want {
		b, _ := cfg.Box(name)
		if b.From != from {
			t.Errorf("box %s: From = %q, want %q", name, b.From, from)
		}
	}
	p, _ := cfg.Pool("scratch")
	if p.From != "base@clean" || p.PoolBox("scratch-1", "").From != "base@clean" {
		t.Errorf("pool scratch: From = %q, its box's %q; want base@clean", p.From, p.PoolBox("scratch-1", "").From)
	}
	for from, want := range map[string][2]string{"alpha": {"alpha", ""}, "alpha@x.1": {"alpha", "x.1"}} {
		if box, label := SplitFrom(from); box != want[0] || label != want[1] {
			t.Errorf("SplitFrom(%q) = %q, %q; want %q, %q", from, box, label, want[0], want[1])
		}
	}
}

func TestParseFromErrors(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
		msg, hint string
	}{
		{"not a box", "version: 1\nboxes:\n  a: {from: \"Alpha\"}\n", 3, 13, `from: "Alpha" does not name a box`, "from: alpha@before-upgrade"},
		{"empty", "version: 1\nboxes:\n  a: {from: \"\"}\n", 3, 13, `from: "" does not name a box`, ""},
		{"bad label", "version: 1\nboxes:\n  a: {from: \"b@Before\"}\n  b: {}\n", 3, 13, `"Before" is not a snapshot label`, "1 to 63 characters"},
		{"empty label", "version: 1\nboxes:\n  a: {from: \"b@\"}\n  b: {}\n", 3, 13, `"" is not a snapshot label`, ""},
		{"itself", "version: 1\nboxes:\n  a: {from: a}\n", 3, 13, "box a cannot be seeded from itself", ""},
		{"not a string", "version: 1\nboxes:\n  a: {from: [b]}\n", 3, 13, "expected a string", ""},
		{"and restore", "version: 1\nboxes:\n  a: {from: b, restore: a.tar.s2.age}\n  b: {}\n", 3, 13, "box a is seeded from both an archive (restore:) and a box (from:)", "keep restore:"},
		{"undeclared box", "version: 1\nboxes:\n  a: {from: b}\n", 3, 13, "box a is seeded from box b, which boxes.yaml does not declare", "from: b@LABEL"},
		{"another host", "version: 1\nhosts:\n  far: {docker: \"ssh://far\"}\nboxes:\n  a: {from: b}\n  b: {host: far}\n", 5, 13, "box a (on the local engine) cannot be seeded from box b (on host far)", "save it and load it there"},
		{"a fork of a fork", "version: 1\nboxes:\n  a: {from: b}\n  b: {from: c@x}\n", 3, 13, "box a is seeded from box b, which is itself seeded when created", "from: b@LABEL"},
		{"a fork of a restore", "version: 1\nboxes:\n  a: {from: b}\n  b: {restore: b.tar.s2.age}\n", 3, 13, "which is itself seeded", ""},
		{"a pool from a box", "version: 1\nboxes:\n  b: {}\npools:\n  p: {size: 1, from: b}\n", 5, 22, "pool p's boxes are reset to its clean state, so its from: names a snapshot", "boxes snapshot b LABEL"},
		{"a pool from a bad label", "version: 1\npools:\n  p: {size: 1, from: \"b@-x\"}\n", 3, 22, `"-x" is not a snapshot label`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { firstError(t, tc.src, tc.line, tc.col, tc.msg, tc.hint) })
	}
}

// The schema's from: patterns take what the parser takes.
func TestFromSchemaPattern(t *testing.T) {
	box, pool := regexp.MustCompile(fromPattern(false)), regexp.MustCompile(fromPattern(true))
	for _, tc := range []struct {
		from      string
		box, pool bool
	}{
		{"alpha", true, false},
		{"alpha@before-upgrade", true, true},
		{"alpha@20260102-150405", true, true},
		{"Alpha", false, false},
		{"alpha@", false, false},
		{"alpha@-x", false, false},
		{"alpha@x@y", false, false},
	} {
		if box.MatchString(tc.from) != tc.box || pool.MatchString(tc.from) != tc.pool {
			t.Errorf("%q: box pattern %v, pool pattern %v; want %v, %v", tc.from, box.MatchString(tc.from), pool.MatchString(tc.from), tc.box, tc.pool)
		}
	}
}

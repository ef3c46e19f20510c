package spec

import (
	"strings"
	"testing"
)

func TestParsePools(t *testing.T) {
	src := `version: 1
defaults:
  memory: 2GiB
  env: {A: "1"}
hosts:
  far: {docker: "ssh://far"}
pools:
  scratch: {size: 3, cpus: 2, env: {B: "2"}}
  remote: {size: 0, host: far, egress: none}
boxes:
  alpha: {}
`
	cfg, err := Parse("boxes.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Pools) != 2 || cfg.Pools[0].Name != "remote" || cfg.Pools[1].Name != "scratch" {
		t.Fatalf("pools %+v, want remote and scratch, by name", cfg.Pools)
	}
	remote, scratch := cfg.Pools[0], cfg.Pools[1]
	if scratch.Size != 3 || scratch.CPUs != 2 || scratch.Memory != 2<<30 || scratch.Host != "" || scratch.Line != 8 {
		t.Errorf("scratch = %+v", scratch)
	}
	if scratch.Env["A"] != "1" || scratch.Env["B"] != "2" {
		t.Errorf("scratch env %v, want the defaults' A and its own B", scratch.Env)
	}
	if remote.Host != "far" || remote.Size != 0 || remote.Egress.Mode != EgressNone {
		t.Errorf("remote = %+v", remote)
	}
	if got, ok := cfg.Pool("scratch"); !ok || got.Name != "scratch" {
		t.Errorf("Pool(scratch) = %v, %v", got, ok)
	}
	if _, ok := cfg.Pool("alpha"); ok {
		t.Error("a box is found as a pool")
	}
	b := scratch.PoolBox("scratch-2", cfg.Fleet)
	if b.Name != "scratch-2" || b.Pool != "scratch" || b.Fleet != cfg.Fleet || b.CPUs != 2 || b.State != Running {
		t.Errorf("PoolBox = %+v", b)
	}
	b.Env["B"] = "changed"
	if scratch.Env["B"] != "2" {
		t.Error("a pool box's env is shared with its pool's")
	}
	if p, ok := cfg.PoolOf("scratch-12"); !ok || p.Name != "scratch" {
		t.Errorf("PoolOf(scratch-12) = %v, %v", p.Name, ok)
	}
	for _, name := range []string{"scratch", "scratch-0", "scratch-01", "scratch-1000", "scratch-x", "alpha", "scratchy-1"} {
		if p, ok := cfg.PoolOf(name); ok {
			t.Errorf("PoolOf(%s) = pool %s, want none", name, p.Name)
		}
	}
}

func TestPoolBoxNames(t *testing.T) {
	for n := 1; n <= maxPoolBoxes; n++ {
		name := PoolBoxName("p", n)
		if got, ok := PoolBoxNumber("p", name); !ok || got != n {
			t.Fatalf("PoolBoxNumber(p, %s) = %d, %v", name, got, ok)
		}
	}
	long := strings.Repeat("a", 27)
	if !boxNamePattern().MatchString(PoolBoxName(long, maxPoolBoxes)) {
		t.Errorf("the last box of a pool with the longest name, %s, is not a box name", PoolBoxName(long, maxPoolBoxes))
	}
}

func TestParsePoolErrors(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
		msg, hint string
	}{
		{"no size", "version: 1\npools:\n  p: {cpus: 1}\n", 3, 3, "pool p has no size:", "size: 3"},
		{"size negative", "version: 1\npools:\n  p: {size: -1}\n", 3, 13, "a pool's size is from 0 to 100, not -1", ""},
		{"size too big", "version: 1\npools:\n  p: {size: 101}\n", 3, 13, "from 0 to 100, not 101", ""},
		{"size not a number", "version: 1\npools:\n  p: {size: many}\n", 3, 13, "expected a whole number", ""},
		{"bad name", "version: 1\npools:\n  Scratch: {size: 1}\n", 3, 3, `bad pool name "Scratch"`, "NAME-1"},
		{"long name", "version: 1\npools:\n  " + strings.Repeat("a", 28) + ": {size: 1}\n", 3, 3, "bad pool name", ""},
		{"not a mapping", "version: 1\npools:\n  p: 3\n", 3, 6, "a mapping with size:", ""},
		{"pools not a mapping", "version: 1\npools: [a]\n", 2, 8, "a mapping of pool names", ""},
		{"unknown key", "version: 1\npools:\n  p: {size: 1, memroy: 1GiB}\n", 3, 16, `unknown key "memroy"`, `did you mean "memory"?`},
		{"state", "version: 1\npools:\n  p: {size: 1, state: stopped}\n", 3, 16, `unknown key "state"`, ""},
		{"restore", "version: 1\npools:\n  p: {size: 1, restore: a.tar.s2.age}\n", 3, 16, `unknown key "restore"`, ""},
		{"fixed port", "version: 1\npools:\n  p: {size: 2, executor: {port: 9000}}\n", 3, 33, "pool p's boxes cannot share fixed executor port 9000", "port: auto"},
		{"fixed port in defaults", "version: 1\ndefaults:\n  executor: {port: 9000}\npools:\n  p: {size: 2}\n", 3, 20, "cannot share fixed executor port 9000", ""},
		{"undefined host", "version: 1\npools:\n  p: {size: 1, host: far}\n", 3, 22, `host "far" is not defined`, ""},
		{"bad setting", "version: 1\npools:\n  p: {size: 1, cpus: 0}\n", 3, 22, "cpus must be a positive number", ""},
		{"a box takes a pool box's name", "version: 1\nboxes:\n  p-2: {}\npools:\n  p: {size: 1}\n", 5, 3, "box p-2 (line 3) takes a name of pool p or of its boxes", "rename"},
		{"a box takes the pool's name", "version: 1\nboxes:\n  p: {}\npools:\n  p: {size: 1}\n", 5, 3, "box p (line 3) takes a name of pool p", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { firstError(t, tc.src, tc.line, tc.col, tc.msg, tc.hint) })
	}
}

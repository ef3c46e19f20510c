package spec

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// FuzzParse: whatever boxes.yaml holds, Parse returns a config or errors
// that each point inside the file, and never panics.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		string(Scaffold("team-a")),
		"version: 1\nfleet: x\ndefaults: {cpus: 2, memory: 4GiB, executor: {bind: 127.0.0.1, port: auto}}\nboxes:\n  a: {}\n  b: {state: stopped, env: {TZ: UTC}, executor: {port: 4800}}\n",
		"version: 1\nhosts:\n  nexus: {docker: ssh://me@nexus}\nboxes:\n  g: {host: nexus, restore: backups/g.tar.gz.age}\n",
		"version: 1\nboxes:\n  a: {executor: {port: 4800}}\n  b: {executor: {port: 4800, bind: 0.0.0.0}}\n",
		"version: 1\nboxes:\n  a: &x {cpus: 1}\n  b: *x\n  c: {<<: *x}\n",
		"version: 1\narchive: {recipients: [age1nope]}\n",
		"version: 1\nboxes:\n  a: {env: {X: \"\xff\"}}\n",
		"- a\n", "", "version: 1\nboxes:\n  a: b: c\n", "a: &x [*x]\n",
		"version: 1\ndefaults: {memory: 4GiB, executor: {port: auto}}\nboxes: {a: {env: {X: 1}}}\n",
		"version: 1\nboxes:\n  a: {}\n---\nboxes:\n  b: {}\n", "version: 1\n...\nx: 1\n", "version: 1\nboxes:\n  b: {cpus: 1\n",
		"version: 1\nboxes: {a: {env: {X: \"{\", Y: '['}}, b: *x}\n", "version: 1\nfleet: a\x00\n",
		"version: 1\ndefaults: {cpus: 1e308, memory: 1}\nboxes: {a: {cpus: .nan}, b: {memory: 0.5}}\n",
		networkExample,
		"version: 1\ndefaults: {egress: none, dns: [192.0.2.53]}\nboxes:\n  a: {egress: [\"*.x.com:443\", \"[2001:db8::1]:443\", 10.0.0.0/8:5432, X.com, x.com]}\n  b: {private: [\"https://x\", \"::ffff:1.2.3.4\"], egress: []}\n",
		"version: 1\nboxes:\n  a:\n    credentials:\n      k: {to: a.com, header: Host, from: \"env:1\", value: v}\n      l: {to: \"a.com:443\", header: x, from: \"file:~u\"}\n      m: {to: \"a.com\", header: X, from: \"file:k\"}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("boxes.yaml", data)
		if err == nil {
			if cfg == nil {
				t.Fatal("no config and no error")
			}
			for _, b := range cfg.Boxes {
				if !boxNamePattern().MatchString(b.Name) || (b.State != Running && b.State != Stopped) || b.Fleet != cfg.Fleet {
					t.Fatalf("accepted box %+v", b)
				}
				// Every number handed to the engine is one it takes.
				if (b.CPUs != 0 && !(b.CPUs >= MinCPUs && b.CPUs <= MaxCPUs)) || (b.Memory != 0 && (b.Memory < MinMemory || b.Memory > MaxMemory)) {
					t.Fatalf("accepted cpus %v, memory %d", b.CPUs, b.Memory)
				}
				// Every destination handed to the gate reads back from its text.
				ds := append(append([]Destination(nil), b.Egress.Allow...), b.Private...)
				for _, c := range b.Credentials {
					if c.To.Wildcard() || (c.To.Host == "" && !c.To.Prefix.IsSingleIP()) {
						t.Fatalf("accepted credential %+v", c)
					}
					ds = append(ds, c.To)
				}
				for _, d := range ds {
					if back, err := ParseDestination(d.String()); err != nil || back != d {
						t.Fatalf("destination %#v reads back as %#v, %v", d, back, err)
					}
				}
			}
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error %v is not Errors", err)
		}
		lines := yamlLines(data)
		for _, e := range errs {
			if e.Line < 1 || e.Line > lines || e.Col < 1 || e.Msg == "" {
				t.Fatalf("error outside the file (%d lines): %q", lines, e.Error())
			}
		}
	})
}

// FuzzDestination: a destination either is refused with a message, or its
// canonical text reads back to it and is its own canonical text.
func FuzzDestination(f *testing.F) {
	for _, seed := range []string{
		"api.anthropic.com", "*.GitHub.com:443", "198.51.100.7:8080", "10.0.0.0/8:5432", "10.0.0.1/32",
		"[2001:db8::1]:443", "2001:DB8::1", "fd00::/8", "https://x", "a..b", "x.com:0", "[::1]", "::ffff:1.2.3.4",
		"fe80::1%eth0", "1.2.3", "*", "10.0.0.1/8",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDestination(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q refused without a message", s)
			}
			return
		}
		text := d.String()
		back, err := ParseDestination(text)
		if err != nil || back != d || back.String() != text {
			t.Fatalf("%q reads as %#v, whose text %q reads back as %#v, %v", s, d, text, back, err)
		}
		if (d.Host != "") == d.Prefix.IsValid() || d.Port < 0 || d.Port > 65535 || d.Host != strings.ToLower(d.Host) {
			t.Fatalf("%q reads as %#v", s, d)
		}
	})
}

// FuzzParseLock: a lock either parses and writes back to the same lock, or
// is refused with positioned errors; never a panic.
func FuzzParseLock(f *testing.F) {
	f.Add([]byte(goodLock()))
	f.Add([]byte("version: 1\npins: {}\n"))
	f.Add([]byte("version: 1\npins: {}\nimage:\n  id: sha256:" + strings.Repeat("a", 64) + "\n  tools: {node: 22.1.0}\n"))
	f.Add([]byte("version: 2\n"))
	f.Add([]byte("version: 1\npins:\n  node: {version: ^1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLock("boxes.lock", data)
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %v is not Errors", err)
			}
			lines := yamlLines(data)
			for _, e := range errs {
				if e.Line < 1 || e.Line > lines || e.Col < 1 {
					t.Fatalf("error outside the file (%d lines): %q", lines, e.Error())
				}
			}
			return
		}
		out, err := l.Marshal()
		if err != nil {
			t.Fatalf("a parsed lock does not marshal: %v", err)
		}
		back, err := ParseLock("boxes.lock", out)
		if err != nil {
			t.Fatalf("a written lock does not parse: %v\n%s", err, out)
		}
		back.Path, l.Path = "", ""
		if !reflect.DeepEqual(back, l) {
			t.Fatalf("lock changed through a write:\n%+v\n%+v", l, back)
		}
	})
}

// A billion-laughs file is refused (or read) fast and small: aliases are
// never expanded, since the parser reads nodes and boxes takes no alias.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		b.WriteString("a" + string(rune('0'+i%10)) + string(rune('a'+i)) + ": &a" + itoa(i) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	b.WriteString("boxes:\n  bomb: {env: {X: *a11}}\n")
	// Only known keys: an anchored 100 KiB value aliased 1000 times.
	var c strings.Builder
	c.WriteString("version: 1\nboxes:\n  a: {env: {S: &s " + strings.Repeat("x", 100<<10) + "}}\n  b:\n    env:\n")
	for i := range 1000 {
		c.WriteString("      X" + itoa(i) + ": *s\n")
	}
	for _, parse := range []func([]byte) error{
		func(d []byte) error { _, err := Parse("boxes.yaml", d); return err },
		func(d []byte) error { _, err := ParseLock("boxes.lock", d); return err },
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		err := parse([]byte(b.String()))
		if err == nil {
			t.Error("alias bomb accepted")
		}
		if _, err := Parse("boxes.yaml", []byte(c.String())); err == nil || !strings.Contains(err.Error(), "env X0 must be a scalar, found an alias") {
			t.Errorf("aliased env values: %v", err)
		}
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		t.Logf("alias bomb: %v, %d KiB allocated: %v", took, (after.TotalAlloc-before.TotalAlloc)>>10, err)
		if took > time.Second {
			t.Errorf("alias bomb took %v", took)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("alias bomb allocated %d MiB", alloc>>20)
		}
	}
}

// yamlLines counts lines as YAML does: "\r\n", "\r", "\n" and the
// Unicode line breaks each end one (found by fuzzing: a lone "\r").
func yamlLines(data []byte) int {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	n := 1
	for _, r := range s {
		switch r {
		case '\n', '\r', '\u0085', '\u2028', '\u2029':
			n++
		}
	}
	return n
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

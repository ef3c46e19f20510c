package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// storeCase is one store as the table tests see it: how to write box's
// good record, read it back, list them all, and what bad contents it has.
type storeCase struct {
	name string
	// file is box's file, relative to boxes.yaml's directory.
	file func(box string) string
	put  func(t *testing.T, s Dir, box string)
	get  func(s Dir, box string) (ok bool, err error)
	// all lists every record (nil: the store is not listed).
	all func(s Dir) (n int, err error)
	// invalid are contents that are well formed but no valid record of web.
	invalid map[string]string
}

var storeCases = []storeCase{{
	name: "restores",
	file: func(box string) string { return filepath.Join(".boxes", "restores", box+".json") },
	put: func(t *testing.T, s Dir, box string) {
		if err := s.Restores().Begin(Restoring{Box: box, Archive: "backups/" + box + ".tar.zst.age"}); err != nil {
			t.Fatal(err)
		}
	},
	get: func(s Dir, box string) (bool, error) {
		r, ok, err := s.Restores().Get(box)
		if ok && (r.Box != box || r.Archive == "" || r.Since.IsZero()) {
			return ok, errors.New("read back wrong")
		}
		return ok, err
	},
	all: func(s Dir) (int, error) { m, err := s.Restores().All(); return len(m), err },
	invalid: map[string]string{
		"neither":   `{"box":"web","host":""}`,
		"both":      `{"box":"web","archive":"a.tar.zst.age","from":"base"}`,
		"other box": `{"box":"api","archive":"a.tar.zst.age"}`,
		"no box":    `{"archive":"a.tar.zst.age"}`,
		"two":       `{"box":"web","archive":"a"} {"box":"web","archive":"b"}`,
		"not json":  `box=web`,
		"truncated": `{"box":"web","archive":"a.ta`,
		"empty":     ``,
	},
}, {
	name: "moves",
	file: func(box string) string { return filepath.Join(".boxes", "moves", box+".json") },
	put: func(t *testing.T, s Dir, box string) {
		if err := s.Moves().Put(MoveRecord{Box: box, To: "far", Archive: "backups/" + box + ".tar.zst.age", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	},
	get: func(s Dir, box string) (bool, error) {
		r, ok, err := s.Moves().Get(box)
		if ok && (r.Box != box || r.To != "far") {
			return ok, errors.New("read back wrong")
		}
		return ok, err
	},
	all: func(s Dir) (int, error) { m, err := s.Moves().All(); return len(m), err },
	invalid: map[string]string{
		"same host":  `{"box":"web","from":"far","to":"far"}`,
		"other box":  `{"box":"api","to":"far"}`,
		"not json":   `{`,
		"wrong type": `{"box":"web","to":"far","saved":"yes"}`,
	},
}, {
	name: "freezes",
	file: func(box string) string { return filepath.Join(".boxes", "frozen", box+".json") },
	put: func(t *testing.T, s Dir, box string) {
		h, err := s.Freezes().Hold(Freeze{Box: box, Container: "c-" + box})
		if err != nil {
			t.Fatal(err)
		}
		h.Keep() // the save died
	},
	get: func(s Dir, box string) (bool, error) {
		r, ok, err := s.Freezes().Get(box)
		if ok && (r.Box != box || r.Container != "c-"+box || r.Held) {
			return ok, errors.New("read back wrong")
		}
		return ok, err
	},
	all: func(s Dir) (int, error) {
		all, err := s.Freezes().All()
		stale, serr := s.Freezes().Stale()
		if (err == nil) != (serr == nil) || len(all) != len(stale) {
			return 0, errors.New("All and Stale disagree on records no save holds")
		}
		return len(all), err
	},
	invalid: map[string]string{
		"other box": `{"box":"api","container":"c"}`,
		"not json":  `{"box":"web",`,
	},
}, {
	name: "tokens",
	file: func(box string) string { return filepath.Join(".boxes", "secrets", box+".env") },
	put: func(t *testing.T, s Dir, box string) {
		if err := s.Tokens().Put(box, testToken); err != nil {
			t.Fatal(err)
		}
	},
	get: func(s Dir, box string) (bool, error) {
		token, ok, err := s.Tokens().Get(box)
		if ok && token != testToken {
			return ok, errors.New("read back wrong")
		}
		return ok, err
	},
	invalid: map[string]string{
		"no token line": "OTHER=1\n",
		"empty token":   "EXECUTOR_TOKEN=\n",
		"empty":         "",
	},
}}

// Every store keeps the one contract of the package: no record is no
// error; a good one reads back; one that is there and cannot be used is a
// BadRecordError naming its file, never no record; a listing has every
// record or fails on a bad one.
func TestRecordStores(t *testing.T) {
	for _, sc := range storeCases {
		t.Run(sc.name, func(t *testing.T) {
			fresh := func(t *testing.T) (Dir, string) {
				base := t.TempDir()
				return Beside(filepath.Join(base, "boxes.yaml")), base
			}
			// wantBad checks err is web's BadRecordError.
			wantBad := func(t *testing.T, ok bool, err error) {
				t.Helper()
				var bad *BadRecordError
				if ok || !errors.Is(err, ErrBadRecord) || !errors.As(err, &bad) {
					t.Fatalf("ok=%v err=%v, want a bad record", ok, err)
				}
				if bad.Path != sc.file("web") || !strings.HasPrefix(err.Error(), sc.file("web")+" ") || !strings.Contains(err.Error(), "web") {
					t.Errorf("error %q does not name %s", err, sc.file("web"))
				}
				if bad.Hint() == "" {
					t.Errorf("error %q says nothing of what to do", err)
				}
			}
			t.Run("absent", func(t *testing.T) {
				s, _ := fresh(t)
				if ok, err := sc.get(s, "web"); ok || err != nil {
					t.Errorf("ok=%v err=%v", ok, err)
				}
				if sc.all != nil {
					if n, err := sc.all(s); n != 0 || err != nil {
						t.Errorf("all of a missing directory: %d %v", n, err)
					}
				}
			})
			t.Run("good", func(t *testing.T) {
				s, base := fresh(t)
				sc.put(t, s, "web")
				if ok, err := sc.get(s, "web"); !ok || err != nil {
					t.Fatalf("ok=%v err=%v", ok, err)
				}
				checkWritten(t, filepath.Join(base, sc.file("web")))
			})
			for what, content := range sc.invalid {
				t.Run(what, func(t *testing.T) {
					s, base := fresh(t)
					sc.put(t, s, "api")
					if err := os.WriteFile(filepath.Join(base, sc.file("web")), []byte(content), 0o600); err != nil {
						t.Fatal(err)
					}
					ok, err := sc.get(s, "web")
					wantBad(t, ok, err)
					if sc.all != nil {
						n, err := sc.all(s)
						wantBad(t, n != 0, err)
					}
				})
			}
			t.Run("unreadable", func(t *testing.T) {
				s, base := fresh(t)
				sc.put(t, s, "api")
				path := filepath.Join(base, sc.file("web"))
				// A directory in its place cannot be read, even by root.
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
				ok, err := sc.get(s, "web")
				wantBad(t, ok, err)
				if sc.all != nil {
					n, err := sc.all(s)
					wantBad(t, n != 0, err)
				}
				if os.Geteuid() == 0 {
					return // the mode does not stop root
				}
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				sc.put(t, s, "web")
				if err := os.Chmod(path, 0); err != nil {
					t.Fatal(err)
				}
				ok, err = sc.get(s, "web")
				wantBad(t, ok, err)
				if !errors.Is(err, os.ErrPermission) {
					t.Errorf("%v does not say why", err)
				}
			})
			t.Run("removed", func(t *testing.T) {
				s, base := fresh(t)
				sc.put(t, s, "web")
				if err := removeOf(s, sc.name, "web"); err != nil {
					t.Fatal(err)
				}
				if ok, err := sc.get(s, "web"); ok || err != nil {
					t.Errorf("after removal: ok=%v err=%v", ok, err)
				}
				if err := removeOf(s, sc.name, "web"); err != nil {
					t.Errorf("removing a missing record: %v", err)
				}
				if _, err := os.Stat(filepath.Join(base, sc.file("web"))); !os.IsNotExist(err) {
					t.Errorf("file left: %v", err)
				}
			})
			if sc.all == nil {
				return
			}
			t.Run("all", func(t *testing.T) {
				s, base := fresh(t)
				for _, box := range []string{"alpha", "beta", "gamma"} {
					sc.put(t, s, box)
				}
				// A write's temporary file is no record.
				if err := os.WriteFile(filepath.Join(filepath.Dir(filepath.Join(base, sc.file("x"))), ".new-123"), []byte("{"), 0o600); err != nil {
					t.Fatal(err)
				}
				if n, err := sc.all(s); n != 3 || err != nil {
					t.Fatalf("all: %d %v", n, err)
				}
				if err := os.WriteFile(filepath.Join(base, sc.file("web")), []byte("{"), 0o600); err != nil {
					t.Fatal(err)
				}
				n, err := sc.all(s)
				wantBad(t, n != 0, err)
			})
		})
	}
}

// removeOf removes box's record from store name of s.
func removeOf(s Dir, name, box string) error {
	switch name {
	case "restores":
		return s.Restores().Done(box)
	case "moves":
		return s.Moves().Remove(box)
	case "freezes":
		if h, _, err := s.Freezes().TakeStale(box); err != nil || h == nil {
			return err
		} else {
			return h.Release()
		}
	case "tokens":
		return s.Tokens().Remove(box)
	}
	panic(name)
}

// checkWritten checks a record's file and directory modes, and that no
// temporary file is left beside it.
func checkWritten(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s is %04o, want 0600", path, fi.Mode().Perm())
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("%s is %04o, want 0700", filepath.Dir(path), di.Mode().Perm())
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("%s holds %d files, want the record alone", filepath.Dir(path), len(entries))
	}
}

// The message of a bad record names the file, what it should be and why
// not, what boxes will not guess; its hint says what to do.
func TestBadRecordError(t *testing.T) {
	s := Beside(filepath.Join(t.TempDir(), "boxes.yaml"))
	if err := os.MkdirAll(s.Restores().Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Restores().Dir, "web.json"), []byte(`{"box":"web"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Restores().Get("web")
	want := filepath.Join(".boxes", "restores", "web.json") + " is not a restore record (it names neither an archive nor a box to seed from): " +
		"boxes will not guess whether web's restore (or fork) was finished and checked"
	if err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	var bad *BadRecordError
	if !errors.As(err, &bad) || !strings.Contains(bad.Hint(), "remove the file") {
		t.Errorf("hint of %v", err)
	}
}

// A fork's restore record reads back as written; one of neither archive
// nor box is never written.
func TestRestoreRecordOfAFork(t *testing.T) {
	s := Beside(filepath.Join(t.TempDir(), "boxes.yaml")).Restores()
	if err := s.Begin(Restoring{Box: "alpha", From: "base@clean", Host: "far"}); err != nil {
		t.Fatal(err)
	}
	r, ok, err := s.Get("alpha")
	if err != nil || !ok || r.From != "base@clean" || r.Host != "far" || r.Since.IsZero() {
		t.Errorf("get: %+v %v %v", r, ok, err)
	}
	if err := s.Begin(Restoring{Box: "beta"}); err == nil {
		t.Error("a record of neither archive nor box was written")
	}
}

// A freeze record that is no valid record is refused by Get and Stale, but
// taken by TakeStale, read as its box's, for the thaw that clears it.
func TestTakeStaleBadFreeze(t *testing.T) {
	s := Beside(filepath.Join(t.TempDir(), "boxes.yaml")).Freezes()
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir, "web.json")
	if err := os.WriteFile(path, []byte(`{"box":"we`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stale(); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("stale: %v", err)
	}
	h, r, err := s.TakeStale("web")
	if err != nil || h == nil || r.Box != "web" || r.Container != "" {
		t.Fatalf("take: %v %+v %v", h, r, err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("record left: %v", err)
	}
}

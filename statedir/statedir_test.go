package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
)

// testToken is a token as NewToken makes them.
const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestTokens(t *testing.T) {
	dir := t.TempDir()
	store := Beside(filepath.Join(dir, "boxes.yaml")).Tokens()
	if _, ok, err := store.Get("web"); ok || err != nil {
		t.Fatalf("Get before Put: ok=%v err=%v", ok, err)
	}
	if err := store.Put("web", testToken); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, ok, err := store.Get("web")
	if err != nil || !ok || got != testToken {
		t.Fatalf("Get = %q, %v, %v", got, ok, err)
	}
	if err := store.Put("web", "second"); err != nil {
		t.Fatalf("Put again: %v", err)
	}
	if got, _, _ := store.Get("web"); got != "second" {
		t.Errorf("Get after replace = %q", got)
	}
	st, err := os.Stat(store.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %o, want 700", st.Mode().Perm())
	}
	fst, err := os.Stat(filepath.Join(store.Dir, "web.env"))
	if err != nil {
		t.Fatal(err)
	}
	if fst.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %o, want 600", fst.Mode().Perm())
	}
	entries, _ := os.ReadDir(store.Dir)
	if len(entries) != 1 {
		t.Errorf("secrets dir holds %d entries, want 1 (no temp files left)", len(entries))
	}
	if err := store.Remove("web"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, ok, err := store.Get("web"); ok || err != nil {
		t.Errorf("Get after Remove: ok=%v err=%v", ok, err)
	}
	if err := store.Remove("web"); err != nil {
		t.Errorf("Remove twice: %v", err)
	}
}

// Keep writes a token the file does not hold, private; one it holds is
// left as it is (the same file), the directory's mode put right.
func TestTokenKeep(t *testing.T) {
	store := Tokens{Dir: filepath.Join(t.TempDir(), "secrets")}
	file := store.Path("web")
	if err := store.Keep("web", testToken); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := store.Get("web"); !ok || err != nil || got != testToken {
		t.Fatalf("after Keep of a new token: %q %v %v", got, ok, err)
	}
	before, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(store.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := store.Keep("web", testToken); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("Keep of the token held rewrote the file")
	}
	if fi, err := os.Stat(store.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory after Keep: %v %v", fi.Mode(), err)
	}

	// Another token, or the same one in a file others may read, is written.
	other := strings.Repeat("f", 64)
	if err := store.Keep("web", other); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := store.Get("web"); got != other {
		t.Errorf("after Keep of another token: %q", got)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := store.Keep("web", other); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("a readable file holding the token is left %v (%v)", fi.Mode(), err)
	}
}

func TestTokenGetMalformed(t *testing.T) {
	store := Tokens{Dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(store.Dir, "web.env"), []byte("OTHER=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := store.Get("web"); ok || err == nil {
		t.Errorf("Get malformed: ok=%v err=%v", ok, err)
	}
}

func TestNewToken(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	if !hex64.MatchString(a) || !hex64.MatchString(b) {
		t.Errorf("tokens not 64 hex chars: %q %q", a, b)
	}
	if a == b {
		t.Errorf("two tokens are equal: %q", a)
	}
}

func TestTokenFromEnv(t *testing.T) {
	if got, ok := TokenFromEnv([]string{"PATH=/bin", compose.TokenVar + "=abc", "X=1"}); !ok || got != "abc" {
		t.Errorf("TokenFromEnv = %q, %v", got, ok)
	}
	if _, ok := TokenFromEnv([]string{compose.TokenVar + "="}); ok {
		t.Error("empty token found")
	}
	if _, ok := TokenFromEnv(nil); ok {
		t.Error("token found in nil env")
	}
}

func TestLockApply(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "boxes.yaml")
	l1, err := LockApply(cfg, "boxes apply")
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	l2, err := LockApply(cfg, "boxes plan")
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: err = %v, want ErrLocked", err)
	}
	if l2 != nil {
		t.Error("second lock returned a lock")
	}
	if !strings.Contains(err.Error(), "boxes apply") {
		t.Errorf("err %q does not name the holder", err)
	}
	if err := l1.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	l3, err := LockApply(cfg, "boxes apply")
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	if err := l3.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l3.Unlock(); err != nil {
		t.Errorf("double Unlock: %v", err)
	}
}

func TestLockBox(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "boxes.yaml")
	a, err := LockBox(cfg, "a", "boxes apply")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Unlock()
	b, err := LockBox(cfg, "b", "boxes apply")
	if err != nil {
		t.Fatalf("other box lock: %v", err)
	}
	defer b.Unlock()
	if _, err := LockBox(cfg, "a", "boxes enter"); !errors.Is(err, ErrLocked) {
		t.Errorf("same box lock: err = %v", err)
	}
}

func TestRestoreRecords(t *testing.T) {
	s := Beside(filepath.Join(t.TempDir(), "boxes.yaml")).Restores()
	if got, err := s.All(); len(got) != 0 || err != nil {
		t.Errorf("empty store: %v %v", got, err)
	}
	if err := s.Begin(Restoring{Box: "alpha", Archive: "backups/a.tar.zst.age"}); err != nil {
		t.Fatal(err)
	}
	r, ok, err := s.Get("alpha")
	if !ok || err != nil || r.Archive != "backups/a.tar.zst.age" || r.Since.IsZero() {
		t.Errorf("get: %+v %v %v", r, ok, err)
	}
	if err := s.Done("alpha"); err != nil {
		t.Fatal(err)
	}
	if err := s.Done("alpha"); err != nil {
		t.Errorf("done twice: %v", err)
	}
	if _, ok, err := s.Get("alpha"); ok || err != nil {
		t.Errorf("a done restore is still recorded: %v", err)
	}
}

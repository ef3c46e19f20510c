package backup

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-box/boxes/hb"
)

func tarOf(t *testing.T, files map[string]string) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "data/", Mode: 0o755})
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	return &buf
}

func TestCompareRestored(t *testing.T) {
	archived := map[string]string{"data/home/agent/marker": "moved", "data/home/agent/.bashrc": "PS1=x"}
	want, err := tarHashes(tarOf(t, archived))
	if err != nil {
		t.Fatal(err)
	}
	// The restore's own quiesce marker is no difference.
	same := map[string]string{"data/home/agent/marker": "moved", "data/home/agent/.bashrc": "PS1=x", hb.QuiescedMarker: "now"}
	got, _ := tarHashes(tarOf(t, same))
	if err := CompareHashes(want, got); err != nil {
		t.Errorf("same data: %v", err)
	}
	for name, restored := range map[string]map[string]string{
		"changed": {"data/home/agent/marker": "other", "data/home/agent/.bashrc": "PS1=x"},
		"missing": {"data/home/agent/.bashrc": "PS1=x"},
		"extra":   {"data/home/agent/marker": "moved", "data/home/agent/.bashrc": "PS1=x", "data/x": ""},
	} {
		got, _ := tarHashes(tarOf(t, restored))
		if err := CompareHashes(want, got); !errors.Is(err, ErrRestoredDiffers) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMoveKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), ".boxes", "secrets", "alpha-20261202-101500.move-key")
	id, err := MoveKey(file)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	if di, _ := os.Stat(filepath.Dir(file)); di.Mode().Perm() != 0o700 {
		t.Errorf("key dir mode %v", di.Mode())
	}
	again, err := MoveKey(file)
	if err != nil || again.String() != id.String() {
		t.Errorf("read back: %v", err)
	}
	if _, err := identities(file); err != nil {
		t.Errorf("identities: %v", err)
	}
}

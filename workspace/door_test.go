package workspace_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/workspace"
)

// testCAPEM is a CA certificate of the test's own, as PEM.
func testCAPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// A credential's ca: file is read beside its value: its PEM goes to the
// gate; a file that cannot be read, is not PEM certificates or is too big
// leaves the box's door unread, saying which and why.
func TestDoorsReadCredentialsCA(t *testing.T) {
	dir := t.TempDir()
	ca := testCAPEM(t)
	files := map[string]string{
		"ca.pem":  ca,
		"key.pem": "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
		"big.pem": strings.Repeat(ca, 200),
		"not.pem": "hello\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("BOXES_TEST_DOOR_KEY", "sk-test-door")
	cfg := `version: 1
boxes:
  good:
    credentials:
      api: {to: api.test, header: x-api-key, from: "env:BOXES_TEST_DOOR_KEY", ca: "file:ca.pem"}
      plain: {to: plain.test, header: x-api-key, from: "env:BOXES_TEST_DOOR_KEY"}
`
	for _, b := range []string{"missing", "key", "big", "not"} {
		cfg += "  " + b + ":\n    credentials:\n      api: {to: api.test, header: x-api-key, from: \"env:BOXES_TEST_DOOR_KEY\", ca: \"file:" + b + ".pem\"}\n"
	}
	path := filepath.Join(dir, "boxes.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := workspace.Open(path, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doors, unread := w.Doors(context.Background(), nil)
	if err := unread["good"]; err != nil {
		t.Errorf("good: %v", err)
	}
	if got := doors["good"].CAs; len(got) != 1 || got["api"] != ca || doors["good"].Secrets["api"] != "sk-test-door" {
		t.Errorf("good: CAs %v", got)
	}
	for box, want := range map[string]string{
		"missing": "box missing, credential api: ca: reading missing.pem: no such file or directory",
		"key":     "box key, credential api: ca: key.pem holds a EC PRIVATE KEY (PEM block 1): a CA is certificates alone",
		"big":     "box big, credential api: ca: big.pem is over 64 KiB",
		"not":     "box not, credential api: ca: not.pem holds no PEM certificate",
	} {
		err := unread[box]
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", box, err, want)
		}
		if _, ok := doors[box].CAs["api"]; ok {
			t.Errorf("%s: a CA that could not be read went to the gate", box)
		}
	}
}

package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// The smolvm tool's own files under /data, as this package names them.
const (
	legacyConfig  = "data/home/agent/.config/hermes-box"
	legacyRuntime = legacyConfig + "/runtime-manifest"
)

// maxRuntimeSize bounds how much of the runtime manifest is parsed.
const maxRuntimeSize = 64 << 10

// legacyMarker reports whether the cleaned data name is one of the smolvm
// tool's markers, which mean nothing to hb and are dropped on load: its
// quiesce marker and its gateway markers (gateway.pid, gateway.lock,
// gateway-ready, …: any entry of its config directory whose name begins
// with "gateway"). The runtime manifest and everything else is kept.
func legacyMarker(name string) bool {
	dir, base := path.Split(name)
	if dir != legacyConfig+"/" {
		return false
	}
	return base == "quiesced" || strings.HasPrefix(base, "gateway")
}

// legacy is the state of reading a legacy archive's tar.
type legacy struct {
	runtime map[string]string
}

// rename maps an entry of the smolvm tool's tar ("./", "./home/agent/x",
// or the same without "./") to its data name ("data/", "data/home/agent/x"),
// hard link targets too. Names that are absolute or hold ".." are refused
// here, named as the archive names them.
func (l *legacy) rename(h *tar.Header) error {
	name, err := legacyName(h.Name)
	if err != nil {
		return entryError(h.Name, "%v", err)
	}
	if h.Typeflag == tar.TypeLink {
		target, err := legacyName(h.Linkname)
		if err != nil {
			return entryError(h.Name, "hard link to %q: %v", h.Linkname, err)
		}
		h.Linkname = target
	}
	h.Name = name
	return nil
}

// legacyName maps one name, keeping a trailing "/".
func legacyName(name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("empty name")
	case strings.HasPrefix(name, "/"):
		return "", errors.New("absolute name")
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return "", errors.New(`name contains ".."`)
		}
	}
	rest := strings.TrimPrefix(name, "./")
	if rest == "" || rest == "." {
		return dataRoot + "/", nil
	}
	return dataRoot + "/" + rest, nil
}

// drop reports whether the checked entry h is a marker to leave out (or a
// hard link to one).
func (l *legacy) drop(h *tar.Header) bool {
	switch h.Typeflag {
	case tar.TypeDir:
		return false
	case tar.TypeLink:
		return legacyMarker(h.Name) || legacyMarker(h.Linkname)
	}
	return legacyMarker(h.Name)
}

// runtimeReader keeps the first maxRuntimeSize bytes read through it.
type runtimeReader struct {
	r   io.Reader
	buf []byte
}

func (rr *runtimeReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if room := maxRuntimeSize - len(rr.buf); room > 0 {
		rr.buf = append(rr.buf, p[:min(n, room)]...)
	}
	return n, err
}

// parseRuntime reads the runtime manifest: key=value lines, split on the
// first "=", values kept as they are (spaces included). Blank lines and
// lines starting with "#" are skipped; so are lines without "=".
func (l *legacy) parseRuntime(b []byte) {
	l.runtime = ParseRuntimeManifest(b)
}

// ParseRuntimeManifest parses the smolvm tool's runtime manifest.
func ParseRuntimeManifest(b []byte) map[string]string {
	out := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}

// manifest is the Manifest of a legacy archive read so far.
func (l *legacy) manifest() Manifest {
	m := Manifest{Format: 0, Writer: "smolvm"}
	if len(l.runtime) == 0 {
		return m
	}
	m.Runtime = l.runtime
	for k, v := range l.runtime {
		switch k {
		case "created_at":
			for _, layout := range []string{time.RFC3339, "2006-01-02 15:04:05", "20060102-150405"} {
				if t, err := time.Parse(layout, strings.TrimSpace(v)); err == nil {
					m.Created = t.UTC()
					break
				}
			}
		case "box", "name":
			m.Box = strings.TrimSpace(v)
		default:
			if m.Tools == nil {
				m.Tools = make(map[string]string)
			}
			m.Tools[k] = v
		}
	}
	return m
}

// decryptLegacy opens the OpenPGP message r with passphrase. It accepts
// only integrity-protected messages; the returned reader's errors say when
// that protection finds the content damaged.
func decryptLegacy(r io.Reader, passphrase []byte) (io.Reader, error) {
	if passphrase == nil {
		return nil, errors.New("archive: a .tar.gz.gpg archive of the smolvm tool opens with a passphrase, not an age identity")
	}
	tried := false
	prompt := func(keys []openpgp.Key, symmetric bool) ([]byte, error) {
		if tried || !symmetric {
			return nil, fmt.Errorf("archive: %w", ErrWrongPassphrase)
		}
		tried = true
		return passphrase, nil
	}
	md, err := openpgp.ReadMessage(r, openpgp.EntityList{}, prompt, &packet.Config{})
	if err != nil {
		if errors.Is(err, ErrWrongPassphrase) {
			return nil, err
		}
		// With a passphrase-only message, a wrong passphrase yields a
		// session key that decrypts to garbage, which OpenPGP reports, on
		// purpose, as a vague parsing error.
		var sessionErr pgperrors.DecryptWithSessionKeyError
		if errors.As(err, &sessionErr) {
			return nil, fmt.Errorf("archive: %w (or the archive is damaged at its start: %v)", ErrWrongPassphrase, err)
		}
		return nil, fmt.Errorf("archive: decrypting the OpenPGP message: %w", err)
	}
	if !md.IsSymmetricallyEncrypted {
		return nil, errors.New("archive: the OpenPGP message is not encrypted with a passphrase")
	}
	return &pgpBody{r: md.UnverifiedBody}, nil
}

// pgpBody explains the integrity errors of an OpenPGP message's body.
type pgpBody struct{ r io.Reader }

func (b *pgpBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		var sigErr pgperrors.SignatureError
		var sessionErr pgperrors.DecryptWithSessionKeyError
		switch {
		case errors.As(err, &sigErr):
			err = fmt.Errorf("integrity check failed (%v)", err)
		case errors.As(err, &sessionErr), errors.Is(err, io.ErrUnexpectedEOF):
			err = fmt.Errorf("the encrypted content is cut short or damaged (%v)", err)
		}
	}
	return n, err
}

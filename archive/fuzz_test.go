package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"path"
	"strings"
	"testing"

	"filippo.io/age"
)

// fuzzTar is a tar of entries given as name, type, content triples.
func fuzzTar(entries ...string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i+2 < len(entries); i += 3 {
		h := &tar.Header{Name: entries[i], Typeflag: entries[i+1][0], Mode: 0o755}
		switch h.Typeflag {
		case tar.TypeReg:
			h.Size = int64(len(entries[i+2]))
		case tar.TypeSymlink, tar.TypeLink:
			h.Linkname = entries[i+2]
		}
		tw.WriteHeader(h)
		if h.Typeflag == tar.TypeReg {
			io.WriteString(tw, entries[i+2])
		}
	}
	tw.Close()
	return buf.Bytes()
}

func fuzzSeeds(f *testing.F) {
	d, r, s, l := string(tar.TypeDir), string(tar.TypeReg), string(tar.TypeSymlink), string(tar.TypeLink)
	box := []string{"data/", d, "", "data/home/", d, "", "data/home/agent/", d, ""}
	old := []string{"./", d, "", "./home/", d, "", "./home/agent/", d, ""}
	for _, legacy := range []bool{false, true} {
		base := box
		if legacy {
			base = old
		}
		p := strings.TrimSuffix(base[0], "/")
		f.Add(fuzzTar(base...), legacy)
		f.Add(fuzzTar(append(append([]string{}, base...), p+"/home/agent/f", r, "hello", p+"/home/agent/l", s, "/etc", p+"/home/agent/h", l, p+"/home/agent/f")...), legacy)
		f.Add(fuzzTar(append(append([]string{}, base...), p+"/home/agent/l", s, "/etc", p+"/home/agent/l/x", r, "x")...), legacy)
		f.Add(fuzzTar(append(append([]string{}, base...), "../x", r, "x", "/abs", r, "y")...), legacy)
		f.Add(fuzzTar(append(append([]string{}, base...), p+"/home/agent/.config/", d, "", p+"/home/agent/.config/hermes-box/", d, "",
			p+"/home/agent/.config/hermes-box/runtime-manifest", r, "node=v22\nclaude=1 (Claude Code)\n",
			p+"/home/agent/.config/hermes-box/quiesced", r, "now")...), legacy)
	}
	f.Add([]byte("not a tar"), false)
}

// checkWalk walks a data tar (legacy or not) and checks what every reader
// relies on: nothing accepted is outside data/, holds "..", or goes past
// the size bound, and a refused stream is an error, never a panic.
func checkWalk(t *testing.T, b []byte, legacyNames bool) {
	const limit = 1 << 16
	e := entries{tr: tar.NewReader(bytes.NewReader(b)), bad: damaged, hash: &hasher{}}
	if legacyNames {
		e.legacy = &legacy{}
	}
	e.chk.setLimit(limit, "the fuzz bound")
	var total int64
	sum, err := e.walk(func(h *tar.Header, body io.Reader) error {
		name := strings.TrimSuffix(h.Name, "/")
		if name != "data" && !strings.HasPrefix(name, "data/") || path.Clean(name) != name {
			t.Fatalf("accepted entry %q", h.Name)
		}
		if h.Mode&setID != 0 || len(h.PAXRecords) != 0 {
			t.Fatalf("entry %q keeps setuid/setgid or attributes", h.Name)
		}
		n, err := io.Copy(io.Discard, body)
		total += n
		return err
	})
	if err != nil {
		return
	}
	if sum.Bytes > limit || total != sum.Bytes {
		t.Fatalf("summary %+v, read %d bytes, bound %d", sum, total, limit)
	}
}

// FuzzWalk feeds arbitrary tar streams to the entry checker, in both
// naming schemes.
func FuzzWalk(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte, legacyNames bool) {
		checkWalk(t, b, legacyNames)
	})
}

// FuzzRead feeds arbitrary plaintext to the whole reader, through real
// gzip and age: Verify must refuse or accept it without panicking, and
// accept nothing that Data then refuses; Data accepts nothing Verify
// refuses but content that does not have its recorded hash (Data takes the
// recorded hashes, for the restored copy to be checked against).
func FuzzRead(f *testing.F) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		f.Fatal(err)
	}
	m := `{"format":1,"box":"dev","created":"2026-01-01T00:00:00Z"}`
	f.Add(fuzzTar("manifest.json", string(tar.TypeReg), m, "data/", "5", "", "data/home/", "5", "", "data/home/agent/", "5", ""), false)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, plain []byte, raw bool) {
		var ar bytes.Buffer
		w, err := age.Encrypt(&ar, id.Recipient())
		if err != nil {
			t.Fatal(err)
		}
		if raw { // not compressed at all
			w.Write(plain)
		} else {
			gz := gzip.NewWriter(w)
			gz.Write(plain)
			gz.Close()
		}
		w.Close()
		_, vsum, verr := Verify(bytes.NewReader(ar.Bytes()), id)
		rc, err := Data(bytes.NewReader(ar.Bytes()), id)
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		hashOnly := verr != nil && strings.Contains(verr.Error(), "does not match its recorded hash")
		if (verr == nil) != (err == nil) && !(hashOnly && err == nil) {
			t.Fatalf("Verify: %v (%+v), Data: %v", verr, vsum, err)
		}
	})
}

func FuzzTrailer(f *testing.F) {
	f.Add([]byte("boxes-content 1\nsha256 " + strings.Repeat("00", 32) + " \"data/f\"\ntotal 1 0\n"))
	f.Add([]byte("boxes-content 1\ntotal 0 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := checkTrailer(bytes.NewReader(b), []fileHash{{name: "data/f"}}, Summary{Files: 1}, false)
		// Taking the recorded hashes accepts what checking them accepts,
		// and what only a hash refused.
		adopted := []fileHash{{name: "data/f"}}
		aerr := checkTrailer(bytes.NewReader(b), adopted, Summary{Files: 1}, true)
		if err == nil && aerr != nil || aerr == nil && err != nil && !strings.Contains(err.Error(), "does not match its recorded hash") {
			t.Fatalf("checking: %v; adopting: %v", err, aerr)
		}
	})
}

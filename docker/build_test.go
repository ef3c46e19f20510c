package docker

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/fstest"
)

func recipeFS() fstest.MapFS {
	return fstest.MapFS{
		"Dockerfile":                      {Data: []byte("FROM scratch\n"), Mode: 0o755},
		"guest/hb":                        {Data: []byte("#!/bin/bash\n"), Mode: 0o755},
		"guest/guest_integration_test.go": {Data: []byte("package guest_test\n")},
		"guest/testdata/fixture":          {Data: []byte("x")},
		"provision/provision.sh":          {Data: []byte("echo hi\n")},
	}
}

// guest/hb starts with #! and is written 0755; the other files 0644.
func TestBuildContextTarIsFixedAndLeavesOutTests(t *testing.T) {
	c, err := NewBuildContext(recipeFS())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(c.Names(), " "), "Dockerfile guest/hb provision/provision.sh"; got != want {
		t.Fatalf("files %q, want %q", got, want)
	}
	data, err := c.Tar()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.Tar()
	if !bytes.Equal(data, again) {
		t.Error("two tars of one context differ")
	}
	tr := tar.NewReader(bytes.NewReader(data))
	var entries []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, h.Name)
		want := int64(0o644)
		if h.Typeflag == tar.TypeDir || h.Name == "guest/hb" {
			want = 0o755
		}
		if h.Mode != want || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || !h.ModTime.Equal(contextTime) {
			t.Errorf("%s: mode %o uid %d gid %d uname %q mtime %v", h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.ModTime)
		}
	}
	if got, want := strings.Join(entries, " "), "Dockerfile guest/ guest/hb provision/ provision/provision.sh"; got != want {
		t.Errorf("entries %q, want %q", got, want)
	}
}

func TestInputsDigestFollowsEveryInput(t *testing.T) {
	base, _ := NewBuildContext(recipeFS())
	args := map[string]string{"BASE_IMAGE": "debian", "INSTALL_APT": "0"}
	d := InputsDigest(base, args)
	if !strings.HasPrefix(d, "sha256:") || len(d) != 71 {
		t.Fatalf("digest %q", d)
	}
	if again := InputsDigest(base, map[string]string{"INSTALL_APT": "0", "BASE_IMAGE": "debian"}); again != d {
		t.Error("the digest depends on map order")
	}

	edited := recipeFS()
	edited["guest/hb"] = &fstest.MapFile{Data: []byte("#!/bin/bash\nexit 0\n")}
	renamed := recipeFS()
	delete(renamed, "guest/hb")
	renamed["guest/hb2"] = &fstest.MapFile{Data: []byte("#!/bin/bash\n")}
	testEdit := recipeFS()
	testEdit["guest/guest_integration_test.go"] = &fstest.MapFile{Data: []byte("package guest_test // edited\n")}

	for name, tc := range map[string]struct {
		fs   fstest.MapFS
		args map[string]string
		same bool
	}{
		"guest file edited":      {edited, args, false},
		"guest file renamed":     {renamed, args, false},
		"build argument changed": {recipeFS(), map[string]string{"BASE_IMAGE": "debian", "INSTALL_APT": "1"}, false},
		"build argument added":   {recipeFS(), map[string]string{"BASE_IMAGE": "debian", "INSTALL_APT": "0", "X": ""}, false},
		"only a test edited":     {testEdit, args, true},
	} {
		c, err := NewBuildContext(tc.fs)
		if err != nil {
			t.Fatal(err)
		}
		if got := InputsDigest(c, tc.args); (got == d) != tc.same {
			t.Errorf("%s: digest %s, unchanged one %s (want same=%v)", name, got, d, tc.same)
		}
	}
}

func TestReadBuildStream(t *testing.T) {
	const id = "sha256:200109576ba97b02d6537d56521b4d0d02d186fda4d8051b0984a32f3256ab89"
	stream := `{"stream":"Step 1/3 : FROM base"}
{"stream":"\n"}
{"stream":" ---\u003e 5a0dc7bee000\n"}
{"stream":"Step 2/3 : COPY provision/ /opt/\n"}
{"stream":" ---\u003e Using cache\n"}
{"stream":"Step 3/3 : RUN bash x\n"}
{"stream":" ---\u003e Running in 1234\n"}
{"stream":"provision: step apt\nprovision: do"}
{"stream":"ne\n"}
{"status":"Downloading","progressDetail":{"current":1,"total":2},"progress":"[=\u003e  ]"}
{"aux":{"ID":"` + id + `"}}
{"stream":"Successfully built 200109576ba9\n"}
`
	var lines []string
	res, err := readBuildStream(strings.NewReader(stream), func(l string) { lines = append(lines, l) })
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != id || res.Steps != 3 || res.Cached != 1 {
		t.Errorf("result %+v", res)
	}
	want := []string{"Step 1/3 : FROM base", " ---> 5a0dc7bee000", "Step 2/3 : COPY provision/ /opt/", " ---> Using cache",
		"Step 3/3 : RUN bash x", " ---> Running in 1234", "provision: step apt", "provision: done", "Successfully built 200109576ba9"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("lines\n%q\nwant\n%q", lines, want)
	}
}

func TestReadBuildStreamErrors(t *testing.T) {
	for name, tc := range map[string]struct{ stream, want string }{
		"failed step": {`{"stream":"Step 1/1 : RUN false\n"}
{"errorDetail":{"code":1,"message":"The command '/bin/sh -c false' returned a non-zero code: 1"},"error":"The command '/bin/sh -c false' returned a non-zero code: 1"}
`, "build failed: The command '/bin/sh -c false' returned a non-zero code: 1"},
		"truncated stream": {`{"stream":"Step 1/1 : RUN fa`, "reading the build output: unexpected EOF"},
		"not JSON":         {"<html>", "reading the build output: invalid character '<'"},
	} {
		_, err := readBuildStream(strings.NewReader(tc.stream), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

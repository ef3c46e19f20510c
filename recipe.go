// Package boxes holds the box image's recipe as the repository lays it out:
// the Dockerfile, provision/ (the installs) and guest/ (what runs inside a
// box: hb, the shell profile, tmux's configuration), embedded so that an
// installed boxes binary builds the image without the source tree. The
// build arguments and the build itself are package image's.
package boxes

import "embed"

// Recipe is the build context of the box image: the Dockerfile, provision/
// and the guest files the Dockerfile copies (guest/ also holds tests). Its
// root is the repository's: build it from there, with the Dockerfile at the
// top.
//
// embed keeps no file modes: boxes build derives them from the content
// (docker.BuildContext), so that a build from the binary and one from a
// source tree (--recipe) share the layer cache. A new guest file is listed
// here and in the Dockerfile's COPY (image's recipe_test.go checks the two
// agree).
//
//go:embed Dockerfile provision guest/hb guest/profile.sh guest/tmux.conf
var Recipe embed.FS

package spec

import "time"

// Lock is boxes.lock: the pinned build inputs and the image built from them.
type Lock struct {
	Path    string
	Version int
	Pins    Pins
	// Image is nil until `boxes build` or `boxes lock image` has run.
	Image *Image
}

// Pins are the inputs of the image build, each exact.
type Pins struct {
	Base     BasePin
	Node     ToolPin
	Claude   ToolPin
	Codex    ToolPin
	Executor ToolPin
	Hermes   ToolPin
	UV       ToolPin
}

// BasePin is the base image, by reference and digest.
type BasePin struct {
	Image  string // e.g. ubuntu:24.04
	Digest string // sha256:…
}

// ToolPin is one tool at an exact version, with the integrity hash the
// registry publishes for it where there is one.
type ToolPin struct {
	Package   string // registry name, e.g. @openai/codex; empty for non-npm tools
	Version   string // exact version or git ref
	Integrity string // npm "sha512-…" or "sha256:…" of a download; may be empty
}

// Image is the output of a build: what boxes run.
type Image struct {
	ID     string            // sha256:… exactly as the engine reports it
	Ref    string            // the tag it was built or pinned as
	Inputs string            // sha256 digest of the build inputs; empty for `lock image`
	Built  time.Time         // build (or pin) time, UTC
	Tools  map[string]string // tool → version, read from inside the image
}

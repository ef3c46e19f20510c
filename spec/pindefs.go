package spec

// PinKind is the form of a pin's values.
type PinKind int

const (
	// BaseImage is an image reference with its digest.
	BaseImage PinKind = iota
	// Download is an exact version with the sha256 of the file provision.sh fetches.
	Download
	// NPMPackage is an exact version of an npm package, with npm's sha512 integrity.
	NPMPackage
	// GitRef is a git commit, tag or branch; the commit pins it, with no integrity.
	GitRef
)

// PinDef is one pin of boxes.lock: its key, its form, where lock update
// finds the newest, and the Dockerfile build arguments that carry it. The
// lock's parser and writer, the build arguments, lock update and its
// messages all read PinDefs.
type PinDef struct {
	Name string
	Kind PinKind
	// Package is an npm pin's package, when the lock names none.
	Package string
	// From is where lock update finds the newest, for people.
	From string
	// VersionArg and IntegrityArg are the build arguments of a tool pin
	// (IntegrityArg empty for a GitRef); Install is the INSTALL_ switch of
	// provision.sh that fetches it.
	VersionArg, IntegrityArg, Install string

	field func(*Pins) *ToolPin
}

// PinDefs are the pins, in boxes.lock's order.
var PinDefs = []PinDef{
	{Name: "base", Kind: BaseImage, From: "the base image's digest, through the engine's registry access"},
	{Name: "node", Kind: Download, From: "newest LTS of the pinned major, and the linux-x64 tarball's SHA-256",
		VersionArg: "NODE_VERSION", IntegrityArg: "NODE_SHA256", Install: "NODE", field: func(p *Pins) *ToolPin { return &p.Node }},
	{Name: "claude", Kind: NPMPackage, Package: "@anthropic-ai/claude-code", From: "npm latest and its integrity",
		VersionArg: "CLAUDE_VERSION", IntegrityArg: "CLAUDE_INTEGRITY", Install: "CLAUDE", field: func(p *Pins) *ToolPin { return &p.Claude }},
	{Name: "codex", Kind: NPMPackage, Package: "@openai/codex", From: "npm latest and its integrity",
		VersionArg: "CODEX_VERSION", IntegrityArg: "CODEX_INTEGRITY", Install: "CODEX", field: func(p *Pins) *ToolPin { return &p.Codex }},
	{Name: "executor", Kind: NPMPackage, Package: "executor", From: "npm latest and its integrity",
		VersionArg: "EXECUTOR_VERSION", IntegrityArg: "EXECUTOR_INTEGRITY", Install: "EXECUTOR", field: func(p *Pins) *ToolPin { return &p.Executor }},
	{Name: "hermes", Kind: GitRef, From: "the newest release's commit",
		VersionArg: "HERMES_REF", Install: "HERMES", field: func(p *Pins) *ToolPin { return &p.Hermes }},
	{Name: "uv", Kind: Download, From: "latest release and its SHA-256",
		VersionArg: "UV_VERSION", IntegrityArg: "UV_SHA256", Install: "UV", field: func(p *Pins) *ToolPin { return &p.UV }},
}

// PinNames are the keys of pins:, in file order.
var PinNames = func() []string {
	names := make([]string, len(PinDefs))
	for i, d := range PinDefs {
		names[i] = d.Name
	}
	return names
}()

// PinDefOf is the definition of pin name.
func PinDefOf(name string) (PinDef, bool) {
	for _, d := range PinDefs {
		if d.Name == name {
			return d, true
		}
	}
	return PinDef{}, false
}

// Tool is the pin of a tool by its boxes.lock key (node, claude, codex,
// executor, hermes, uv), or nil for any other name.
func (p *Pins) Tool(name string) *ToolPin {
	if d, ok := PinDefOf(name); ok && d.field != nil {
		return d.field(p)
	}
	return nil
}

// Fields are the keys a pin of kind k may have.
func (k PinKind) Fields() []string {
	if k == BaseImage {
		return []string{"image", "digest"}
	}
	return []string{"package", "version", "integrity"}
}

package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/spec"
)

// LeaseTools are the tools --allow lease adds.
var LeaseTools = []string{"lease", "renew", "release", "read_file", "write_file"}

// Home is where read_file and write_file work, in a held box.
const Home = "/data/home/agent"

// The bounds of what the file tools move.
const (
	MaxRead  = 1 << 20
	MaxWrite = 64 << 10
)

func (t *tools) addLeaseTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        "lease",
		Description: "Claim a free box of a pool of boxes.yaml for this session (boxes lease --json): its name, executor URL and expiry. The session may then exec in it, read and write its files; release, or the end of the session, resets it.",
	}, t.lease)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "renew",
		Description: "Extend the lease of a box this session holds, to ttl from now (boxes renew --json).",
	}, t.renew)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "release",
		Description: "Give back a box this session holds: it is reset (deleted with its data and token, made again) and free for others.",
	}, t.release)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_file",
		Description: "Read a file under /data/home/agent of a box this session holds: its first max_bytes (default and at most 1 MiB).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, t.readFile)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "write_file",
		Description: "Write a text file (at most 64 KiB) under /data/home/agent of a box this session holds, making its directories; an existing file is replaced.",
	}, t.writeFile)
}

// LeaseInput asks for a box of a pool.
type LeaseInput struct {
	Pool   string `json:"pool" jsonschema:"the pool's name, as under pools: in boxes.yaml"`
	Holder string `json:"holder,omitempty" jsonschema:"who holds the lease, for people reading boxes leases (default: boxes mcp)"`
	TTL    string `json:"ttl,omitempty" jsonschema:"how long the lease lasts, 1m to 8h (default 30m)"`
	Wait   string `json:"wait,omitempty" jsonschema:"how long to wait for a free box, at most 10m (default: not at all)"`
}

// Lease is what lease and renew return: boxes lease --json's object.
type Lease struct {
	Box      string `json:"box"`
	Pool     string `json:"pool"`
	Holder   string `json:"holder"`
	Lease    string `json:"lease"`
	Expires  string `json:"expires"`
	Executor string `json:"executor,omitempty"`
}

// held is a lease this session holds: its ID and its end.
type held struct {
	id      string
	expires time.Time
}

func (t *tools) lease(ctx context.Context, _ *mcp.CallToolRequest, in LeaseInput) (*mcp.CallToolResult, Result, error) {
	if err := boxName(in.Pool); err != nil {
		return nil, Result{}, fmt.Errorf("pool: %w", err)
	}
	holder := in.Holder
	if holder == "" {
		holder = "boxes mcp"
	}
	if len(holder) > 200 || strings.ContainsAny(holder, "\n\r\x00") {
		return nil, Result{}, errors.New("holder: at most 200 characters on one line")
	}
	ttl, err := duration("ttl", in.TTL, pool.DefaultTTL, pool.MinTTL, pool.MaxTTL)
	if err != nil {
		return nil, Result{}, err
	}
	wait, err := duration("wait", in.Wait, 0, 0, 10*time.Minute)
	if err != nil {
		return nil, Result{}, err
	}
	res, out, err := t.invoke(ctx, []string{"lease", in.Pool, "--holder", holder, "--ttl", ttl.String(), "--wait", wait.String(), "--json"}, false)
	if err != nil || res.IsError {
		return res, out, err
	}
	if err := t.hold(out.Stdout); err != nil {
		return nil, out, err
	}
	return res, out, nil
}

// hold records the lease boxes lease or renew printed as this session's.
func (t *tools) hold(printed string) error {
	var l Lease
	if err := json.Unmarshal([]byte(printed), &l); err != nil || l.Box == "" || l.Lease == "" {
		return fmt.Errorf("boxes printed no lease: %q", printed)
	}
	expires, err := time.Parse(time.RFC3339, l.Expires)
	if err != nil {
		return fmt.Errorf("boxes printed a lease with no expiry: %q", printed)
	}
	t.mu.Lock()
	t.held[l.Box] = held{id: l.Lease, expires: expires}
	t.mu.Unlock()
	return nil
}

// duration reads a tool's duration argument: def when empty, else within
// [min, max].
func duration(name, s string, def, min, max time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q: a duration such as 30m or 2h", name, s)
	}
	if d < min || d > max {
		return 0, fmt.Errorf("%s %s: want %s to %s", name, d, min, max)
	}
	return d, nil
}

// heldBox refuses a box this session does not hold, or whose lease has
// ended (its box may be someone else's since); it returns the lease's ID.
func (t *tools) heldBox(box string) (string, error) {
	if err := boxName(box); err != nil {
		return "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.held[box]
	if !ok {
		return "", fmt.Errorf("this session holds no box %s: lease one first", box)
	}
	if !time.Now().Before(h.expires) {
		return "", fmt.Errorf("this session's lease of %s ended at %s: lease a box again", box, h.expires.Format(time.RFC3339))
	}
	return h.id, nil
}

// confinement is how boxes is told to confine a command in box: under
// this session's lease of it (--lease ID), or, for a box the session does
// not hold, away from every box that is or was a pool's (--no-pool). The
// engine the command observes decides: a pool taken out of boxes.yaml
// keeps its leased boxes for their holders. boxes.yaml is read first only
// to refuse a pool's box the session does not hold with a clearer word.
func (t *tools) confinement(box string) ([]string, error) {
	t.mu.Lock()
	_, mine := t.held[box]
	t.mu.Unlock()
	if mine {
		id, err := t.heldBox(box)
		if err != nil {
			return nil, err
		}
		return []string{"--lease", id}, nil
	}
	if cfg, err := spec.Load(t.file); err == nil {
		if p, ok := cfg.PoolOf(box); ok {
			return nil, fmt.Errorf("%s is a box of pool %s that this session does not hold: lease one from the pool", box, p.Name)
		}
	}
	return []string{"--no-pool"}, nil
}

// RenewInput extends a lease.
type RenewInput struct {
	Box string `json:"box" jsonschema:"a box this session holds"`
	TTL string `json:"ttl,omitempty" jsonschema:"how long from now, 1m to 8h (default 30m)"`
}

func (t *tools) renew(ctx context.Context, _ *mcp.CallToolRequest, in RenewInput) (*mcp.CallToolResult, Result, error) {
	id, err := t.heldBox(in.Box)
	if err != nil {
		return nil, Result{}, err
	}
	ttl, err := duration("ttl", in.TTL, pool.DefaultTTL, pool.MinTTL, pool.MaxTTL)
	if err != nil {
		return nil, Result{}, err
	}
	res, out, err := t.invoke(ctx, []string{"renew", in.Box, "--lease", id, "--ttl", ttl.String(), "--json"}, false)
	if err == nil && !res.IsError {
		if err := t.hold(out.Stdout); err != nil {
			return nil, out, err
		}
	}
	return res, out, err
}

// ReleaseInput names the box to give back.
type ReleaseInput struct {
	Box string `json:"box" jsonschema:"a box this session holds"`
}

func (t *tools) release(ctx context.Context, _ *mcp.CallToolRequest, in ReleaseInput) (*mcp.CallToolResult, Result, error) {
	id, err := t.heldBox(in.Box)
	if err != nil {
		return nil, Result{}, err
	}
	res, out, err := t.invoke(ctx, []string{"release", in.Box, "--lease", id}, false)
	if err == nil && !res.IsError {
		t.mu.Lock()
		delete(t.held, in.Box)
		t.mu.Unlock()
	}
	return res, out, err
}

// homePath is p, relative to the agent's home, cleaned; a path that would
// leave the home as written is refused. A symbolic link is followed in the
// box itself (readScript, writeScript), where one that leads out is refused.
func homePath(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("path: a file's path under /data/home/agent is needed")
	case len(p) > 4096 || strings.ContainsAny(p, "\x00\n"):
		return "", errors.New("path: at most 4096 bytes, with no NUL or newline")
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("path %q: give it relative to /data/home/agent", p)
	}
	clean := path.Clean(p)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %q leaves /data/home/agent", p)
	}
	return clean, nil
}

// The file tools' scripts resolve the path ($2, under the home $1) in the
// box, refuse it when a symbolic link leads it out of the home, then open
// it, and act through that open file only once the kernel says that it is
// in the home: the agent may change its files at any moment, so what is
// checked is the file opened, not a name. Every value is an argument of
// sh -c, never parsed by the shell.
const (
	fileScript = `home=$1 rel=$2
refuse() { printf 'path "%s" %s\n' "$rel" "$1" >&2; exit 1; }
inside() { case $1 in "$home" | "$home"/*) ;; *) refuse "leaves $home through a symbolic link";; esac; }
`
	// $3 is the most bytes to read.
	readScript = fileScript + `r=$(realpath -e -- "$home/$rel") || exit 1
inside "$r"
[ -f "$r" ] || refuse "is not a regular file"
exec 3<"$r"
inside "$(readlink /proc/self/fd/3)"
exec head -c "$3" <&3
`
	// $3 is the content. The file is opened without truncating it, and
	// truncated through the open file once it is known to be the home's.
	writeScript = fileScript + `t=$(realpath -m -- "$home/$rel") || exit 1
inside "$t"
[ ! -d "$t" ] || refuse "is a directory"
mkdir -p -- "${t%/*}" || exit 1
exec 3>>"$t"
inside "$(readlink /proc/self/fd/3)"
printf '%s' "$3" >/proc/self/fd/3
`
)

// ReadInput names a file to read.
type ReadInput struct {
	Box      string `json:"box" jsonschema:"a box this session holds"`
	Path     string `json:"path" jsonschema:"the file, relative to /data/home/agent"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"read at most this many bytes (default and at most 1048576)"`
}

func (t *tools) readFile(ctx context.Context, _ *mcp.CallToolRequest, in ReadInput) (*mcp.CallToolResult, Result, error) {
	id, err := t.heldBox(in.Box)
	if err != nil {
		return nil, Result{}, err
	}
	rel, err := homePath(in.Path)
	if err != nil {
		return nil, Result{}, err
	}
	n := in.MaxBytes
	switch {
	case n == 0:
		n = MaxRead
	case n < 0 || n > MaxRead:
		return nil, Result{}, fmt.Errorf("max_bytes %d: want 1 to %d", n, MaxRead)
	}
	return t.invoke(ctx, []string{"exec", in.Box, "--lease", id, "--", "sh", "-c", readScript, "read_file", Home, rel, strconv.Itoa(n)}, false)
}

// WriteInput is a file to write.
type WriteInput struct {
	Box     string `json:"box" jsonschema:"a box this session holds"`
	Path    string `json:"path" jsonschema:"the file, relative to /data/home/agent"`
	Content string `json:"content" jsonschema:"the file's text, at most 65536 bytes of UTF-8"`
}

func (t *tools) writeFile(ctx context.Context, _ *mcp.CallToolRequest, in WriteInput) (*mcp.CallToolResult, Result, error) {
	id, err := t.heldBox(in.Box)
	if err != nil {
		return nil, Result{}, err
	}
	rel, err := homePath(in.Path)
	if err != nil {
		return nil, Result{}, err
	}
	if len(in.Content) > MaxWrite || !utf8.ValidString(in.Content) || strings.ContainsRune(in.Content, 0) {
		return nil, Result{}, fmt.Errorf("content: at most %d bytes of UTF-8 text with no NUL", MaxWrite)
	}
	res, out, err := t.invoke(ctx, []string{"exec", in.Box, "--lease", id, "--", "sh", "-c", writeScript, "write_file", Home, rel, in.Content}, false)
	if err == nil && !res.IsError {
		msg := fmt.Sprintf("wrote %d bytes to %s/%s", len(in.Content), Home, rel)
		res.Content = []mcp.Content{&mcp.TextContent{Text: msg}}
		out.Stdout = msg
	}
	return res, out, err
}

// end releases every box the session still holds, each reset; the errors
// of those that could not be are joined.
func (t *tools) end(ctx context.Context) error {
	t.mu.Lock()
	boxes := make([]string, 0, len(t.held))
	ids := map[string]string{}
	for b, h := range t.held {
		boxes = append(boxes, b)
		ids[b] = h.id
	}
	t.mu.Unlock()
	sort.Strings(boxes)
	var errs []error
	for _, b := range boxes {
		// --lease: a lease that ended meanwhile is another's box now.
		res, out, err := t.invoke(ctx, []string{"release", b, "--lease", ids[b]}, false)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("releasing %s: %w", b, err))
		case res.IsError:
			errs = append(errs, fmt.Errorf("releasing %s: %s", b, strings.TrimSpace(out.Stderr)))
		default:
			t.mu.Lock()
			delete(t.held, b)
			t.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

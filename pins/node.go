package pins

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hermes-box/boxes/spec"
)

// nodeVersion is a Node release version as index.json writes it.
var nodeVersion = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)$`)

// nodeRelease is one entry of index.json.
type nodeRelease struct {
	Version string   `json:"version"`
	LTS     ltsName  `json:"lts"`
	Files   []string `json:"files"`

	num [3]int // Version, parsed
}

// ltsName is index.json's lts field: false, or the LTS line's code name.
type ltsName string

// UnmarshalJSON accepts false (or null) as no LTS, and a non-empty string.
func (l *ltsName) UnmarshalJSON(data []byte) error {
	if string(data) == "false" || string(data) == "null" {
		*l = ""
		return nil
	}
	var name string
	if err := json.Unmarshal(data, &name); err != nil || name == "" {
		return fmt.Errorf("lts is %s, want false or a code name", data)
	}
	*l = ltsName(name)
	return nil
}

// node returns the pin of the newest LTS release with a linux-x64 build, of
// the major version of current if current is set.
func (r *Resolver) node(ctx context.Context, current string) (Result, error) {
	major := -1 // any
	if current != "" {
		n, err := parseNodeVersion("v" + strings.TrimPrefix(current, "v"))
		if err != nil {
			return Result{}, fmt.Errorf("current pin %q is not MAJOR.MINOR.PATCH", current)
		}
		major = n[0]
	}
	dist := base(r.Node, DefaultNode)
	url := dist + "/index.json"
	var index []nodeRelease
	if err := r.getJSON(ctx, url, "application/json", jsonLimit, &index); err != nil {
		return Result{}, err
	}
	rel, err := newestLTS(index, major)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", url, err)
	}
	file := "node-" + rel.Version + "-linux-x64.tar.xz"
	sumsURL := dist + "/" + rel.Version + "/SHASUMS256.txt"
	sums, err := r.get(ctx, sumsURL, "text/plain", textLimit)
	if err != nil {
		return Result{}, err
	}
	sum, err := shasumFor(sums, file)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", sumsURL, err)
	}
	return Result{
		Pin:  spec.ToolPin{Version: strings.TrimPrefix(rel.Version, "v"), Integrity: "sha256:" + sum},
		From: "LTS " + string(rel.LTS),
	}, nil
}

// newestLTS picks the newest LTS release of index that has a linux-x64
// build and, if major is not -1, is of that major version.
func newestLTS(index []nodeRelease, major int) (nodeRelease, error) {
	var best *nodeRelease
	for i := range index {
		rel := &index[i]
		n, err := parseNodeVersion(rel.Version)
		if err != nil {
			return nodeRelease{}, fmt.Errorf("release %d: %w", i, err)
		}
		rel.num = n
		if rel.LTS == "" || (major >= 0 && n[0] != major) || !slices.Contains(rel.Files, "linux-x64") {
			continue
		}
		if best == nil || newer(n, best.num) {
			best = rel
		}
	}
	switch {
	case best != nil:
		return *best, nil
	case major >= 0:
		return nodeRelease{}, fmt.Errorf("no LTS release of Node %d with a linux-x64 build", major)
	default:
		return nodeRelease{}, errors.New("no LTS release with a linux-x64 build")
	}
}

// parseNodeVersion parses "vMAJOR.MINOR.PATCH".
func parseNodeVersion(v string) ([3]int, error) {
	var n [3]int
	m := nodeVersion.FindStringSubmatch(v)
	if m == nil {
		return n, fmt.Errorf("version %q is not vMAJOR.MINOR.PATCH", v)
	}
	for i := range n {
		var err error
		if n[i], err = strconv.Atoi(m[i+1]); err != nil {
			return n, fmt.Errorf("version %q: %w", v, err)
		}
	}
	return n, nil
}

// newer reports whether version a is after version b.
func newer(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// shasumFor returns the checksum sha256sum-style content gives for file:
// lines of "<64 hex>  <name>" (or "<64 hex> *<name>").
func shasumFor(content []byte, file string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 || strings.TrimPrefix(fields[1], "*") != file {
			continue
		}
		return sha256Hex(fields[0], file)
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no checksum for %s", file)
}

// sha256Hex checks that sum is 64 hex digits and returns it in lower case.
func sha256Hex(sum, file string) (string, error) {
	if !sha256Pattern().MatchString(sum) {
		return "", fmt.Errorf("checksum %q for %s is not 64 hex digits", sum, file)
	}
	return strings.ToLower(sum), nil
}

// sha256Pattern is compiled on first use: its bounded length makes a long
// program, which every command would pay for.
var sha256Pattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9A-Fa-f]{64}$`) })

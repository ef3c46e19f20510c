package pins

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/hermes-box/boxes/spec"
)

var (
	// npmName is a package name as the registry accepts new ones: lower
	// case, URL-safe, optionally in a scope.
	npmName = regexp.MustCompile(`^(?:@[a-z0-9~-][a-z0-9._~-]*/)?[a-z0-9~-][a-z0-9._~-]*$`)
	// semver is a plain version: MAJOR.MINOR.PATCH, with an optional
	// pre-release and build part and no range or tag syntax.
	semver = regexp.MustCompile(`^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$`)
)

// npmDoc is the part of a package document pins reads. The abbreviated
// document and the full one share it.
type npmDoc struct {
	DistTags map[string]string     `json:"dist-tags"`
	Versions map[string]npmVersion `json:"versions"`
}

type npmVersion struct {
	Dist struct {
		Integrity string `json:"integrity"`
		Shasum    string `json:"shasum"`
	} `json:"dist"`
}

// npm returns the pin of pkg's latest dist-tag.
func (r *Resolver) npm(ctx context.Context, pkg string) (Result, error) {
	if !npmName.MatchString(pkg) {
		return Result{}, fmt.Errorf("%q is not an npm package name", pkg)
	}
	registry := base(r.NPM, DefaultNPM)
	url := registry + "/" + strings.Replace(pkg, "/", "%2f", 1)
	var doc npmDoc
	if err := r.getJSON(ctx, url, acceptNPM, npmLimit, &doc); err != nil {
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusNotFound {
			return Result{}, fmt.Errorf("package %s not found in registry %s", pkg, registry)
		}
		return Result{}, err
	}
	latest, ok := doc.DistTags["latest"]
	if !ok {
		return Result{}, fmt.Errorf("%s: no dist-tags.latest", url)
	}
	if !semver.MatchString(latest) {
		return Result{}, fmt.Errorf("%s: dist-tags.latest %q is not a plain version", url, latest)
	}
	v, ok := doc.Versions[latest]
	if !ok {
		return Result{}, fmt.Errorf("%s: dist-tags.latest is %s, which is not in versions", url, latest)
	}
	integrity, err := sha512Integrity(v.Dist.Integrity, v.Dist.Shasum)
	if err != nil {
		return Result{}, fmt.Errorf("%s: version %s: %w", url, latest, err)
	}
	return Result{
		Pin:  spec.ToolPin{Package: pkg, Version: latest, Integrity: integrity},
		From: "dist-tag latest",
	}, nil
}

// sha512Integrity returns the sha512 entry of an SRI integrity string
// ("sha512-<base64 of 64 bytes>"); shasum only shapes the error when there is
// none, since a bare sha1 is not enough to pin a download by.
func sha512Integrity(integrity, shasum string) (string, error) {
	for _, entry := range strings.Fields(integrity) {
		b64, ok := strings.CutPrefix(entry, "sha512-")
		if !ok {
			continue
		}
		if sum, err := base64.StdEncoding.DecodeString(b64); err != nil || len(sum) != 64 {
			return "", fmt.Errorf("dist.integrity %q is not sha512-<base64 of 64 bytes>", entry)
		}
		return entry, nil
	}
	switch {
	case integrity != "":
		return "", fmt.Errorf("dist.integrity %q has no sha512 hash", integrity)
	case shasum != "":
		return "", errors.New("no dist.integrity, only a sha1 dist.shasum; a sha512 integrity is required")
	default:
		return "", errors.New("no dist.integrity")
	}
}

package pins

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/hermes-box/boxes/spec"
)

// The GitHub repositories provision/provision.sh installs from.
const (
	uvRepo     = "astral-sh/uv"
	uvAsset    = "uv-x86_64-unknown-linux-gnu.tar.gz"
	hermesRepo = "NousResearch/hermes-agent"
)

var (
	// gitRef is a tag or branch name provision.sh accepts as HERMES_REF.
	gitRef = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._/-]*$`)
	// commitSHA is a full commit hash, compiled on first use (its bounded
	// length makes a long program: every command would pay for it).
	commitSHA = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })
)

// uv returns the pin of uv's latest GitHub release: its tag, and the
// checksum the release publishes beside the x86_64 Linux tarball.
func (r *Resolver) uv(ctx context.Context) (Result, error) {
	tag, url, err := r.latestRelease(ctx, uvRepo)
	if err != nil {
		return Result{}, err
	}
	if !semver.MatchString(tag) {
		return Result{}, fmt.Errorf("%s: tag_name %q is not a plain version", url, tag)
	}
	sumURL := base(r.GitHub, DefaultGitHub) + "/" + uvRepo + "/releases/download/" + tag + "/" + uvAsset + ".sha256"
	body, err := r.get(ctx, sumURL, "text/plain", textLimit)
	if err != nil {
		return Result{}, err
	}
	sum, err := assetChecksum(body, uvAsset)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", sumURL, err)
	}
	return Result{
		Pin:  spec.ToolPin{Version: tag, Integrity: "sha256:" + sum},
		From: "release " + tag,
	}, nil
}

// assetChecksum reads a one-file .sha256: "<64 hex>  <name>", or the bare
// hash. A name, if there is one, must be file.
func assetChecksum(content []byte, file string) (string, error) {
	fields := strings.Fields(string(content))
	switch {
	case len(fields) == 0:
		return "", errors.New("empty checksum file")
	case len(fields) > 2:
		return "", fmt.Errorf("want \"<sha256>  %s\", got %d fields", file, len(fields))
	case len(fields) == 2 && strings.TrimPrefix(fields[1], "*") != file:
		return "", fmt.Errorf("checksum is for %s, want %s", fields[1], file)
	}
	return sha256Hex(fields[0], file)
}

// hermes returns the pin of the Hermes agent: the commit of its latest
// release, or of its default branch when the repository has no release.
func (r *Resolver) hermes(ctx context.Context) (Result, error) {
	ref, from, err := r.hermesRef(ctx)
	if err != nil {
		return Result{}, err
	}
	url := base(r.GitHubAPI, DefaultGitHubAPI) + "/repos/" + hermesRepo + "/commits/" + ref
	body, err := r.get(ctx, url, acceptGitHubSHA, textLimit)
	if err != nil {
		return Result{}, err
	}
	sha := strings.TrimSpace(string(body))
	if !commitSHA().MatchString(sha) {
		return Result{}, fmt.Errorf("%s: %.60q is not a 40-hex commit hash", url, sha)
	}
	return Result{
		Pin:  spec.ToolPin{Package: hermesRepo, Version: sha},
		From: from,
	}, nil
}

// hermesRef names the ref the Hermes pin follows, and says which it is
// ("release v0.3.1", "branch main").
func (r *Resolver) hermesRef(ctx context.Context) (ref, from string, err error) {
	tag, url, err := r.latestRelease(ctx, hermesRepo)
	var se *statusError
	switch {
	case err == nil:
		ref, from = tag, "release "+tag
	case errors.As(err, &se) && se.code == http.StatusNotFound:
		ref, url, err = r.defaultBranch(ctx, hermesRepo)
		if err != nil {
			return "", "", err
		}
		from = "branch " + ref
	default:
		return "", "", err
	}
	if !gitRef.MatchString(ref) || strings.Contains(ref, "..") {
		return "", "", fmt.Errorf("%s: %q is not a usable git ref", url, ref)
	}
	return ref, from, nil
}

// latestRelease returns the tag of repo's latest release and the URL it
// came from. A repository without releases is a *statusError with code 404.
func (r *Resolver) latestRelease(ctx context.Context, repo string) (tag, url string, err error) {
	url = base(r.GitHubAPI, DefaultGitHubAPI) + "/repos/" + repo + "/releases/latest"
	var rel struct {
		TagName string `json:"tag_name"`
	}
	if err := r.getJSON(ctx, url, acceptGitHub, jsonLimit, &rel); err != nil {
		return "", url, err
	}
	if rel.TagName == "" {
		return "", url, fmt.Errorf("%s: no tag_name", url)
	}
	return rel.TagName, url, nil
}

// defaultBranch returns the name of repo's default branch and the URL it
// came from.
func (r *Resolver) defaultBranch(ctx context.Context, repo string) (branch, url string, err error) {
	url = base(r.GitHubAPI, DefaultGitHubAPI) + "/repos/" + repo
	var meta struct {
		DefaultBranch string `json:"default_branch"`
	}
	if err := r.getJSON(ctx, url, acceptGitHub, jsonLimit, &meta); err != nil {
		return "", url, err
	}
	if meta.DefaultBranch == "" {
		return "", url, fmt.Errorf("%s: no default_branch", url)
	}
	return meta.DefaultBranch, url, nil
}

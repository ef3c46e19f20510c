#!/usr/bin/env bash
# Render a sample plan's --markdown the way a code host shows a pull-request
# comment, and take a picture of it: bin/markdown/plan.png (fold closed, what a
# reviewer sees first) and plan-open.png (fold open). The sample is the real
# output of `boxes diff --markdown` on a throwaway Git repository with a
# create, a recreate, a start, a stop and a delete.
#
# Needs: go, git, and headless Chromium (Debian: apt-get install chromium).
set -euo pipefail
cd "$(dirname "$0")/.."

chromium=""
for c in chromium chromium-browser google-chrome; do
	if command -v "$c" >/dev/null; then chromium=$c; break; fi
done
if [ -z "$chromium" ]; then
	echo "render-markdown: needs headless Chromium (Debian: apt-get install chromium)" >&2
	exit 1
fi

out=bin/markdown
mkdir -p "$out"
go build -o bin/boxes ./cmd/boxes
(cd scripts/render-markdown && go build -o ../../bin/render-markdown .)

repo=$(mktemp -d)
trap 'rm -rf "$repo"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=sample GIT_AUTHOR_EMAIL=sample@example.org GIT_COMMITTER_NAME=sample GIT_COMMITTER_EMAIL=sample@example.org
git -C "$repo" init -q -b main
cat > "$repo/boxes.lock" <<LOCK
version: 1
pins:
  base:
    image: ubuntu:24.04
    digest: sha256:$(printf 'ab%.0s' $(seq 32))
image:
  id: sha256:$(printf '11%.0s' $(seq 32))
  ref: hermes-box-lite:sample
  built: "2026-12-02T10:15:00Z"
LOCK
cat > "$repo/boxes.yaml" <<'YAML'
version: 1
defaults: {memory: 4GiB}
boxes:
  alpha: {}
  beta: {}
  gamma: {state: stopped}
  delta: {}
  old: {}
YAML
git -C "$repo" add -A
git -C "$repo" commit -q -m base
cat > "$repo/boxes.yaml" <<'YAML'
version: 1
defaults: {memory: 4GiB}
boxes:
  alpha: {}
  beta: {memory: 8GiB, env: {TZ: Europe/Berlin}}
  gamma: {}
  delta: {state: stopped}
  fresh: {}
YAML

rc=0
bin/boxes -f "$repo/boxes.yaml" diff --markdown main > "$out/plan.md" || rc=$?
if [ "$rc" -ne 2 ]; then
	echo "render-markdown: boxes diff exited $rc, want 2 (changes)" >&2
	exit 1
fi
bin/render-markdown < "$out/plan.md" > "$out/plan.html"
sed 's/<details>/<details open>/' "$out/plan.html" > "$out/plan-open.html"
for page in plan plan-open; do
	"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=920,900 \
		--screenshot="$PWD/$out/$page.png" "file://$PWD/$out/$page.html" 2>/dev/null
done
echo "wrote $out/plan.md, $out/plan.png and $out/plan-open.png"

#!/bin/bash
# try.sh is `make try`: boxes on any machine with Docker, without the internet.
#
# The real image needs npm, nodejs.org, GitHub and a registry. This builds the
# offline test image instead (docker/Dockerfile with every network install
# off on a debootstrapped Debian base, plus the stand-in Executor that the
# tests use: NOT the real Executor), pins a separate example fleet in try/ to
# it, and brings that fleet up. The repository's own boxes.lock is untouched.
set -eu
set -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
boxes=$root/bin/boxes
dir=$root/try
readonly IMAGE=hermes-box-lite:test

say() { printf 'try: %s\n' "$*"; }

say "building the offline test image $IMAGE (stand-in Executor, no network installs)"
bash "$root/scripts/test-image.sh" >"$root/bin/try-image.log" 2>&1 || {
	tail -n 20 "$root/bin/try-image.log" >&2
	say "building the test image failed; the whole log is bin/try-image.log" >&2
	exit 1
}

mkdir -p "$dir"
if [ ! -e "$dir/boxes.yaml" ]; then
	cat >"$dir/boxes.yaml" <<'YAML'
# An example fleet on the offline test image (make try).
version: 1
fleet: try
defaults:
  cpus: 1
  memory: 1GiB
  executor: {bind: 127.0.0.1, port: auto}
boxes:
  demo: {}
YAML
fi
"$boxes" -f "$dir/boxes.yaml" lock image "$IMAGE"
"$boxes" -f "$dir/boxes.yaml" plan
"$boxes" -f "$dir/boxes.yaml" apply --auto-approve

cat <<MSG

try: the example fleet is up, on the offline test image with the stand-in Executor.
try: next, as you would with the real image:
  bin/boxes -f try/boxes.yaml ls
  bin/boxes -f try/boxes.yaml doctor demo
  bin/boxes -f try/boxes.yaml enter demo          # tmux; detach with C-b d
  BOXES_PASSPHRASE=… bin/boxes -f try/boxes.yaml save demo
  bin/boxes -f try/boxes.yaml rm demo              # asks for the name
MSG

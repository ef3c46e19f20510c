#!/bin/bash
# try.sh is `make try`: boxes on any machine with Docker, without the internet.
#
# The real image needs npm, nodejs.org, GitHub and a registry. This builds the
# offline test image instead (the Dockerfile with every network install
# off on a debootstrapped Debian base, plus the stand-in Executor that the
# tests use: NOT the real Executor, and no Claude, Codex or Hermes inside),
# pins a separate example fleet in try/ to it, and walks through what a day
# with boxes looks like: plan, apply, ls, exec, the tmux session enter
# attaches to, doctor, save, rm, load. The box stays up for you to enter;
# `make try-clean` (this script with "clean") removes it and try/.
# The repository's own boxes.yaml and boxes.lock are untouched.
set -eu
set -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
readonly IMAGE=hermes-box-lite:test
# Not a secret: it encrypts the demo box's archive under try/backups/.
readonly PASSPHRASE=make-try-not-a-secret
boxes=(bin/boxes -f try/boxes.yaml)

say() { printf 'try: %s\n' "$*"; }
# run shows a command the way you would type it, then runs it.
run() {
	printf '\n$ %s\n' "$(shown "$@")"
	"$@"
}
# runp is run with the demo passphrase in the environment.
runp() {
	printf '\n$ BOXES_PASSPHRASE=%s %s\n' "$PASSPHRASE" "$(shown "$@")"
	BOXES_PASSPHRASE=$PASSPHRASE "$@"
}
# shown quotes the arguments that need it, as you would type them.
shown() {
	local out='' a q="'"
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
			out+=" $a"
		else
			out+=" '${a//$q/$q\\$q$q}'"
		fi
	done
	printf '%s' "${out# }"
}

if [ "${1:-}" = clean ]; then
	if [ ! -e try/boxes.yaml ]; then
		say "nothing to clean: there is no try/boxes.yaml"
		exit 0
	fi
	names=$("${boxes[@]}" ls --json | sed -n 's/^ *"name": "\(.*\)",$/\1/p')
	for name in $names; do
		run "${boxes[@]}" rm "$name" --confirm "$name"
	done
	rm -rf try
	say "removed the example fleet's boxes and try/ (its archives too); the test images stay (docker image ls hermes-box-lite)"
	exit 0
fi

if ! docker version >/dev/null 2>&1; then
	say "needs Docker: a docker command and an engine this user can reach (docker version fails)" >&2
	exit 1
fi

say "THIS IS A TRIAL: the offline test image $IMAGE, with network installs off and a"
say "stand-in Executor (a small MCP server the tests use), not the real image."
say "building it (about a minute the first time; the log is bin/try-image.log)"
mkdir -p bin
bash scripts/test-image.sh >bin/try-image.log 2>&1 || {
	tail -n 20 bin/try-image.log >&2
	say "building the test image failed; the whole log is bin/try-image.log" >&2
	exit 1
}

mkdir -p try
if [ ! -e try/boxes.yaml ]; then
	cat >try/boxes.yaml <<'YAML'
# An example fleet on the offline test image (make try). The same shape as
# the repository's boxes.yaml, with a box name of its own so that it never
# meets a real box.
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
run "${boxes[@]}" lock image "$IMAGE"

say "1. plan: what apply will do, and why (saved, so apply does exactly this)"
run "${boxes[@]}" plan -o try/demo.plan
say "2. apply the saved plan: the box is ready when its Executor answers an authenticated MCP initialize"
run "${boxes[@]}" apply try/demo.plan
run "${boxes[@]}" ls

say "3. exec: a command in the box, as its user agent, with /data/home/agent as home"
# shellcheck disable=SC2016 # expanded in the box
run "${boxes[@]}" exec demo -- sh -c 'echo "written by make try at $(date -u +%H:%M:%S)" >~/try-marker.txt && cat ~/try-marker.txt && id'
say "   enter attaches you to the tmux session main (C-b d detaches); here it is started detached:"
run "${boxes[@]}" exec demo -- sh -c 'tmux has-session -t main 2>/dev/null || tmux new-session -d -s main'
run "${boxes[@]}" exec demo -- tmux list-sessions

say "4. doctor: the box checked from the host and from inside (each warn is a tool this trial image leaves out)"
run "${boxes[@]}" doctor demo

say "5. save: /data archived, encrypted (here with a demo passphrase), read back and checked"
runp "${boxes[@]}" save demo
archives=(try/backups/demo-*.age) # named by time: the last is the newest
archive=${archives[-1]}

say "6. rm, then load: the box deleted, then made again from the archive with its data"
run "${boxes[@]}" rm demo --confirm demo
runp "${boxes[@]}" load "$archive" demo
run "${boxes[@]}" exec demo -- cat /data/home/agent/try-marker.txt
run "${boxes[@]}" plan

cat <<MSG

try: done. The box demo is up, on the offline test image with the stand-in Executor.
try: step into it:        bin/boxes -f try/boxes.yaml enter demo   (C-b d detaches)
try: remove it and try/:  make try-clean
try: the real image needs the internet: make up (see docs/setup.md).
MSG

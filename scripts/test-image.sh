#!/bin/bash
# test-image.sh builds the offline test images (what `make test-image` runs):
#
#   hermes-box-lite:test         the Dockerfile on a Debian bookworm base with
#                                every install off, plus the Executor stand-in
#                                (cmd/executor-standin) as /usr/local/bin/executor
#   hermes-box-lite:test2        the same but for /opt/hermes-box/test-variant: a
#                                second image for reconciler tests
#   hermes-box-lite:test-recipe  the Dockerfile's own output, built by
#                                `boxes build --offline`, before the stand-in
#
# Needs docker and go; no registry. The base image hermes-box-lite-base:bookworm
# is reused when present and made with INCLUDE's packages, else made with
# debootstrap from deb.debian.org.
set -eu
set -o pipefail

readonly BASE=hermes-box-lite-base:bookworm
readonly RECIPE_TAG=hermes-box-lite:test-recipe
readonly TEST_TAG=hermes-box-lite:test
readonly TEST2_TAG=hermes-box-lite:test2
readonly INCLUDE=sudo,tmux,jq,curl,git,ca-certificates,procps,less,xz-utils,sqlite3
# The base records INCLUDE (and that it was pruned) in this label; a base made
# otherwise is made again.
readonly INCLUDE_LABEL=org.hermes-box.include
readonly INCLUDE_MARK="$INCLUDE+pruned"
readonly MIRROR=http://deb.debian.org/debian

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s%N; }
# since T0: seconds elapsed, one decimal.
since() {
	local ms=$((($(now) - $1) / 1000000))
	printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}
started=$(now)
timed() {
	local name=$1 t0 rc=0
	shift
	t0=$(now)
	"$@" || rc=$?
	printf 'test-image: %-28s %6ss%s\n' "$name" "$(since "$t0")" \
		"$([ "$rc" -eq 0 ] || echo "  FAILED (exit $rc)")"
	return "$rc"
}

base_image() {
	local have
	if have=$(docker image inspect -f "{{index .Config.Labels \"$INCLUDE_LABEL\"}}" "$BASE" 2>/dev/null); then
		if [ "$have" = "$INCLUDE_MARK" ]; then
			echo "test-image: reusing $BASE"
			return 0
		fi
		echo "test-image: $BASE was made as ${have:-(unrecorded)}, not $INCLUDE_MARK: making it again"
	fi
	local sudo=''
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	command -v debootstrap >/dev/null 2>&1 || {
		echo "test-image: $BASE is missing and debootstrap is not installed" >&2
		return 1
	}
	local rootfs=$work/rootfs
	# (set -e does not reach into a function run under timed's ||: each
	# step says itself when it fails.)
	$sudo debootstrap --variant=minbase --include="$INCLUDE" bookworm "$rootfs" "$MIRROR" || return 1
	# What no test reads, and every extra engine would be sent: the packages
	# debootstrap downloaded, apt's lists, documentation and translations
	# (about half the base; images stream to extra engines at ~15 MiB/s here).
	$sudo rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
		"$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
	$sudo tar -C "$rootfs" -c . | docker import --change "LABEL $INCLUDE_LABEL=$INCLUDE_MARK" - "$BASE" || return 1
	$sudo rm -rf "$rootfs"
}

binaries() {
	mkdir -p "$work/overlay"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' \
		-o "$work/overlay/executor" ./cmd/executor-standin &&
		CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/boxes" ./cmd/boxes)
}

# the Dockerfile through boxes build itself, from the recipe built into
# the binary, with every network install off.
build_recipe() {
	"$work/boxes" -f "$work/boxes.yaml" build --offline --no-lock --quiet \
		--base "$BASE" --tag "$RECIPE_TAG"
}

build_test() {
	echo 1 >"$work/overlay/test-variant"
	cat >"$work/overlay/Dockerfile" <<'EOF'
ARG BASE
FROM ${BASE}
# Test only: the stand-in where the real image has the npm Executor.
COPY executor /usr/local/bin/executor
COPY test-variant /opt/hermes-box/test-variant
EOF
	DOCKER_BUILDKIT=0 docker build --build-arg "BASE=$RECIPE_TAG" -t "$TEST_TAG" "$work/overlay"
}

build_test2() {
	mkdir -p "$work/variant"
	echo 2 >"$work/variant/test-variant"
	cat >"$work/variant/Dockerfile" <<'EOF'
ARG BASE
FROM ${BASE}
COPY test-variant /opt/hermes-box/test-variant
EOF
	DOCKER_BUILDKIT=0 docker build --build-arg "BASE=$TEST_TAG" -t "$TEST2_TAG" "$work/variant"
}

# The images these tags name now, removed once the tags move on, so that
# repeated runs do not pile up untagged images.
previous=()
for tag in "$TEST2_TAG" "$TEST_TAG" "$RECIPE_TAG"; do
	previous+=("$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)")
done
prune_previous() {
	local id
	for id in "${previous[@]}"; do
		[ -n "$id" ] || continue
		# Still tagged (unchanged) or still a parent: docker refuses, fine.
		[ -n "$(docker image inspect -f '{{join .RepoTags ""}}' "$id" 2>/dev/null)" ] ||
			docker rmi "$id" >/dev/null 2>&1 || true
	done
}

timed "base image" base_image
timed "stand-in and boxes" binaries
timed "boxes build --offline" build_recipe
timed "$TEST_TAG" build_test
timed "$TEST2_TAG" build_test2
prune_previous
printf 'test-image: %-28s %6ss\n' total "$(since "$started")"
docker image ls --format '{{.Repository}}:{{.Tag}} {{.ID}} {{.Size}}' | grep '^hermes-box-lite:test' || true

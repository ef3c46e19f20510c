#!/bin/bash
# provision.sh installs the box's tools into the image. The Dockerfile runs
# it once, in the "tools" stage, as root on an Ubuntu 24.04 base (the offline
# test image uses a Debian bookworm base with every install switched off).
#
# Inputs are the build arguments, seen here as environment variables:
#   INSTALL_APT INSTALL_NODE INSTALL_UV INSTALL_CLAUDE INSTALL_CODEX
#   INSTALL_EXECUTOR INSTALL_HERMES      1 (default) installs, 0 skips
#   NODE_VERSION NODE_SHA256             node-vX-linux-ARCH.tar.xz from nodejs.org
#   UV_VERSION UV_SHA256                 uv release from GitHub
#   CLAUDE_VERSION CLAUDE_INTEGRITY      npm @anthropic-ai/claude-code
#   CODEX_VERSION CODEX_INTEGRITY        npm @openai/codex
#   EXECUTOR_VERSION EXECUTOR_INTEGRITY  npm executor
#   HERMES_REF                           Hermes agent git ref (commit, tag, branch)
# A checksum or integrity left empty falls back to the one the publisher
# serves next to the download, with a warning.
#
# Code goes to /opt/hermes-box and /usr/local, never under /data: /data is the
# box's volume and is laid out at run time by `hb init`. What was installed
# and what was skipped is written to /opt/hermes-box/versions.env.
# shellcheck source-path=SCRIPTDIR
set -eu
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
# lib.sh is checked on its own; shellcheck without -x cannot follow it.
# shellcheck source=/dev/null
. "$here/lib.sh"

readonly PREFIX=/opt/hermes-box
readonly RECORD=$PREFIX/versions.env
readonly AGENT_UID=1000
readonly EXECUTOR_UID=1001

WORK=$(mktemp -d)
RECORDS=()

on_exit() {
	local rc=$?
	rm -rf "$WORK"
	if [ "$rc" -ne 0 ] && [ -z "${PROVISION_FAILED:-}" ]; then
		printf 'provision: step %s: failed (exit status %s)\n' "$STEP" "$rc" >&2
	fi
}
trap on_exit EXIT

record() {
	RECORDS+=("$1=$2")
}

# run_step NAME SWITCH: run step_NAME when the build argument SWITCH is on,
# and record the outcome either way.
run_step() {
	local name=$1 switch=$2 upper
	upper=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
	STEP=$name
	if enabled "$switch"; then
		say "installing"
		"step_$name"
		record "HB_STEP_$upper" installed
		say "done"
	else
		say "skipped ($switch=0)"
		record "HB_STEP_$upper" skipped
	fi
}

arch_node() {
	case "$(uname -m)" in
	x86_64) echo x64 ;;
	aarch64) echo arm64 ;;
	*) fail "unsupported architecture $(uname -m)" ;;
	esac
}

arch_triple() {
	case "$(uname -m)" in
	x86_64) echo x86_64-unknown-linux-gnu ;;
	aarch64) echo aarch64-unknown-linux-gnu ;;
	*) fail "unsupported architecture $(uname -m)" ;;
	esac
}

check_inputs() {
	STEP=inputs
	local version='[0-9A-Za-z][0-9A-Za-z.+_-]*'
	check_format NODE_VERSION "${NODE_VERSION:-}" "v?$version"
	check_format NODE_SHA256 "${NODE_SHA256:-}" '[0-9a-f]{64}'
	check_format UV_VERSION "${UV_VERSION:-}" "$version"
	check_format UV_SHA256 "${UV_SHA256:-}" '[0-9a-f]{64}'
	check_format CLAUDE_VERSION "${CLAUDE_VERSION:-}" "$version"
	check_format CODEX_VERSION "${CODEX_VERSION:-}" "$version"
	check_format EXECUTOR_VERSION "${EXECUTOR_VERSION:-}" "$version"
	local sri='sha512-[A-Za-z0-9+/]+={0,2}'
	check_format CLAUDE_INTEGRITY "${CLAUDE_INTEGRITY:-}" "$sri"
	check_format CODEX_INTEGRITY "${CODEX_INTEGRITY:-}" "$sri"
	check_format EXECUTOR_INTEGRITY "${EXECUTOR_INTEGRITY:-}" "$sri"
	check_format HERMES_REF "${HERMES_REF:-}" '[0-9A-Za-z][0-9A-Za-z._/-]*'
}

step_apt() {
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends \
		tmux sudo curl jq git ca-certificates neovim xz-utils procps less openssl
	apt-get clean
	rm -rf /var/lib/apt/lists/*
}

# step_base is not switchable: the users and directories every box needs.
step_base() {
	STEP=base
	local cmd
	for cmd in bash curl jq tmux sudo setpriv sha256sum base64 tar useradd groupadd; do
		command -v "$cmd" >/dev/null 2>&1 ||
			fail "$cmd is missing: with INSTALL_APT=0 the base image must provide it"
	done

	# Ubuntu images ship a user "ubuntu" with uid 1000; the box's uid 1000 is
	# "agent", so a different owner of that uid or gid goes.
	local other
	other=$(getent passwd "$AGENT_UID" | cut -d: -f1 || true)
	if [ -n "$other" ] && [ "$other" != agent ]; then
		userdel --remove "$other" 2>/dev/null || userdel "$other"
	fi
	other=$(getent group "$AGENT_UID" | cut -d: -f1 || true)
	if [ -n "$other" ] && [ "$other" != agent ]; then
		groupdel "$other"
	fi
	getent group agent >/dev/null || groupadd --gid "$AGENT_UID" agent
	if ! getent passwd agent >/dev/null; then
		useradd --uid "$AGENT_UID" --gid agent --home-dir /data/home/agent \
			--no-create-home --shell /bin/bash agent
	fi
	[ "$(id -u agent)" = "$AGENT_UID" ] || fail "user agent exists with uid $(id -u agent), want $AGENT_UID"
	if [ "$(getent passwd agent | cut -d: -f6,7)" != /data/home/agent:/bin/bash ]; then
		usermod --home /data/home/agent --shell /bin/bash agent
	fi
	# No password: sudo is passwordless, and nobody logs in with one.
	passwd -d agent >/dev/null 2>&1 || true

	printf 'agent ALL=(ALL:ALL) NOPASSWD: ALL\n' >/etc/sudoers.d/agent
	chmod 0440 /etc/sudoers.d/agent
	if command -v visudo >/dev/null 2>&1; then
		visudo -cqf /etc/sudoers.d/agent || fail "/etc/sudoers.d/agent does not parse"
	fi

	# Executor runs as its own user, without sudo, its state in its volume.
	getent group executor >/dev/null || groupadd --gid "$EXECUTOR_UID" executor
	if ! getent passwd executor >/dev/null; then
		useradd --uid "$EXECUTOR_UID" --gid executor --home-dir /data/executor \
			--no-create-home --shell /usr/sbin/nologin executor
	fi

	install -d -m 0755 -o root -g root "$PREFIX" "$PREFIX/bin"
	# The mount point of the box's volume; hb init lays it out at run time.
	# A fresh named volume copies this directory's owner and mode.
	install -d -m 0711 -o root -g root /data

	# The guest files arrive later, in the image's last layer, under
	# $PREFIX/guest; their system paths point there, so that a guest edit
	# rebuilds that one layer and nothing else.
	install -d -m 0755 -o root -g root "$PREFIX/guest" /etc/profile.d
	ln -sfn "$PREFIX/guest/hb" /usr/local/bin/hb
	ln -sfn "$PREFIX/guest/profile.sh" /etc/profile.d/hermes-box.sh
	ln -sfn "$PREFIX/guest/tmux.conf" /etc/tmux.conf
	say "users agent ($AGENT_UID, passwordless sudo) and executor ($EXECUTOR_UID); $PREFIX and /data"
}

step_node() {
	need NODE_VERSION "${NODE_VERSION:-}"
	local v=${NODE_VERSION#v} arch file want
	arch=$(arch_node)
	file=node-v$v-linux-$arch.tar.xz
	fetch "https://nodejs.org/dist/v$v/$file" "$WORK/$file"
	if [ -n "${NODE_SHA256:-}" ]; then
		want=$NODE_SHA256
	else
		say "warning: NODE_SHA256 not pinned; checking against nodejs.org's SHASUMS256.txt"
		fetch "https://nodejs.org/dist/v$v/SHASUMS256.txt" "$WORK/SHASUMS256.txt"
		want=$(awk -v f="$file" '$2 == f { print $1 }' "$WORK/SHASUMS256.txt")
		[ -n "$want" ] || fail "SHASUMS256.txt has no checksum for $file"
	fi
	verify_sha256 "$WORK/$file" "$want"
	tar -xJf "$WORK/$file" -C /usr/local --strip-components=1 --no-same-owner \
		--exclude='*/CHANGELOG.md' --exclude='*/README.md' --exclude='*/LICENSE'
	[ "$(node --version)" = "v$v" ] || fail "node --version says $(node --version), want v$v"
	npm config --global set update-notifier false
	npm config --global set fund false
	record HB_NODE_VERSION "$v"
	record HB_NODE_SHA256 "$want"
}

step_uv() {
	need UV_VERSION "${UV_VERSION:-}"
	local triple file base want
	triple=$(arch_triple)
	file=uv-$triple.tar.gz
	base=https://github.com/astral-sh/uv/releases/download/$UV_VERSION
	fetch "$base/$file" "$WORK/$file"
	if [ -n "${UV_SHA256:-}" ]; then
		want=$UV_SHA256
	else
		say "warning: UV_SHA256 not pinned; checking against the release's $file.sha256"
		fetch "$base/$file.sha256" "$WORK/$file.sha256"
		want=$(cut -d' ' -f1 "$WORK/$file.sha256")
	fi
	verify_sha256 "$WORK/$file" "$want"
	mkdir -p "$WORK/uv"
	tar -xzf "$WORK/$file" -C "$WORK/uv" --no-same-owner
	install -m 0755 "$WORK/uv/uv-$triple/uv" "$WORK/uv/uv-$triple/uvx" /usr/local/bin/
	uv --version
	record HB_UV_VERSION "$UV_VERSION"
	record HB_UV_SHA256 "$want"
}

# npm_tool PACKAGE VERSION INTEGRITY KEY: fetch the exact tarball, check it
# against the pinned integrity, and install that file (not the name) globally.
npm_tool() {
	local pkg=$1 version=$2 integrity=$3 key=$4 dir tgz
	command -v npm >/dev/null 2>&1 || fail "npm is missing: $pkg needs INSTALL_NODE=1"
	need "${key}_VERSION" "$version"
	dir=$(mktemp -d "$WORK/npm.XXXXXX")
	(cd "$dir" && npm pack --json "$pkg@$version" >/dev/null)
	tgz=$(find "$dir" -maxdepth 1 -name '*.tgz' -printf '%f\n' | head -n 1)
	[ -n "$tgz" ] || fail "npm pack $pkg@$version produced no tarball"
	if [ -z "$integrity" ]; then
		integrity=$(npm view "$pkg@$version" dist.integrity)
		say "warning: ${key}_INTEGRITY not pinned; checking against the registry's $integrity"
	fi
	verify_integrity "$dir/$tgz" "$integrity"
	npm install --global --no-audit --no-fund "$dir/$tgz"
	record "HB_${key}_VERSION" "$version"
	record "HB_${key}_INTEGRITY" "$integrity"
}

step_claude() {
	npm_tool @anthropic-ai/claude-code "${CLAUDE_VERSION:-}" "${CLAUDE_INTEGRITY:-}" CLAUDE
	HOME=$WORK claude --version
}

step_codex() {
	npm_tool @openai/codex "${CODEX_VERSION:-}" "${CODEX_INTEGRITY:-}" CODEX
	HOME=$WORK codex --version
}

step_executor() {
	npm_tool executor "${EXECUTOR_VERSION:-}" "${EXECUTOR_INTEGRITY:-}" EXECUTOR
	command -v executor >/dev/null 2>&1 || fail "the executor package installed no executor command"
}

step_hermes() {
	need HERMES_REF "${HERMES_REF:-}"
	command -v git >/dev/null 2>&1 || fail "git is missing"
	local dir=$PREFIX/hermes installer=$WORK/hermes-install.sh bin
	local -a pin
	fetch "https://raw.githubusercontent.com/NousResearch/hermes-agent/$HERMES_REF/scripts/install.sh" "$installer"
	if printf '%s' "$HERMES_REF" | grep -Eqx '[0-9a-f]{40}'; then
		pin=(--commit "$HERMES_REF" --force-commit)
	else
		pin=(--branch "$HERMES_REF")
	fi
	# The installer's own state (HERMES_HOME, caches) goes to a scratch
	# directory that is thrown away; the box's HERMES_HOME is under /data.
	mkdir -p "$WORK/hermes-home" "$WORK/home"
	HOME=$WORK/home HERMES_HOME=$WORK/hermes-home \
		UV_PYTHON_INSTALL_DIR=$PREFIX/python UV_CACHE_DIR=$WORK/uv-cache \
		bash "$installer" --dir "$dir" --skip-setup --non-interactive --skip-browser "${pin[@]}" </dev/null
	if [ ! -x /usr/local/bin/hermes ]; then
		for bin in "$dir/venv/bin/hermes" "$dir/.venv/bin/hermes"; do
			if [ -x "$bin" ]; then
				ln -sf "$bin" /usr/local/bin/hermes
				break
			fi
		done
	fi
	[ -x /usr/local/bin/hermes ] || fail "the installer left no hermes command"
	chmod -R a+rX "$dir"
	[ ! -d "$PREFIX/python" ] || chmod -R a+rX "$PREFIX/python"
	HOME=$WORK/home HERMES_HOME=$WORK/hermes-home hermes --version
	record HB_HERMES_REF "$HERMES_REF"
}

write_record() {
	STEP=record
	local os
	# shellcheck source=/dev/null
	os=$(. /etc/os-release && printf '%s' "${PRETTY_NAME:-unknown}" | tr -cd 'A-Za-z0-9 ._()/+-')
	{
		echo "# What provision/provision.sh installed into this image; read by hb doctor."
		echo "# HB_STEP_<STEP> is installed or skipped; the other keys are the pins used."
		printf 'HB_BASE_OS="%s"\n' "$os"
		printf '%s\n' "${RECORDS[@]}"
	} >"$RECORD"
	chmod 0644 "$RECORD"
	say "wrote $RECORD"
}

cleanup() {
	STEP=cleanup
	if command -v npm >/dev/null 2>&1; then
		npm cache clean --force >/dev/null 2>&1 || true
	fi
	rm -rf /root/.npm /root/.cache
}

check_inputs
run_step apt INSTALL_APT
step_base
run_step node INSTALL_NODE
run_step uv INSTALL_UV
run_step claude INSTALL_CLAUDE
run_step codex INSTALL_CODEX
run_step executor INSTALL_EXECUTOR
run_step hermes INSTALL_HERMES
write_record
cleanup
STEP=finished
say "provisioned"

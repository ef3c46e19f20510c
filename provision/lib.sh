# shellcheck shell=bash
# Helpers of provision.sh, kept apart so they can be tested on their own.
# Everything reports through fail(), which names the running step ($STEP).

STEP=${STEP:-setup}

fail() {
	printf 'provision: step %s: %s\n' "$STEP" "$*" >&2
	# Read by provision.sh's EXIT trap, so the failure is reported once.
	# shellcheck disable=SC2034
	PROVISION_FAILED=1
	exit 1
}

say() {
	printf 'provision: step %s: %s\n' "$STEP" "$*"
}

# enabled VAR: true when the switch VAR is on. Unset means on: the real build
# installs everything unless told otherwise.
enabled() {
	local v=${!1-1}
	case "$v" in
	1 | true | yes | on) return 0 ;;
	0 | false | no | off | '') return 1 ;;
	*) fail "$1 must be 0 or 1, not '$v'" ;;
	esac
}

# need NAME VALUE: the build argument NAME must be set for this step.
need() {
	[ -n "$2" ] || fail "$1 is required when this step is enabled"
}

# check_format NAME VALUE REGEX: build arguments end up in URLs and in
# versions.env, so they must look like what they claim to be.
check_format() {
	[ -z "$2" ] && return 0
	printf '%s' "$2" | grep -Eqx -- "$3" || fail "$1 '$2' is not valid"
}

# sha256_of FILE: hex SHA-256 of FILE.
sha256_of() {
	sha256sum "$1" | cut -d' ' -f1
}

# sri_sha512 FILE: the file's Subresource Integrity string, as npm's
# dist.integrity spells it ("sha512-" and the base64 digest).
sri_sha512() {
	local digest
	if command -v openssl >/dev/null 2>&1; then
		digest=$(openssl dgst -sha512 -binary "$1" | base64 -w0)
	else
		digest=$(node -e 'process.stdout.write(require("crypto").createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' "$1")
	fi
	printf 'sha512-%s' "$digest"
}

# verify_sha256 FILE WANT
verify_sha256() {
	local got
	got=$(sha256_of "$1")
	[ "$got" = "$2" ] || fail "checksum mismatch for $(basename "$1"): want sha256 $2, got $got"
}

# verify_integrity FILE WANT: WANT is an npm integrity string, sha512 only.
verify_integrity() {
	local got
	case "$2" in
	sha512-*) ;;
	*) fail "integrity '$2' for $(basename "$1") is not a sha512 integrity" ;;
	esac
	got=$(sri_sha512 "$1")
	[ "$got" = "$2" ] || fail "integrity mismatch for $(basename "$1"): want $2, got $got"
}

# fetch URL FILE: HTTPS only, fails on HTTP errors, a few retries.
fetch() {
	curl --proto '=https' --tlsv1.2 -fsSL --retry 3 --connect-timeout 20 -o "$2" "$1" ||
		fail "download failed: $1"
}

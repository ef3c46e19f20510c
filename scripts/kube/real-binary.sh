#!/bin/bash
# shellcheck disable=SC2154,SC2034
# real-binary.sh: for kube-router-bin's programs (sourced, not run).
#
# real_binary NAME: sets $real to the NAME on PATH after the directory
# $here (the caller's own, which PATH lists first for kube-router), or
# exits 127 saying there is none.
real_binary() {
	local d dirs
	real=''
	IFS=: read -ra dirs <<<"$PATH"
	for d in "${dirs[@]}"; do
		[ "$(cd "$d" 2>/dev/null && pwd)" != "$here" ] || continue
		if [ -x "$d/$1" ]; then
			real=$d/$1
			return 0
		fi
	done
	echo "$1: no $1 on PATH besides $here" >&2
	exit 127
}

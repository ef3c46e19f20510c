#!/bin/bash
# shellcheck disable=SC2154
# session.sh: the test cluster for one run of make test or make bench,
# sourced by scripts/test.sh and scripts/bench.sh. kube_session_start
# starts the cluster from its cache (built first if need be; a no-op when
# complete), exports BOXES_TEST_KUBECONFIG and BOXES_TEST_KUBECTL, and
# stops it when the script exits, also on failure. It needs root; without
# it the tests and benchmarks that need a cluster skip. A cluster already
# named by BOXES_TEST_KUBECONFIG, or already running when up.sh is called
# (someone else's: one per machine), is used as it is and left running.
#
# Callers set $out (their log directory) and $kube_who (the name their
# messages start with); a failure to start is added to their failed array.

kube_dir=''

kube_session_stop() {
	[ -n "$kube_dir" ] || return 0
	if grep -q '] kube-apiserver runs (pid' "$out/kube-up.log" 2>/dev/null; then
		echo "$kube_who: the test cluster was running before: left running" >&2
		kube_dir=''
		return 0
	fi
	rm -rf "$out/kube-logs"
	cp -r "$kube_dir/logs" "$out/kube-logs" 2>/dev/null || true
	if bash scripts/kube/down.sh >"$out/kube-down.log" 2>&1; then
		echo "$kube_who: test cluster stopped ($(grep -c 'LEFT:' "$out/kube-down.log") left; $out/kube-down.log)" >&2
	else
		echo "$kube_who: stopping the test cluster failed: see $out/kube-down.log" >&2
	fi
	kube_dir=''
}

kube_session_start() {
	if [ "$(id -u)" -ne 0 ] || [ -n "${BOXES_TEST_KUBECONFIG:-}" ]; then
		return 0
	fi
	local began step
	began=$(date +%s)
	echo "$kube_who: starting the test cluster (logs: $out/kube-*.log)" >&2
	trap kube_session_stop EXIT
	trap 'exit 130' INT TERM
	step=kube-build
	if bash scripts/kube/build.sh >"$out/kube-build.log" 2>&1 &&
		step=kube-up && bash scripts/kube/up.sh >"$out/kube-up.log" 2>&1; then
		BOXES_TEST_KUBECONFIG=$(sed -n 's/^KUBECONFIG=//p' "$out/kube-up.log" | tail -n 1)
		kube_dir=$(dirname "$(dirname "$BOXES_TEST_KUBECONFIG")")
		export BOXES_TEST_KUBECONFIG BOXES_TEST_KUBECTL=$kube_dir/bin/kubectl
		echo "$kube_who: test cluster up in $(($(date +%s) - began)) s" >&2
	else
		# down.sh removes what a half-started cluster left.
		kube_dir=${BOXES_KUBE_DIR:-/tmp/boxes-kube}
		failed+=("$step")
		echo "$kube_who: the test cluster did not start ($out/$step.log); what needs it will skip" >&2
		kube_session_stop
	fi
}

#!/bin/bash
# test.sh is make test's run of every test: the packages' tests, and the
# command line's real-engine tests (cmd/boxes/cli) in parts run at the same
# time against the one engine. Those tests spend most of their time waiting
# for containers (a third of two cores is busy while one runs), so two at a
# time take about two thirds of the time one after the other does.
#
# Each part is the same test binary with its own -test.run, and its own
# BOXES_TEST_SHARD, from which its tests name their fleets; tests that share
# box names are in one part. The last part runs every test the others do
# not. Output goes to bin/test/*.log; a part that fails is printed whole.
set -eu
set -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
GO=${GO:-go}
out=bin/test
mkdir -p "$out"
rm -f "$out"/*.log

# The parts, by the tests they run (anchored names, | between them). Two
# at a time: on two cores, four at once loaded the machine past what its
# engines answer in time (an ssh engine took over 10 s to answer).
parts=(
	# The shared it-alpha … it-delta boxes, one test after the other, and
	# the moves of it-h9-mv and its kin.
	'TestIntegrationCrashSafety|TestIntegrationPlanApply|TestIntegrationHostErrors|TestIntegrationHostsPlanApply|TestIntegrationRemoteReadiness|TestIntegrationMCP|TestIntegrationMoveKilled|TestIntegrationMoveKilledStreamingImage|TestIntegrationMove|TestIntegrationMovePutBack|TestIntegrationOpenThroughForward'
)
all=$(IFS='|'; echo "${parts[*]}")

started=$(date +%s)

# The test cluster (scripts/kube/): one node of Kubernetes for the tests
# that need it (internal/testkube), started from its cache (built first if
# need be; a no-op when complete) and stopped at the end, also on failure.
# It needs root; without it those tests skip. A cluster already named by
# BOXES_TEST_KUBECONFIG, or already running when up.sh is called (someone
# else's: one per machine), is used as it is and left running.
failed=()
kube_dir=''
kube_down() {
	[ -n "$kube_dir" ] || return 0
	if grep -q '] kube-apiserver runs (pid' "$out/kube-up.log" 2>/dev/null; then
		echo "test: the test cluster was running before: left running" >&2
		kube_dir=''
		return 0
	fi
	rm -rf "$out/kube-logs"
	cp -r "$kube_dir/logs" "$out/kube-logs" 2>/dev/null || true
	if bash scripts/kube/down.sh >"$out/kube-down.log" 2>&1; then
		echo "test: test cluster stopped ($(grep -c 'LEFT:' "$out/kube-down.log") left; $out/kube-down.log)" >&2
	else
		echo "test: stopping the test cluster failed: see $out/kube-down.log" >&2
	fi
	kube_dir=''
}
if [ "$(id -u)" -eq 0 ] && [ -z "${BOXES_TEST_KUBECONFIG:-}" ]; then
	echo "test: starting the test cluster (logs: $out/kube-*.log)" >&2
	trap kube_down EXIT
	trap 'exit 130' INT TERM
	kube_step=kube-build
	if bash scripts/kube/build.sh >"$out/kube-build.log" 2>&1 &&
		kube_step=kube-up && bash scripts/kube/up.sh >"$out/kube-up.log" 2>&1; then
		BOXES_TEST_KUBECONFIG=$(sed -n 's/^KUBECONFIG=//p' "$out/kube-up.log" | tail -n 1)
		kube_dir=$(dirname "$(dirname "$BOXES_TEST_KUBECONFIG")")
		export BOXES_TEST_KUBECONFIG BOXES_TEST_KUBECTL=$kube_dir/bin/kubectl
		echo "test: test cluster up in $(($(date +%s) - started)) s" >&2
	else
		# down.sh removes what a half-started cluster left.
		kube_dir=${BOXES_KUBE_DIR:-/tmp/boxes-kube}
		failed+=("$kube_step")
		echo "test: the test cluster did not start ($out/$kube_step.log); its tests will skip" >&2
		kube_down
	fi
fi

echo "test: building the command line's tests" >&2
$GO test -c -o "$out/cli.test" ./cmd/boxes/cli

pids=() names=()
run_part() { # name, then the test binary's flags
	local name=$1
	shift
	(cd cmd/boxes/cli && BOXES_TEST_SHARD=${name#cli-} "../../../$out/cli.test" -test.v -test.count=1 -test.timeout 40m "$@") >"$out/$name.log" 2>&1 &
	pids+=($!) names+=("$name")
}
for i in "${!parts[@]}"; do
	run_part "cli-$((i + 1))" -test.run "^(${parts[$i]})\$"
done
run_part "cli-$((${#parts[@]} + 1))" -test.skip "^(${all})\$"

mapfile -t pkgs < <($GO list ./... | grep -v '/cmd/boxes/cli$')
$GO test -p 1 -count=1 -timeout 40m "${pkgs[@]}" >"$out/packages.log" 2>&1 &
pids+=($!) names+=(packages)

echo "test: ${#names[@]} parts running: ${names[*]} (logs in $out/)" >&2
for i in "${!pids[@]}"; do
	if wait "${pids[$i]}"; then
		echo "test: ${names[$i]} passed ($(($(date +%s) - started)) s in)" >&2
	else
		failed+=("${names[$i]}")
		echo "test: ${names[$i]} FAILED ($(($(date +%s) - started)) s in)" >&2
	fi
done
grep -h -E '^(ok|FAIL|---)' "$out/packages.log" || true
# The command line's slowest tests, from the parts' -test.v lines.
echo "test: the command line's slowest tests:" >&2
grep -h -E '^--- (PASS|FAIL): ' "$out"/cli-*.log | sed -E 's/^--- [A-Z]+: ([^ ]+) \(([0-9.]+)s\)$/\2 \1/' |
	sort -rn | head -15 | awk '{ printf "  %7.1f s  %s\n", $1, $2 }' >&2 || true
kube_down
for name in "${failed[@]}"; do
	echo "==== $out/$name.log"
	cat "$out/$name.log"
done
echo "test: $(($(date +%s) - started)) s in all" >&2
[ ${#failed[@]} -eq 0 ]

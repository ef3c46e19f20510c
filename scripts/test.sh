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
# at a time, beside the packages' tests at a lower priority: on two cores,
# more at once loaded the machine past what its engines answer in time (an
# ssh engine took over 10 s to answer; in-box checks of 2 s timed out).
parts=(
	# The shared it-alpha … it-delta boxes, one test after the other, and
	# the moves of it-h9-mv and its kin; then, so that the two parts take
	# about as long, three long trials on boxes of their own (it-h10-*,
	# it-f*, it-k-*).
	'TestIntegrationCrashSafety|TestIntegrationPlanApply|TestIntegrationHostErrors|TestIntegrationHostsPlanApply|TestIntegrationRemoteReadiness|TestIntegrationMCP|TestIntegrationMoveKilled|TestIntegrationMoveKilledStreamingImage|TestIntegrationMove|TestIntegrationMovePutBack|TestIntegrationOpenThroughForward|TestIntegrationArchiveCrashes|TestIntegrationForks|TestIntegrationRandomKills'
)
all=$(IFS='|'; echo "${parts[*]}")
# Tests that change what every box on the engine sees (a new address of
# the engine's machine, which every gate must then close): run alone, once
# the parts are done, so that no other test's plan meets the change.
alone='TestIntegrationMachineAddress'
# The tests of the test cluster run after the parts, one after the other:
# the packages' (./kube, ./internal/testkube), then the command line's. The
# cluster's NetworkPolicy enforcer keeps off Docker's iptables rules
# (scripts/kube/kube-router-bin), and they ran beside the parts in a whole
# run that passed, but the machine was then busy 89 % of the time and the
# next run's decompression-bomb test, niced among the packages, took 23 s
# where it allows 20: they run once the parts are done.
kube_cli='TestIntegrationKube[A-Za-z]*'
kube_pkgs=(./kube ./internal/testkube)

started=$(date +%s)
# The machine's processor time, all of it (every process, the engines'
# included), from /proc/stat's first line: clock ticks busy, idle (with
# waiting for the disk) and stolen (taken by the hypervisor from this
# machine's virtual processors).
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6, $9; exit }' /proc/stat; }
read -r busy0 idle0 steal0 < <(cpu_ticks)

# The test cluster, for the tests that need it (internal/testkube): started
# once the Docker parts are done (idle, it would spend processor time they
# need), stopped when its tests are.
failed=()
kube_who="test"
# shellcheck source=scripts/kube/session.sh
. scripts/kube/session.sh

# Bridges whose containers iptables keeps apart (scripts/firewall-watch.sh),
# noted while the tests run: printed at the end when there were any. The
# watch stops with the script, however it ends.
watch_pid=''
stop_watch() {
	[ -n "$watch_pid" ] || return 0
	kill "$watch_pid" 2>/dev/null || true
	wait "$watch_pid" 2>/dev/null || true
	watch_pid=''
	if [ -s "$out/firewall.log" ]; then
		echo "test: Docker bridges whose containers could not reach each other for a while ($out/firewall.log):" >&2
		cat "$out/firewall.log" >&2
	fi
}
if [ "$(id -u)" -eq 0 ] && command -v iptables >/dev/null; then
	: >"$out/firewall.log"
	bash scripts/firewall-watch.sh "$out/firewall.log" &
	watch_pid=$!
	trap 'stop_watch; kube_session_stop' EXIT
fi

echo "test: building the command line's tests, and boxes for those that run it" >&2
$GO test -c -o "$out/cli.test" ./cmd/boxes/cli
$GO build -o "$out/boxes" ./cmd/boxes
export BOXES_TEST_BOXES=$root/$out/boxes

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
run_part "cli-$((${#parts[@]} + 1))" -test.skip "^(${all}|${alone}|${kube_cli})\$"

mapfile -t pkgs < <($GO list ./... | grep -v -e '/cmd/boxes/cli$' -e '/kube$' -e '/internal/testkube$')
nice -n 10 "$GO" test -p 1 -count=1 -timeout 40m "${pkgs[@]}" >"$out/packages.log" 2>&1 &
pids+=($!) names+=(packages)

wait_parts() {
	for i in "${!pids[@]}"; do
		if wait "${pids[$i]}"; then
			echo "test: ${names[$i]} passed ($(($(date +%s) - started)) s in)" >&2
		else
			failed+=("${names[$i]}")
			echo "test: ${names[$i]} FAILED ($(($(date +%s) - started)) s in)" >&2
		fi
	done
	pids=() names=()
}
echo "test: ${#names[@]} parts running: ${names[*]} (logs in $out/)" >&2
wait_parts
# The cluster's: its packages, then (when they passed or not) the command
# line's tests of it, in one stream.
kube_session_start
# (kube_session_start sets its own EXIT trap: the watch's is put back.)
[ -z "$watch_pid" ] || trap 'stop_watch; kube_session_stop' EXIT
echo "test: then the test cluster's tests" >&2
(
	rc=0
	"$GO" test -count=1 -timeout 20m "${kube_pkgs[@]}" >"$out/kube-packages.log" 2>&1 || rc=$?
	(cd cmd/boxes/cli && BOXES_TEST_SHARD=kube "../../../$out/cli.test" -test.v -test.count=1 -test.timeout 40m -test.run "^(${kube_cli})\$") >"$out/cli-kube.log" 2>&1 || rc=$?
	exit "$rc"
) &
pids+=($!) names+=(cluster)
wait_parts
kube_session_stop
echo "test: then alone: ${alone}" >&2
run_part cli-alone -test.run "^(${alone})\$"
wait_parts
grep -h -E '^(ok|FAIL|---)' "$out/packages.log" "$out/kube-packages.log" || true
# The command line's slowest tests, from the parts' -test.v lines.
echo "test: the command line's slowest tests:" >&2
grep -h -E '^--- (PASS|FAIL): ' "$out"/cli-*.log | sed -E 's/^--- [A-Z]+: ([^ ]+) \(([0-9.]+)s\)$/\2 \1/' |
	sort -rn | head -15 | awk '{ printf "  %7.1f s  %s\n", $1, $2 }' >&2 || true
kube_session_stop
stop_watch
for name in "${failed[@]}"; do
	logs=("$out/$name.log")
	[ "$name" != cluster ] || logs=("$out/kube-packages.log" "$out/cli-kube.log")
	for log in "${logs[@]}"; do
		echo "==== $log"
		cat "$log"
	done
done
# How busy the machine's processors were meanwhile: near 100 %, the suite
# waits on nothing but them, and its time on this machine is their time.
read -r busy1 idle1 steal1 < <(cpu_ticks)
awk -v b=$((busy1 - busy0)) -v i=$((idle1 - idle0)) -v st=$((steal1 - steal0)) -v n="$(nproc)" -v hz="$(getconf CLK_TCK)" 'BEGIN {
	t = b + i + st
	if (t > 0) printf "test: the processors were busy %.0f %% of the time, idle %.0f %%, taken by the hypervisor %.0f %% (%.0f s of processor time on %d cores)\n", 100 * b / t, 100 * i / t, 100 * st / t, b / hz, n }' >&2
echo "test: $(($(date +%s) - started)) s in all" >&2
[ ${#failed[@]} -eq 0 ]

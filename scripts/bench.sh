#!/bin/bash
# bench.sh is `make bench`: every benchmark once (-benchtime 1x), one
# package at a time so that no two measure at once, then ONE markdown table
# of the rows they report (internal/benchtable): each figure, its baseline
# measured in the same run, and their ratio (figure / baseline), under a line
# naming the machine. The table is also written to bin/bench.md, the whole
# go test output to bin/bench.log.
#
# Needs the test image (make test-image) and the Docker engine; rows that
# need more (docker compose, root for extra engines) are left out, and the
# benchmarks that skipped are listed under the table.
set -eu
set -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p bin
log=bin/bench.log
table=bin/bench.md
GO=${GO:-go}
# BENCH picks benchmarks by go test's -bench pattern (make bench BENCH=Archive).
BENCH=${BENCH:-.}

# The packages with benchmarks, the CLI's (plans, applies, hosts) first.
mapfile -t pkgs < <(git ls-files '*_test.go' | xargs grep -l '^func Benchmark' | xargs -n1 dirname | sort -u |
	awk '{ p = ($0 == ".") ? "." : "./" $0; if (p == "./cmd/boxes/cli") first = p; else rest = rest p "\n" }
	     END { if (first) print first; printf "%s", rest }')
if [ ${#pkgs[@]} -eq 0 ]; then
	echo "bench: no benchmarks found" >&2
	exit 1
fi

cores=$(nproc)
mem=$(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
engine=$(docker version --format 'Docker Engine {{.Server.Version}} (API {{.Server.APIVersion}})' 2>/dev/null || echo 'no Docker engine')
driver=$(docker info --format '{{.Driver}}' 2>/dev/null || true)
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
when=$(date -u '+%Y-%m-%d %H:%M UTC')
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

# The test cluster, for the benchmarks of Kubernetes hosts.
out=bin kube_who="bench"
failed=() # a cluster that does not start leaves its benchmarks skipped
# shellcheck source=scripts/kube/session.sh
. scripts/kube/session.sh
kube_session_start

echo "bench: ${pkgs[*]} (several minutes; the whole output goes to $log)" >&2
set +e
$GO test -p 1 -count=1 -run '^$' -bench "$BENCH" -benchtime 1x -timeout 60m "${pkgs[@]}" 2>&1 | tee "$log" |
	grep -E --line-buffered '^(BENCHROW|\s*--- (FAIL|SKIP)|FAIL|ok )' >&2
# grep finding nothing is not a failure; go test's own exit status is.
status=${PIPESTATUS[0]}
set -e

{
	echo "Machine: $cores cores ($cpu), $mem memory, $engine${driver:+ on $driver}; $when, commit $commit."
	echo
	echo "| figure | value | baseline | baseline value | ratio |"
	echo "| --- | ---: | --- | ---: | ---: |"
	awk -F'\t' '
	function num(v, unit) {
		if (v == int(v)) s = sprintf("%d", v)
		else if (v >= 100) s = sprintf("%.0f", v)
		else if (v >= 10) s = sprintf("%.1f", v)
		else if (v >= 1) s = sprintf("%.2f", v)
		else s = sprintf("%.3g", v)
		return s " " unit
	}
	$1 == "BENCHROW" {
		base = ($5 == "") ? "" : num($6, $4)
		ratio = ($7 + 0 == 0) ? "" : sprintf("%.2f×", $7)
		printf "| %s | %s | %s | %s | %s |\n", $2, num($3, $4), $5, base, ratio
	}' "$log"
	skipped=$(awk '
		want { sub(/^ +/, ""); sub(/^[a-z_]+\.go:[0-9]+: /, ""); printf "%s%s (%s)", sep, name, $0; sep = "; "; want = 0; next }
		/^ *--- SKIP: / { name = $3; want = 1 }' "$log")
	if [ -n "$skipped" ]; then
		echo
		echo "Skipped: $skipped"
	fi
} >"$table"

if [ "$(grep -c '^BENCHROW' "$log" || true)" -eq 0 ]; then
	echo "bench: no rows; see $log" >&2
	exit 1
fi
echo >&2
cat "$table"
if [ "$status" -ne 0 ]; then
	echo "bench: go test failed (exit $status); the table has the rows measured before; see $log" >&2
	exit "$status"
fi

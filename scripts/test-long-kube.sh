#!/usr/bin/env bash
# test-long-kube.sh: the test cluster's longer trial, for make test-long:
# BOXES_KUBE_KILL_TRIALS (15 unless set) random kills of apply while it
# makes, replaces and deletes boxes on the cluster, which this script starts
# for the run and stops after (scripts/kube/session.sh; skipped, saying so,
# without root).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
out=bin/test-long
mkdir -p "$out"
failed=()
kube_who=test-long
if [ "$(id -u)" -ne 0 ] && [ -z "${BOXES_TEST_KUBECONFIG:-}" ]; then
	echo "test-long: the cluster's kills skipped: the test cluster needs root" >&2
	exit 0
fi
# shellcheck source=scripts/kube/session.sh
. scripts/kube/session.sh
kube_session_start
if [ -z "${BOXES_TEST_KUBECONFIG:-}" ]; then
	echo "test-long: the test cluster did not start (${failed[*]:-}, logs in $out); the cluster's kills did not run" >&2
	exit 1
fi
BOXES_TEST_SHARD=kube BOXES_KUBE_KILL_TRIALS=${BOXES_KUBE_KILL_TRIALS:-15} \
	"$GO" test -count=1 -timeout 60m -run '^TestIntegrationKubeApplyKilled$' -v ./cmd/boxes/cli/

#!/bin/bash
# recycle-volumes.sh keeps the test cluster's static volumes reusable; up.sh
# runs it in the background (run/volume-recycler.pid), down.sh stops it.
#
# A claim of the StorageClass boxes-local binds one of up.sh's hostPath
# volumes; when the claim is deleted the volume is Released (Retain), and
# would stay so. This watches the volumes and, for each one Released,
# empties its directory and makes it Available again, so that a cluster
# with a few dozen volumes serves any number of claims over its life.
set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/kube/common.sh
. "$here/common.sh"

D=$KUBE_DIR
kubectl() { "$D/bin/kubectl" --kubeconfig "$D/etc/admin.kubeconfig" "$@"; }
# up.sh starts this in a process group of its own: on SIGTERM the watch
# goes too. (The watch runs in the background and is waited for: bash
# would run the trap only once a pipeline in the foreground ended.)
trap 'trap - TERM INT; kill -TERM -- -$$ 2>/dev/null; exit 0' TERM INT

while :; do
	kubectl get pv -l boxes.test/volume=true --watch --output-watch-events=false \
		-o 'jsonpath={.metadata.name}|{.status.phase}|{.spec.claimRef.uid}|{.spec.hostPath.path}{"\n"}' 2>/dev/null |
		while IFS='|' read -r name phase claim path; do
			# (the update that takes the claim away is Released too: skipped)
			if [ "$phase" != Released ] || [ -z "$claim" ]; then continue; fi
			case $path in "$D/volumes/"?*) ;; *) continue ;; esac
			rm -rf "$path" &&
				kubectl patch pv "$name" --type json -p '[{"op":"remove","path":"/spec/claimRef"}]' >/dev/null &&
				echo "recycled $name"
		done &
	wait $!
	sleep 1
done

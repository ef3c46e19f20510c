#!/bin/bash
# down.sh stops the test cluster up.sh started and removes what it made
# (make kube-down): its processes (by the PIDs in run/, and whatever still
# runs in its cgroups), its pods' mounts, links and iptables rules,
# kube-router's chains and ipsets, kube-proxy's nftables tables, its cgroups,
# containerd's state and the work directory. Nothing else: not Docker, its
# containerd or its chains. Safe to run when nothing runs. Prints what is
# left, if anything.
set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/kube/common.sh
. "$here/common.sh"

[ "$(id -u)" -eq 0 ] || kube_die "down: needs root"
D=$KUBE_DIR
E=$D/etc R=$D/run
t0=$(date +%s%N)
say() { kube_log "down: [$((($(date +%s%N) - t0) / 1000000)) ms] $*"; }
kubectl() { "$D/bin/kubectl" --kubeconfig "$E/admin.kubeconfig" --request-timeout 10s "$@"; }
ctr_() { ctr -a "$KUBE_CTRD_SOCK" -n k8s.io "$@"; }

running() {
	local pid
	pid=$(cat "$R/$1.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}
# stop SECONDS NAME...: SIGTERM to the processes run/NAME.pid name, all at
# once, then SIGKILL to those still there after SECONDS. Nothing they hold
# needs a graceful end: the data goes too.
stop() {
	local grace=$1 name pid i alive
	shift
	local -A pids=()
	for name in "$@"; do
		if running "$name"; then
			pids[$name]=$(cat "$R/$name.pid")
			kill -TERM "${pids[$name]}" 2>/dev/null
		fi
		rm -f "$R/$name.pid"
	done
	for ((i = 0; i < grace * 10; i++)); do
		alive=0
		for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		[ "$alive" = 1 ] || break
		sleep 0.1
	done
	for name in "${!pids[@]}"; do
		pid=${pids[$name]}
		if kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null
			say "killed $name (pid $pid)"
		else
			say "stopped $name (pid $pid)"
		fi
	done
}

# --- the controllers that would make pods again, first; then the pods,
# through the kubelet, so that CNI releases their addresses and rules ---
stop 5 agent-sandbox-controller kube-controller-manager volume-recycler
if running kube-apiserver && running kubelet; then
	kubectl delete pods --all --all-namespaces --grace-period 1 --wait=false >/dev/null 2>&1
	for ((i = 0; i < 60; i++)); do
		[ -z "$(ctr_ tasks ls -q 2>/dev/null)" ] && break
		sleep 0.5
	done
	say "pods deleted"
fi
stop 5 kube-proxy kube-router kubelet kube-scheduler kube-apiserver
stop 5 etcd

# --- whatever is left in the cluster's containerd, then containerd, then
# any process still in the kubelet's cgroups (a shim's container after a
# crash) and the shims of this containerd (their command line names its
# socket), each by PID ---
if [ -S "$KUBE_CTRD_SOCK" ]; then
	for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
	sleep 0.5
	for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks rm -f "$t" >/dev/null 2>&1; done
	for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers rm "$c" >/dev/null 2>&1; done
fi
stop 10 containerd
for pid in $(find /sys/fs/cgroup/*/"$KUBE_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u); do
	kill -KILL "$pid" 2>/dev/null && say "killed pid $pid left in the pods' cgroups"
done
shims() {
	local pid
	for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $KUBE_CTRD_SOCK( |\$)"); do echo "$pid"; done
}
for pid in $(shims); do
	kill -KILL "$pid" 2>/dev/null && say "killed shim pid $pid"
done

# --- mounts (volumes, root filesystems, network namespaces), deepest first ---
for m in $(findmnt -rn -o TARGET | grep -E "^($D|$KUBE_CTRD_STATE)(/|\$)" | sort -r); do
	umount -l "$m" 2>/dev/null
done

# --- network: the pods' veths and bridge, the node's bridge, CNI's rules
# for the pods' addresses (the firewall plugin's, portmap's) and, when no
# one had CNI chains before up.sh, the chains themselves ---
for v in $(ip -o link show master "$KUBE_POD_LINK" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
	ip link del "$v" 2>/dev/null
done
ip link del "$KUBE_POD_LINK" 2>/dev/null
ip link del "$KUBE_NODE_LINK" 2>/dev/null
pod_prefix=${KUBE_POD_CIDR%.*}.
# unrule TABLE PATTERN: deletes the rules of TABLE (iptables -S form) that
# match the extended regular expression PATTERN.
unrule() {
	local table=$1 pattern=$2 rule
	iptables -t "$table" -S 2>/dev/null | grep -E -- "$pattern" | while read -r rule; do
		eval "iptables -t $table ${rule/-A /-D }" 2>/dev/null
	done
}
# unchain TABLE PATTERN: deletes the chains whose names match PATTERN and
# every rule that jumps to them.
unchain() {
	local table=$1 pattern=$2 chains c
	chains=$(iptables -t "$table" -S 2>/dev/null | sed -n 's/^-N //p' | grep -E -- "^($pattern)") || true
	[ -n "$chains" ] || return 0
	unrule "$table" "^-A .* -j ($pattern)"
	for c in $chains; do iptables -t "$table" -F "$c" 2>/dev/null; done
	for c in $chains; do iptables -t "$table" -X "$c" 2>/dev/null; done
}
for table in filter nat; do
	# portmap's per-pod chains (CNI-DN-*) hold the net's name in a comment
	for c in $(iptables -t "$table" -S 2>/dev/null | grep -F "\"$KUBE_CNI_NET\"" | grep -oE -- '-j CNI-DN-[0-9a-f]+' | cut -c4- | sort -u); do
		unchain "$table" "$c"
	done
	unrule "$table" "^-A CNI-.*(${pod_prefix//./\\.}|\"$KUBE_CNI_NET\")"
done
if [ "$(cat "$R/cni-chains-before" 2>/dev/null)" = 0 ]; then
	for table in filter nat; do unchain "$table" 'CNI-'; done
fi

# --- kube-router leaves its chains and ipsets behind when stopped (its own
# cleanup would also flush routing and IPVS state it never made here) ---
if [ -e "$R/kube-router.used" ]; then
	for table in filter nat mangle; do unchain "$table" 'KUBE-ROUTER-|KUBE-NWPLCY-|KUBE-POD-FW-'; done
	for set in $(ipset list -n 2>/dev/null | grep -E '^(inet6:)?KUBE-(SRC|DST)-'); do
		ipset destroy "$set" 2>/dev/null
	done
	rm -f "$R/kube-router.used"
fi

# --- kube-proxy leaves its nftables tables when stopped ---
if [ -e "$R/kube-proxy.used" ]; then
	for family in ip ip6; do nft delete table "$family" kube-proxy 2>/dev/null; done
	rm -f "$R/kube-proxy.used"
fi

# --- the kubelet's cgroups, deepest first ---
for h in /sys/fs/cgroup/*/"$KUBE_CGROUP"; do
	[ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} + 2>/dev/null
done

# --- state and data ---
rm -rf "$KUBE_CTRD_STATE" "$D"
say "removed $D"

# --- what is left ---
left=0
report() {
	left=1
	echo "kube: down: LEFT: $*"
}
# (a process whose command line merely names the cache, as a build of it
# does, is not the cluster's: its executable must be there)
for pid in $(shims) $(pgrep -f "$D/|$KUBE_CTRD_STATE|$KUBE_CACHE/"); do
	cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null)
	case "$exe $cmdline" in
	"$KUBE_CACHE/"* | *"$D/"* | *"$KUBE_CTRD_STATE"*) report "process $pid: $cmdline" ;;
	esac
done
for l in "$KUBE_POD_LINK" "$KUBE_NODE_LINK"; do
	ip link show "$l" >/dev/null 2>&1 && report "link $l"
done
for table in filter nat mangle; do
	while read -r rule; do [ -z "$rule" ] || report "iptables -t $table: $rule"; done < <(
		iptables -t "$table" -S 2>/dev/null | grep -E "${pod_prefix//./\\.}|\"$KUBE_CNI_NET\"|KUBE-ROUTER-|KUBE-NWPLCY-|KUBE-POD-FW-"
	)
done
for family in ip ip6; do nft list table "$family" kube-proxy >/dev/null 2>&1 && report "nftables table $family kube-proxy"; done
while read -r set; do [ -z "$set" ] || report "ipset $set"; done < <(ipset list -n 2>/dev/null | grep -E '^(inet6:)?KUBE-(SRC|DST)-')
while read -r m; do [ -z "$m" ] || report "mount $m"; done < <(findmnt -rn -o TARGET | grep -E "^($D|$KUBE_CTRD_STATE)(/|\$)")
for h in /sys/fs/cgroup/*/"$KUBE_CGROUP"; do [ -d "$h" ] && report "cgroup $h"; done
for d in "$D" "$KUBE_CTRD_STATE"; do [ -e "$d" ] && report "$d"; done
[ "$left" = 1 ] || say "nothing left"

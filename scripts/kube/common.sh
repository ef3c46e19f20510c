#!/bin/bash
# common.sh: what build.sh, up.sh and down.sh share (sourced, not run).
#
# The test cluster is one node of Kubernetes run as host processes: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler and a kubelet on a
# containerd of its own (never Docker's), with the agent-sandbox controller
# and kube-router (NetworkPolicy enforcement only) outside the cluster; the
# Services' addresses are routed by kube-proxy in nftables mode.
# build.sh fills a cache kept between runs; up.sh starts the cluster from it
# in a work directory; down.sh removes all of it again.
# shellcheck shell=bash disable=SC2034

readonly KUBE_VERSION=v1.34.2
readonly CNI_VERSION=v1.10.0
readonly SANDBOX_VERSION=v1.0.1
# kube-router enforces the cluster's NetworkPolicies in tests and nothing
# else: it is built from its own module, never a dependency of boxes. Its
# v2.1.0 has reported security flaws; it only ever sees this test cluster.
readonly KUBE_ROUTER_VERSION=v2.1.0

# The cache: binaries, CNI plugins, CRDs and image tars, by Kubernetes version.
KUBE_CACHE=${BOXES_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/boxes-kube}/$KUBE_VERSION
# The work directory: certificates, configuration, logs, state, data.
KUBE_DIR=${BOXES_KUBE_DIR:-/tmp/boxes-kube}

# Names and addresses, all of them the cluster's own so that it can run
# beside other clusters of the same kind: a bridge without ports carries the
# node's address (kubelet refuses a loopback one), the pods are on a second
# bridge, and the Services' addresses are kube-proxy's, in nftables mode (a
# table of its own: no chain of Docker's or iptables' is touched).
readonly KUBE_NODE=boxes-kube-node
readonly KUBE_NODE_LINK=bxknode0
readonly KUBE_NODE_IP=10.247.0.1
readonly KUBE_POD_LINK=bxkpods0
readonly KUBE_POD_CIDR=10.247.1.0/24
readonly KUBE_SVC_CIDR=10.247.16.0/20
readonly KUBE_SVC_FIRST=10.247.16.1
readonly KUBE_API_PORT=6443
readonly KUBE_ETCD_CLIENT=127.0.0.1:23791
readonly KUBE_ETCD_PEER=127.0.0.1:23792
readonly KUBE_PROXY_HEALTH_PORT=23793
readonly KUBE_PROXY_METRICS_PORT=23794
readonly KUBE_CNI_NET=boxes-kube
# The cluster's containerd keeps its state and sockets here (not under
# KUBE_DIR: unix socket paths are short).
readonly KUBE_CTRD_STATE=/run/boxes-kube-containerd
readonly KUBE_CTRD_SOCK=$KUBE_CTRD_STATE/containerd.sock
# The kubelet's pods' cgroups are under this parent, in every hierarchy.
readonly KUBE_CGROUP=boxes-kube
# The pause image, made by build.sh from internal/testkube/pause.
readonly KUBE_PAUSE_IMAGE=boxes.test/kube-pause:1

# The binaries the cluster runs, from the cache (kubectl may be the host's).
readonly KUBE_CP_BINS="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy"
readonly KUBE_EXTRA_BINS="agent-sandbox-controller kube-router"
readonly KUBE_CNI_PLUGINS="main/bridge ipam/host-local main/loopback meta/portmap meta/firewall"
# The Debian packages up.sh needs (build.sh installs the missing ones).
readonly KUBE_PACKAGES="containerd runc etcd-server iptables ipset nftables iproute2 openssl curl"

kube_log() { echo "kube: $*"; }
kube_die() {
	echo "kube: $*" >&2
	exit 1
}

# kube_system_kubectl_ok: the host's kubectl is supported with this
# cluster: within one minor version of the apiserver.
kube_system_kubectl_ok() {
	local out minor
	[ -x /usr/bin/kubectl ] || return 1
	out=$(/usr/bin/kubectl version --client -o json 2>/dev/null) || return 1
	minor=$(sed -n 's/^ *"minor": "\([0-9]*\).*/\1/p' <<<"$out" | head -n 1)
	local want=${KUBE_VERSION#v1.}
	want=${want%%.*}
	[ -n "$minor" ] && [ "$minor" -ge $((want - 1)) ] && [ "$minor" -le $((want + 1)) ]
}

# kube_kubectl: the kubectl to use, the cache's when build.sh made one.
kube_kubectl() {
	if [ -x "$KUBE_CACHE/bin/kubectl" ]; then
		echo "$KUBE_CACHE/bin/kubectl"
	else
		echo /usr/bin/kubectl
	fi
}

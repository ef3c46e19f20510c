#!/bin/bash
# up.sh starts the test cluster from build.sh's cache (make kube-up): one
# node of Kubernetes as host processes, in BOXES_KUBE_DIR (default
# /tmp/boxes-kube). In order:
#
#   certificates and kubeconfigs (openssl), kept between runs
#   the node's address on a bridge without ports, the pods' CNI network
#   a containerd of the cluster's own (never Docker's), with the pause image
#     and the Docker images to import (the test image, and any named as
#     arguments: up.sh [IMAGE...]) loaded into it
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet
#   a WaitForFirstConsumer StorageClass with static hostPath volumes, made
#     Available again when their claims are deleted (recycle-volumes.sh)
#   agent-sandbox's CRDs and its controller, outside the cluster
#   kube-router, outside the cluster, enforcing NetworkPolicies only
#   kube-proxy in nftables mode, routing the Services' addresses
#
# Each process is started detached with its PID in run/NAME.pid; whatever
# already runs is left alone, so a second up.sh only checks (and imports
# images that changed). Prints the admin kubeconfig's path last, on a line of
# its own as KUBECONFIG=PATH. down.sh stops and removes all of it.
# Needs root and build.sh's cache. BOXES_KUBE_UP_TIMEOUT: seconds each wait
# may take (default 120).
set -eu
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/kube/common.sh
. "$here/common.sh"

# The test image of scripts/test-image.sh, imported when Docker has it.
readonly TEST_IMAGE=hermes-box-lite:test
# Static volumes of the StorageClass: how many claims the cluster holds at once.
readonly VOLUMES=32
timeout=${BOXES_KUBE_UP_TIMEOUT:-120}

[ "$(id -u)" -eq 0 ] || kube_die "up: needs root (kubelet, network, mounts)"
for b in $KUBE_CP_BINS $KUBE_EXTRA_BINS; do
	[ -x "$KUBE_CACHE/bin/$b" ] || kube_die "up: $KUBE_CACHE/bin/$b is missing: run scripts/kube/build.sh (make kube-build)"
done
for p in ${KUBE_CNI_PLUGINS}; do
	[ -x "$KUBE_CACHE/cni/${p##*/}" ] || kube_die "up: CNI plugin ${p##*/} is missing: run scripts/kube/build.sh"
done
[ -s "$KUBE_CACHE/images/pause.tar" ] || kube_die "up: the pause image is missing: run scripts/kube/build.sh"
for c in etcd containerd ctr runc ipset iptables nft openssl curl ip; do
	command -v "$c" >/dev/null || kube_die "up: $c is not installed: run scripts/kube/build.sh"
done

D=$KUBE_DIR
E=$D/etc P=$D/pki R=$D/run L=$D/logs
mkdir -p "$E" "$P" "$R" "$L" "$D/bin" "$D/cni/net.d" "$D/cni/ipam" "$D/volumes" "$KUBE_CTRD_STATE"
ln -sfn "$(kube_kubectl)" "$D/bin/kubectl"
kubectl() { "$D/bin/kubectl" --kubeconfig "$E/admin.kubeconfig" "$@"; }
export PATH=$KUBE_CACHE/bin:$PATH

t0=$(date +%s%N)
say() { kube_log "up: [$((($(date +%s%N) - t0) / 1000000)) ms] $*"; }

# running NAME: the process run/NAME.pid names is alive.
running() {
	local pid
	pid=$(cat "$R/$1.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}
# start NAME COMMAND...: runs COMMAND detached in a session of its own,
# output to logs/NAME.log, unless it already runs.
start() {
	local name=$1
	shift
	if running "$name"; then
		say "$name runs (pid $(cat "$R/$name.pid"))"
		return 0
	fi
	setsid "$@" >>"$L/$name.log" 2>&1 </dev/null &
	echo $! >"$R/$name.pid"
	say "started $name (pid $!)"
}
# applied FILE...: kubectl apply FILEs, unless these very files were
# applied to this cluster already (a second up.sh stays quick).
applied() {
	local sum
	sum=$(cat "$@" | sha256sum | cut -d' ' -f1)
	[ "$(cat "$R/applied.$sum" 2>/dev/null)" = applied ] && return 0
	kubectl apply --server-side --force-conflicts "${@/#/--filename=}" >/dev/null
	echo applied >"$R/applied.$sum"
}
# await WHAT COMMAND...: until COMMAND succeeds, or fails after $timeout s.
await() {
	local what=$1 end=$(($(date +%s) + timeout))
	shift
	until "$@" >/dev/null 2>&1; do
		if [ "$(date +%s)" -ge "$end" ]; then
			kube_die "up: $what not ready after $timeout s (logs: $L/)"
		fi
		sleep 0.25
	done
	say "$what ready"
}
# put FILE: FILE gets standard input unless it holds that already (a
# running component is not disturbed by a rewrite of its configuration).
put() {
	local new
	new=$(mktemp "$1.XXXXXX")
	cat >"$new"
	if cmp -s "$new" "$1"; then rm -f "$new"; else mv -f "$new" "$1"; fi
}

# --- certificates: a CA of the cluster's own, a certificate for each
# component, kubeconfigs that name them ---
# Keys are ECDSA P-256: a tenth of a second each, where RSA's took seconds.
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
if [ ! -s "$P/ca.crt" ]; then
	openssl req -x509 "${ec[@]}" -keyout "$P/ca.key" -out "$P/ca.crt" -days 3650 \
		-subj /CN=boxes-kube-ca -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,digitalSignature,keyCertSign 2>/dev/null
fi
if [ ! -s "$P/sa.pub" ]; then
	openssl ecparam -name prime256v1 -genkey -noout -out "$P/sa.key"
	openssl ec -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
fi
# cert NAME SUBJECT USAGE [SAN]: a key and a certificate signed by the CA.
cert() {
	local name=$1 subject=$2 usage=$3 san=${4:-}
	[ -s "$P/$name.crt" ] && return 0
	openssl req -new "${ec[@]}" -keyout "$P/$name.key" -out "$P/$name.csr" -subj "$subject" 2>/dev/null
	{
		echo basicConstraints=CA:FALSE
		echo keyUsage=critical,digitalSignature
		echo "extendedKeyUsage=$usage"
		[ -z "$san" ] || echo "subjectAltName=$san"
	} >"$P/$name.ext"
	openssl x509 -req -in "$P/$name.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
		-days 3650 -extfile "$P/$name.ext" -out "$P/$name.crt" 2>/dev/null
	rm -f "$P/$name.csr" "$P/$name.ext"
}
cert apiserver /CN=kube-apiserver serverAuth \
	"IP:$KUBE_NODE_IP,IP:$KUBE_SVC_FIRST,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert apiserver-kubelet /O=system:masters/CN=kube-apiserver-kubelet-client clientAuth
cert admin /O=system:masters/CN=boxes-kube-admin clientAuth
cert controller-manager /CN=system:kube-controller-manager clientAuth
cert scheduler /CN=system:kube-scheduler clientAuth
cert kubelet-client "/O=system:nodes/CN=system:node:$KUBE_NODE" clientAuth
cert kubelet "/CN=$KUBE_NODE" serverAuth "IP:$KUBE_NODE_IP,DNS:$KUBE_NODE"
for user in admin controller-manager scheduler kubelet-client; do
	put "$E/$user.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: boxes-kube
  cluster:
    server: https://$KUBE_NODE_IP:$KUBE_API_PORT
    certificate-authority: $P/ca.crt
users:
- name: $user
  user:
    client-certificate: $P/$user.crt
    client-key: $P/$user.key
contexts:
- name: boxes-kube
  context: {cluster: boxes-kube, user: $user}
current-context: boxes-kube
EOF
done
say "certificates"

# --- the node's address, on a bridge with no ports (no dummy links on
# every kernel); the pods' network: bridge + host-local addresses, firewall
# (accepts the pods' forwarded traffic where FORWARD's policy is DROP, as
# Docker leaves it, without touching Docker's chains), portmap ---
ip link show "$KUBE_NODE_LINK" >/dev/null 2>&1 || ip link add "$KUBE_NODE_LINK" type bridge
# (no `| grep -q` under pipefail: an early exit of grep fails the pipe)
[[ "$(ip -4 addr show dev "$KUBE_NODE_LINK")" == *"inet $KUBE_NODE_IP/"* ]] || ip addr add "$KUBE_NODE_IP/32" dev "$KUBE_NODE_LINK"
ip link set "$KUBE_NODE_LINK" up
# CNI's iptables chains are shared by whoever uses CNI on this machine:
# down.sh removes the chains themselves only if none were there before.
if [ ! -e "$R/cni-chains-before" ]; then
	iptables -S 2>/dev/null | grep -c '^-N CNI-' >"$R/cni-chains-before" || true
fi
put "$D/cni/net.d/10-$KUBE_CNI_NET.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$KUBE_CNI_NET",
  "plugins": [
    {"type": "bridge", "bridge": "$KUBE_POD_LINK", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$D/cni/ipam",
              "ranges": [[{"subnet": "$KUBE_POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "firewall", "backend": "iptables"},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF

# --- containerd: the cluster's own, with its own root, state and socket.
# restrict_oom_score_adj: without CAP_SYS_RESOURCE runc cannot lower a
# sandbox's oom_score_adj, and every pod would fail to start ---
put "$E/containerd.toml" <<EOF
version = 2
root = "$D/containerd"
state = "$KUBE_CTRD_STATE"
[grpc]
  address = "$KUBE_CTRD_SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$D/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$KUBE_PAUSE_IMAGE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$KUBE_CTRD_STATE/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$KUBE_CACHE/cni"
    conf_dir = "$D/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$E/certs.d"
EOF
# The registries the node trusts: a test writes certs.d/HOST:PORT/hosts.toml
# (its CA) for a registry of its own; containerd reads it at each pull.
mkdir -p "$E/certs.d"
start containerd containerd --config "$E/containerd.toml"
await containerd ctr -a "$KUBE_CTRD_SOCK" version
ctr_() { ctr -a "$KUBE_CTRD_SOCK" -n k8s.io "$@"; }
images() { ctr_ images ls -q 2>/dev/null || true; }
if [[ $'\n'"$(images)"$'\n' != *$'\n'"$KUBE_PAUSE_IMAGE"$'\n'* ]]; then
	ctr_ images import "$KUBE_CACHE/images/pause.tar" >/dev/null
fi
say "pause image"

# import IMAGE: the Docker image IMAGE into the cluster's containerd, unless
# the same image (by Docker's ID) is there already. Pods use it with
# imagePullPolicy: Never (or IfNotPresent): the cluster pulls nothing.
import() {
	local image=$1 id mark
	id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null) || return 1
	mark=$R/image.$(echo "$image" | tr '/:' '__')
	if [ "$(cat "$mark" 2>/dev/null)" = "$id" ] && [[ $'\n'"$(images)"$'\n' == *"$image"$'\n'* ]]; then
		return 0
	fi
	docker save "$image" | ctr_ images import - >/dev/null
	echo "$id" >"$mark"
	say "imported $image"
}
# The images are imported while the control plane starts (the test image
# takes seconds); up.sh waits for them at the end.
(
	if docker image inspect "$TEST_IMAGE" >/dev/null 2>&1; then
		import "$TEST_IMAGE"
	else
		say "no $TEST_IMAGE in Docker (make test-image): not imported"
	fi
	for image in "$@"; do
		import "$image" || kube_die "up: Docker has no image $image"
	done
) &
importing=$!

# --- etcd (Debian's), on loopback ports of the cluster's own ---
start etcd etcd --name boxes-kube --data-dir "$D/etcd" \
	--listen-client-urls "http://$KUBE_ETCD_CLIENT" --advertise-client-urls "http://$KUBE_ETCD_CLIENT" \
	--listen-peer-urls "http://$KUBE_ETCD_PEER" --initial-advertise-peer-urls "http://$KUBE_ETCD_PEER" \
	--initial-cluster "boxes-kube=http://$KUBE_ETCD_PEER" --quota-backend-bytes 2147483648
await etcd curl -sf "http://$KUBE_ETCD_CLIENT/health"

# --- the control plane ---
start kube-apiserver kube-apiserver \
	--etcd-servers "http://$KUBE_ETCD_CLIENT" \
	--bind-address "$KUBE_NODE_IP" --advertise-address "$KUBE_NODE_IP" --secure-port "$KUBE_API_PORT" \
	--tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" --client-ca-file "$P/ca.crt" \
	--kubelet-client-certificate "$P/apiserver-kubelet.crt" --kubelet-client-key "$P/apiserver-kubelet.key" \
	--kubelet-certificate-authority "$P/ca.crt" --kubelet-preferred-address-types InternalIP \
	--service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
	--service-account-issuer https://kubernetes.default.svc.cluster.local \
	--service-cluster-ip-range "$KUBE_SVC_CIDR" \
	--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
	--allow-privileged=true --profiling=false
await kube-apiserver curl -sf --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" \
	"https://$KUBE_NODE_IP:$KUBE_API_PORT/readyz"
# Neither serves anything (--secure-port 0): no port of theirs to clash.
start kube-controller-manager kube-controller-manager \
	--kubeconfig "$E/controller-manager.kubeconfig" --secure-port 0 --leader-elect=false \
	--use-service-account-credentials --service-account-private-key-file "$P/sa.key" \
	--root-ca-file "$P/ca.crt" --cluster-signing-cert-file "$P/ca.crt" --cluster-signing-key-file "$P/ca.key" \
	--service-cluster-ip-range "$KUBE_SVC_CIDR" --allocate-node-cidrs=false --profiling=false
start kube-scheduler kube-scheduler \
	--kubeconfig "$E/scheduler.kubeconfig" --secure-port 0 --leader-elect=false --profiling=false

# --- the kubelet. Its pods' cgroups go under a parent of the cluster's own
# (cgroupfs), which must exist in every hierarchy first.
# makeIPTablesUtilChains: false keeps it from adding chains to the host's
# iptables; healthzPort 0 and a port on the node's address only ---
for h in /sys/fs/cgroup/*/; do
	if [ ! -e "$h/cgroup.procs" ] || [ "${h%/}" = /sys/fs/cgroup/unified ]; then continue; fi
	mkdir -p "$h$KUBE_CGROUP"
	if [ -e "$h/cpuset.cpus" ] && [ -z "$(cat "$h$KUBE_CGROUP/cpuset.cpus")" ]; then
		cat "$h/cpuset.cpus" >"$h$KUBE_CGROUP/cpuset.cpus"
		cat "$h/cpuset.mems" >"$h$KUBE_CGROUP/cpuset.mems"
	fi
done
put "$E/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $KUBE_NODE_IP
port: 10250
readOnlyPort: 0
healthzPort: 0
cgroupDriver: cgroupfs
cgroupRoot: /$KUBE_CGROUP
failSwapOn: false
makeIPTablesUtilChains: false
containerRuntimeEndpoint: unix://$KUBE_CTRD_SOCK
imageServiceEndpoint: unix://$KUBE_CTRD_SOCK
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: AlwaysAllow}
tlsCertFile: $P/kubelet.crt
tlsPrivateKeyFile: $P/kubelet.key
rotateCertificates: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 10s
EOF
start kubelet kubelet --config "$E/kubelet.yaml" --kubeconfig "$E/kubelet-client.kubeconfig" \
	--root-dir "$D/kubelet" --hostname-override "$KUBE_NODE" --node-ip "$KUBE_NODE_IP" --v 1
node_ready() {
	[ "$(kubectl get node "$KUBE_NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
await "node $KUBE_NODE" node_ready
await "default service account" kubectl -n default get serviceaccount default

# --- storage: claims of the default StorageClass bind when their pod is
# scheduled (WaitForFirstConsumer, no scheduler backoff for an unbound
# claim) to static hostPath volumes under volumes/ ---
{
	cat <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: boxes-local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Retain
EOF
	for i in $(seq -w 1 "$VOLUMES"); do
		cat <<EOF
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: boxes-local-$i, labels: {boxes.test/volume: "true"}}
spec:
  capacity: {storage: 100Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: boxes-local
  hostPath: {path: $D/volumes/$i, type: DirectoryOrCreate}
EOF
	done
} | put "$E/storage.yaml"
applied "$E/storage.yaml"
# A volume whose claim is gone is emptied and made Available again.
start volume-recycler bash "$here/recycle-volumes.sh"
say "storage class boxes-local, $VOLUMES volumes"

# --- agent-sandbox: CRDs, and the controller outside the cluster (no
# metrics or probe ports; one replica, no leader election) ---
applied "$KUBE_CACHE"/crds/*.yaml
await "agent-sandbox CRDs" kubectl wait --for condition=Established --timeout 5s \
	crd/sandboxes.agents.x-k8s.io crd/sandboxclaims.extensions.agents.x-k8s.io \
	crd/sandboxtemplates.extensions.agents.x-k8s.io crd/sandboxwarmpools.extensions.agents.x-k8s.io
start agent-sandbox-controller env KUBECONFIG="$E/admin.kubeconfig" agent-sandbox-controller \
	--leader-elect=false --extensions --metrics-bind-address 0 --health-probe-bind-address 0

# --- kube-router, only as the NetworkPolicy firewall: no routing, no
# service proxy, no CNI, no ports. Its chains have fixed names, so one runs
# per machine: refuse when another's are there (not this cluster's own
# from an earlier start). It leaves its rules when stopped; down.sh removes
# them. It rewrites the whole filter table when a pod or a policy changes,
# which would lose a rule Docker writes at that moment: its iptables-restore
# is kube-router-bin's, which restores its own chains alone (no periodic
# rewrite either: nothing else changes them) ---
if [ ! -e "$R/kube-router.used" ] && iptables -S KUBE-ROUTER-FORWARD >/dev/null 2>&1; then
	kube_die "up: another kube-router's chains (KUBE-ROUTER-*) are in iptables: is a cluster of another kind running?"
fi
touch "$R/kube-router.used"
start kube-router env PATH="$here/kube-router-bin:$PATH" kube-router --kubeconfig "$E/admin.kubeconfig" --hostname-override "$KUBE_NODE" \
	--run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
	--service-cluster-ip-range "$KUBE_SVC_CIDR" --health-port 0 --metrics-port 0 --v 1 \
	--iptables-sync-period 24h
await "kube-router's chains" iptables -S KUBE-ROUTER-FORWARD

# --- kube-proxy, in nftables mode: the Services' addresses go to their
# pods through the tables ip and ip6 kube-proxy, its own (no chain of
# Docker's or iptables' is touched; nftables mode adds no drop of
# conntrack-invalid packets, which iptables mode would put before Docker's
# rules). Conntrack's settings are left as they are (0: not set); NodePorts
# only on the node's address; its health and metrics on loopback ports ---
put "$E/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection: {kubeconfig: $E/admin.kubeconfig}
hostnameOverride: $KUBE_NODE
clusterCIDR: $KUBE_POD_CIDR
detectLocalMode: ClusterCIDR
nodePortAddresses: [$KUBE_NODE_IP/32]
healthzBindAddress: 127.0.0.1:$KUBE_PROXY_HEALTH_PORT
metricsBindAddress: 127.0.0.1:$KUBE_PROXY_METRICS_PORT
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s, udpTimeout: 0s, udpStreamTimeout: 0s}
EOF
touch "$R/kube-proxy.used"
start kube-proxy kube-proxy --config "$E/kube-proxy.yaml" --v 1
await "kube-proxy's table" nft list chain ip kube-proxy services

wait "$importing" || kube_die "up: importing images failed"
say "cluster up (kubectl: $D/bin/kubectl)"
echo "KUBECONFIG=$E/admin.kubeconfig"

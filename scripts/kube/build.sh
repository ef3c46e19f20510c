#!/bin/bash
# build.sh fills the test cluster's cache (make kube-build), once per
# Kubernetes version, from the Go module proxy and Debian's packages:
#
#   bin/     kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
#            kube-proxy, kubectl (only when the host has no usable one),
#            agent-sandbox-controller, kube-router
#   cni/     the CNI plugins bridge, host-local, loopback, portmap, firewall
#   crds/    agent-sandbox's CustomResourceDefinitions
#   images/  pause.tar, the pods' sandbox image (internal/testkube/pause)
#
# Each program is built from its own module with that module's own go.mod,
# in a temporary copy: none of them is a dependency of boxes. Everything
# already in the cache is kept, so a second run does nothing (in well under a
# second); delete a file to build it again. Cold, on two cores, it takes
# 10 to 20 minutes, most of it kube-apiserver. Needs root (apt) and Go.
set -eu
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/kube/common.sh
. "$here/common.sh"

started=$(date +%s)
step() { kube_log "build: [+$(($(date +%s) - started)) s] $*"; }

# wanted lists what the cache lacks, one item a line; nothing when complete.
wanted() {
	local b p
	for b in $KUBE_CP_BINS $KUBE_EXTRA_BINS; do
		[ -x "$KUBE_CACHE/bin/$b" ] || echo "bin/$b"
	done
	[ -x "$KUBE_CACHE/bin/kubectl" ] || kube_system_kubectl_ok || echo bin/kubectl
	for p in $KUBE_CNI_PLUGINS; do
		[ -x "$KUBE_CACHE/cni/${p##*/}" ] || echo "cni/${p##*/}"
	done
	[ -s "$KUBE_CACHE/crds/.complete" ] || echo crds
	[ -s "$KUBE_CACHE/images/pause.tar" ] || echo images/pause.tar
	for p in $KUBE_PACKAGES; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qx 'install ok installed' || echo "package $p"
	done
}

missing=$(wanted)
if [ -z "$missing" ]; then
	kube_log "build: the cache is complete ($KUBE_CACHE)"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || kube_die "build: needs root (apt-get; the cluster itself runs as root): missing $(echo "$missing" | tr '\n' ' ')"

mkdir -p "$KUBE_CACHE"/{bin,cni,crds,images}
# One build at a time per cache.
exec 9>"$KUBE_CACHE/.build.lock"
flock 9
tmp=$(mktemp -d "${TMPDIR:-/tmp}/boxes-kube-build.XXXXXX")
policy_made=0
cleanup() {
	rm -rf "$tmp"
	if [ "$policy_made" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
}
trap cleanup EXIT

# --- Debian packages ---
# etcd-server's maintainer script starts an etcd of its own: a policy-rc.d
# that denies every start (made only if there is none, removed after) keeps
# it from doing so. The cluster runs its own etcd with its own data.
packages=()
for p in $KUBE_PACKAGES; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qx 'install ok installed' || packages+=("$p")
done
if [ ${#packages[@]} -gt 0 ]; then
	step "installing ${packages[*]}"
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\n# no service starts while packages are installed\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		policy_made=1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}"
	if [ "$policy_made" = 1 ]; then
		rm -f /usr/sbin/policy-rc.d
		policy_made=0
	fi
fi

command -v go >/dev/null || kube_die "build: needs Go on PATH"
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod

# module MODULE@VERSION: a writable copy of the module in the temporary
# directory; prints its path.
module() {
	local dir dest
	dest=$tmp/$(echo "$1" | tr '/@' '__')
	if [ ! -d "$dest" ]; then
		dir=$(cd / && nice -n 19 go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		[ -n "$dir" ] || kube_die "build: go mod download $1 found no directory"
		cp -r "$dir" "$dest"
		chmod -R u+w "$dest"
	fi
	echo "$dest"
}

# build SRC OUT PKG [LDFLAGS] [NOTE]: go build in SRC (a module copy) to OUT,
# written under a temporary name first so an interrupted build leaves nothing.
build() {
	local src=$1 out=$2 pkg=$3 ldflags=${4:--s -w} note=${5:-} t0
	[ -x "$out" ] && return 0
	t0=$(date +%s)
	step "building ${out##*/}${note:+ ($note)}"
	(cd "$src" && nice -n 19 go build -trimpath -ldflags "$ldflags" -o "$out.partial" "$pkg")
	mv -f "$out.partial" "$out"
	step "built ${out##*/} in $(($(date +%s) - t0)) s"
}

# --- Kubernetes ---
# k8s.io/kubernetes's go.mod replaces its k8s.io/* modules with ./staging/...,
# which the module's zip does not hold: they are pointed at the published
# k8s.io/X v0.MINOR.PATCH modules instead. Its go.work (naming ./staging)
# is off (GOWORK=off). The version is stamped as a release build stamps it.
k8s_wanted=()
for b in $KUBE_CP_BINS; do [ -x "$KUBE_CACHE/bin/$b" ] || k8s_wanted+=("$b"); done
if [ ! -x "$KUBE_CACHE/bin/kubectl" ] && ! kube_system_kubectl_ok; then k8s_wanted+=(kubectl); fi
if [ ${#k8s_wanted[@]} -gt 0 ]; then
	step "fetching k8s.io/kubernetes@$KUBE_VERSION"
	src=$(module "k8s.io/kubernetes@$KUBE_VERSION")
	staging=v0.${KUBE_VERSION#v1.}
	sed -i -E "s#^(\tk8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\$#\1 => \1 $staging#" "$src/go.mod"
	if grep -q '=> \./staging' "$src/go.mod"; then kube_die "build: $src/go.mod still replaces modules with ./staging"; fi
	minor=${KUBE_VERSION#v1.}
	minor=${minor%%.*}
	v=k8s.io/component-base/version
	ldflags="-s -w -X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
	for b in "${k8s_wanted[@]}"; do
		note=''
		case $b in
		kube-apiserver) note='cold: several minutes' ;;
		kube-controller-manager | kubectl) note='cold: a few minutes' ;;
		esac
		build "$src" "$KUBE_CACHE/bin/$b" "./cmd/$b" "$ldflags" "$note"
	done
fi

# --- CNI plugins: the pod bridge with host-local addresses, loopback,
# portmap (hostPort), and firewall (accepts the pods' forwarded traffic,
# where a host's FORWARD policy drops it, as Docker sets it) ---
for p in $KUBE_CNI_PLUGINS; do
	[ -x "$KUBE_CACHE/cni/${p##*/}" ] && continue
	src=$(module "github.com/containernetworking/plugins@$CNI_VERSION")
	build "$src" "$KUBE_CACHE/cni/${p##*/}" "./plugins/$p"
done

# --- agent-sandbox: the controller and its CustomResourceDefinitions ---
if [ ! -x "$KUBE_CACHE/bin/agent-sandbox-controller" ] || [ ! -s "$KUBE_CACHE/crds/.complete" ]; then
	src=$(module "sigs.k8s.io/agent-sandbox@$SANDBOX_VERSION")
	build "$src" "$KUBE_CACHE/bin/agent-sandbox-controller" ./cmd/agent-sandbox-controller '-s -w' 'cold: a few minutes'
	rm -f "$KUBE_CACHE"/crds/*.yaml
	cp "$src"/k8s/crds/*.yaml "$KUBE_CACHE/crds/"
	(cd "$KUBE_CACHE/crds" && ls -- *.yaml) >"$KUBE_CACHE/crds/.complete"
fi

# --- kube-router, the NetworkPolicy enforcer of the tests ---
if [ ! -x "$KUBE_CACHE/bin/kube-router" ]; then
	src=$(module "github.com/cloudnativelabs/kube-router/v2@$KUBE_ROUTER_VERSION")
	build "$src" "$KUBE_CACHE/bin/kube-router" ./cmd/kube-router '-s -w' 'cold: a few minutes'
fi

# --- the pause image, written as a docker-archive tar (what docker save
# writes and ctr images import reads): one layer holding /pause ---
pause_tar=$KUBE_CACHE/images/pause.tar
if [ ! -s "$pause_tar" ]; then
	step "making the pause image $KUBE_PAUSE_IMAGE"
	w=$tmp/pause
	mkdir -p "$w/rootfs" "$w/image"
	(cd "$root" && GOFLAGS=-buildvcs=false nice -n 19 go build -trimpath -ldflags '-s -w' -o "$w/rootfs/pause" ./internal/testkube/pause)
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$w/rootfs" -cf "$w/layer.tar" pause
	layer=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
	mkdir "$w/image/$layer"
	mv "$w/layer.tar" "$w/image/$layer/layer.tar"
	printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$(go env GOARCH)" "$layer" >"$w/config.json"
	config=$(sha256sum "$w/config.json" | cut -d' ' -f1)
	mv "$w/config.json" "$w/image/$config.json"
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' \
		"$config" "$KUBE_PAUSE_IMAGE" "$layer" >"$w/image/manifest.json"
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$w/image" \
		-cf "$pause_tar.partial" manifest.json "$config.json" "$layer/layer.tar"
	mv -f "$pause_tar.partial" "$pause_tar"
fi

missing=$(wanted)
[ -z "$missing" ] || kube_die "build: still missing: $(echo "$missing" | tr '\n' ' ')"
step "done: $KUBE_CACHE ($(du -sh "$KUBE_CACHE" | cut -f1))"

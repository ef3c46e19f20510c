# The hermes-box image: one image, two entrypoints (design section 1).
#
# `boxes build` builds it, with the pins of boxes.lock as build arguments
# (image/recipe.go, BuildArgs). By hand, from a checkout (git keeps guest/hb
# 0755), with the repository's root as the context (.dockerignore keeps it to
# this file, provision/ and guest/):
#   DOCKER_BUILDKIT=0 docker build \
#     --build-arg BASE_IMAGE=ubuntu:24.04@sha256:... --build-arg NODE_VERSION=... .
# Two cached stages: "tools" (provision/, minutes) and "assets" (guest/,
# seconds), so that editing a guest script rebuilds only the assets.
#
# The context may come from go:embed, which drops the exec bit: boxes build
# writes files that start with #! 0755 and the others 0644. provision.sh is
# run through bash all the same.

# A full reference with digest for the real build; every tool version is a
# build argument too, and none has a default: boxes.lock supplies them.
ARG BASE_IMAGE=ubuntu:24.04

FROM ${BASE_IMAGE} AS tools
# Only this stage sees these, so changing a pin re-runs the provision step and
# whatever follows, and nothing else. One instruction: the legacy builder
# spends a second on each.
ARG INSTALL_APT=1 \
    INSTALL_NODE=1 \
    INSTALL_UV=1 \
    INSTALL_CLAUDE=1 \
    INSTALL_CODEX=1 \
    INSTALL_EXECUTOR=1 \
    INSTALL_HERMES=1 \
    NODE_VERSION= \
    NODE_SHA256= \
    UV_VERSION= \
    UV_SHA256= \
    CLAUDE_VERSION= \
    CLAUDE_INTEGRITY= \
    CODEX_VERSION= \
    CODEX_INTEGRITY= \
    EXECUTOR_VERSION= \
    EXECUTOR_INTEGRITY= \
    HERMES_REF=
COPY provision/ /opt/hermes-box/provision/
RUN bash /opt/hermes-box/provision/provision.sh
ENV PATH=/opt/hermes-box/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DISABLE_AUTOUPDATER=1

# The compose project sets the entrypoint of each service (hb agent, hb
# executor); this default makes a bare `docker run` a box's agent. There is no
# ENTRYPOINT, so `docker run IMAGE CMD...` runs CMD.
CMD ["/usr/local/bin/hb", "agent"]

FROM tools AS assets
# One instruction, so one layer: provision.sh has linked /usr/local/bin/hb,
# /etc/profile.d/hermes-box.sh and /etc/tmux.conf to these files. New guest
# files must be listed here: guest/ also holds Go tests, which have no place
# in the image. hb is executable because boxes build writes every file that
# starts with #! with mode 0755.
COPY guest/hb guest/profile.sh guest/tmux.conf /opt/hermes-box/guest/
# Every TLS client of the box reads the system's bundle, to which hb trust
# adds the authority of the box's gate (the credentials' destinations over
# HTTPS): Node, Python's requests, curl and git told so, Go and OpenSSL by
# default. In the gate's container the same file holds the system's roots
# alone, which is what the gate checks its destinations against.
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt \
    GIT_SSL_CAINFO=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt \
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
# The box's network gate is boxes itself (boxes gate), a static binary that
# boxes build puts into the context as boxes-gate: its own layer, last, so
# that a new boxes rebuilds this layer alone. By hand: a static build of
# cmd/boxes (CGO_ENABLED=0, as make build does) copied to image/boxes-gate.
COPY boxes-gate /usr/local/bin/boxes-gate

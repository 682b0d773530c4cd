#!/bin/sh
# Builds the linerate container image (Containerfile at the repository's root) from a binary
# built on this host: cargo build --release unless --binary names one, then a build context with
# the binary and exactly the shared libraries ldd lists, then podman build.
#
#   deploy/build-image.sh [--binary PATH] [--tag NAME] [--context DIR]
#
# --tag defaults to localhost/linerate:latest. --context keeps the staged build context in DIR
# (which must not exist yet) instead of a temporary directory removed at the end.
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
binary=
tag=localhost/linerate:latest
context=

usage() {
    echo "usage: $0 [--binary PATH] [--tag NAME] [--context DIR]" >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
        --binary) [ $# -ge 2 ] || usage; binary=$2; shift 2 ;;
        --tag) [ $# -ge 2 ] || usage; tag=$2; shift 2 ;;
        --context) [ $# -ge 2 ] || usage; context=$2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "$0: unknown argument '$1'" >&2; usage ;;
    esac
done

command -v podman >/dev/null || { echo "$0: podman is not on PATH (Debian: apt-get install podman)" >&2; exit 1; }
command -v ldd >/dev/null || { echo "$0: ldd is not on PATH (Debian: libc-bin)" >&2; exit 1; }

if [ -z "$binary" ]; then
    (cd "$repo" && cargo build --release --locked --bin linerate)
    binary=$(cd "$repo" && cargo metadata --format-version 1 --no-deps |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/release/linerate
fi
[ -x "$binary" ] || { echo "$0: no executable at $binary" >&2; exit 1; }

if [ -n "$context" ]; then
    [ ! -e "$context" ] || { echo "$0: $context exists already" >&2; exit 1; }
    mkdir -p "$context"
else
    context=$(mktemp -d "${TMPDIR:-/tmp}/linerate-image.XXXXXX")
    trap 'rm -rf "$context"' EXIT
fi
root=$context/rootfs
# /run/secrets: the mount point of a podman secret, which a --read-only root could not create.
mkdir -p "$root/etc" "$root/tmp" "$root/run/secrets" "$context/home/linerate"
chmod 1777 "$root/tmp"
cp "$binary" "$context/linerate"
chmod 0755 "$context/linerate"

# Every library the loader maps for the binary, and the loader itself, at the path ldd gives
# (the loader's path is the one written into the binary's PT_INTERP). Symbolic links are
# followed: the image holds the files under the names the binary asks for.
libs=$(ldd "$binary" | awk '
    $2 == "=>" && $3 ~ /^\// { print $3; next }
    $1 ~ /^\// { print $1 }
    /not found/ { print "MISSING " $1 }')
case "$libs" in
    *MISSING*) echo "$0: ldd cannot find every library of $binary:" >&2; ldd "$binary" >&2; exit 1 ;;
esac
for lib in $libs; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done

# Name resolution: /etc/hosts and /etc/resolv.conf are the container engine's (podman and
# Kubernetes write both). glibc needs nsswitch.conf to read them in this order, and host.conf's
# `multi on` to return every address /etc/hosts gives a name (without it only the first: a
# `dns:NAME` target listed there twice would name one agent).
printf 'hosts: files dns\n' > "$root/etc/nsswitch.conf"
printf 'multi on\n' > "$root/etc/host.conf"
printf 'root:x:0:0:root:/:/nonexistent\nlinerate:x:65532:65532:linerate:/home/linerate:/nonexistent\n' > "$root/etc/passwd"
printf 'root:x:0:\nlinerate:x:65532:\n' > "$root/etc/group"

echo "staged in $context:" >&2
(cd "$context" && find . -type f | sort) >&2

# Containerfile has no RUN step, so no runtime runs during the build; --runtime runc is given
# all the same since crun refuses some hosts' cgroup layout (docs: deploy/image.md).
podman build --runtime runc --no-cache -f "$repo/Containerfile" -t "$tag" "$context"
podman image inspect --format '{{.Size}}' "$tag" | awk -v tag="$tag" '{ printf "%s: %d bytes (%.1f MiB)\n", tag, $1, $1 / 1048576 }'

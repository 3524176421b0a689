#!/usr/bin/env bash
# Configure (when needed) and build nsrun with meson + ninja.
#
#   tools/build.sh            release build with tests   -> ./build
#   tools/build.sh --static   static nsrun, no tests      -> ./build-static
#   tools/build.sh --minimal  static nsrun without `nsrun bench`, only what
#                             a launch needs (a microVM image) -> ./build-minimal
#
# Works from any directory: paths are relative to the repository root.
set -euo pipefail

die() { printf 'build: ERROR: %s\n' "$*" >&2; exit 1; }

static=0 minimal=0
while (($#)); do
    case "$1" in
        --static) static=1 ;;
        --minimal) minimal=1 ;;
        -h|--help) printf 'usage: %s [--static|--minimal]\n' "${0##*/}"; exit 0 ;;
        *) die "unknown argument: $1 (usage: ${0##*/} [--static|--minimal])" ;;
    esac
    shift
done

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd -- "$root"

for tool in meson ninja; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found; run tools/install-deps.sh as root first"
done

if ((minimal)); then
    dir=build-minimal
    opts=(-Dstatic=true -Dtests=false -Dbench=false)
elif ((static)); then
    dir=build-static
    opts=(-Dstatic=true -Dtests=false -Dbench=true)
else
    dir=build
    opts=(-Dstatic=false -Dtests=true -Dbench=true)
fi

if [[ ! -f "$dir/build.ninja" ]]; then
    if [[ -f "$dir/meson-private/coredata.dat" ]]; then
        # A configure that failed half-way: start that build dir over.
        meson setup --wipe "$dir" -Dbuildtype=release "${opts[@]}" || die "meson setup --wipe $dir failed"
    else
        meson setup "$dir" -Dbuildtype=release "${opts[@]}" || die "meson setup $dir failed"
    fi
else
    # Already configured: make sure of the options that decide what is built
    # (a no-op, with no regeneration, when they are already set; a buildtype
    # chosen by hand is left alone).
    meson configure "$dir" "${opts[@]}" >/dev/null || die "meson configure $dir failed"
fi

ninja -C "$dir" || die "build in $root/$dir failed"

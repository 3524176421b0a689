#!/usr/bin/env bash
# Install what nsrun needs to build (and, with --test, to run its tests) on
# Debian 12 (bookworm). Idempotent: it asks dpkg first and does not call
# apt-get at all when everything is already there.
#
#   tools/install-deps.sh          build dependencies
#   tools/install-deps.sh --test   build dependencies + test-only extras
#   tools/install-deps.sh --fuzz   + clang and libFuzzer (tools/fuzz.sh)
#   tools/install-deps.sh --package  + what building and checking the Debian
#                                      package takes (tools/package-test.sh)
set -euo pipefail

# musl-tools: musl-gcc builds the bench's musl floor row (tools/nsrun-floor-exec.c).
readonly BUILD_PKGS=(g++ ninja-build pkg-config libseccomp-dev libcap-dev libfmt-dev musl-tools)
# Packages whose bookworm version is too old, taken from bookworm-backports:
# "name min-version below-version" (dpkg version order; - = no bound).
#  - Catch2 v3 (stock bookworm `catch2` is 2.13 and does not count).
#  - meson >= 1.1: meson.options and cpp_std=c++2b need it (bookworm: 1.0.1).
readonly BACKPORTS_PKGS=(
    "libcatch2-dev 3 4~"
    "meson 1.1 -"
)
# Test-only: bubblewrap is an oracle, busybox-static a tiny static userland,
# util-linux brings unshare/setpriv/runuser, passwd brings useradd; qemu and
# a Debian kernel boot the microVM image test (tests/vm). openssh-server and
# -client: the git-over-ssh egress test runs its own sshd as a child, with
# its own config, in a network namespace of its own; the system's ssh
# service is neither started (policy-rc.d) nor left enabled. mat2, opam
# (with rsync) and GNOME's thumbnail factory (gir1.2-gnomedesktop-3.0,
# python3-gi, libgdk-pixbuf2.0-bin) are real bwrap callers, run under both.
readonly TEST_PKGS=(bubblewrap busybox-static util-linux iproute2 passwd qemu-system-x86 linux-image-amd64 openssh-server openssh-client
                    mat2 opam rsync gir1.2-gnomedesktop-3.0 python3-gi libgdk-pixbuf2.0-bin)
# Fuzzing (tools/fuzz.sh): clang with libFuzzer. 19, because bookworm's
# default clang (14) lacks the C++20 concepts level that libstdc++ 12's
# std::expected asks for (__cpp_concepts >= 202002L; clang 16 still lacks it).
readonly FUZZ_PKGS=(clang-19 libclang-rt-19-dev)
# The Debian package (tools/package-test.sh, docs/packaging.md):
# dpkg-buildpackage and debhelper build it, lintian checks it, man-db and
# file look at what it installs, zsh parses its completion.
readonly PACKAGE_PKGS=(dpkg-dev debhelper lintian man-db file zsh)
readonly BACKPORTS_LIST=/etc/apt/sources.list.d/nsrun-backports.list

say() { printf 'install-deps: %s\n' "$*"; }
die() { printf 'install-deps: ERROR: %s\n' "$*" >&2; exit 1; }

usage() {
    printf 'usage: %s [--test] [--fuzz] [--package]\n' "${0##*/}"
}

want_test=0
want_fuzz=0
want_package=0
while (($#)); do
    case "$1" in
        --test) want_test=1 ;;
        --fuzz) want_fuzz=1 ;;
        --package) want_package=1 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done

command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script supports Debian only"

# Prints the installed version of $1, or nothing when it is not installed.
installed_version() {
    local out
    out=$(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$1" 2>/dev/null) || return 0
    # "ii  1.2.3-1" -> 1.2.3-1; any other state (rc, un, iU...) counts as missing.
    if [[ "$out" == ii* ]]; then
        out=${out#ii}
        printf '%s\n' "${out#"${out%%[![:space:]]*}"}"
    fi
}

# version_ok VERSION MIN BELOW: VERSION is >= MIN and < BELOW ("-" = no bound).
# An epoch, if any, is ignored: the bounds are upstream versions.
version_ok() {
    local v=${1#*:}
    [[ -n "$v" ]] || return 1
    [[ "$2" == - ]] || dpkg --compare-versions "$v" ge "$2" || return 1
    [[ "$3" == - ]] || dpkg --compare-versions "$v" lt "$3" || return 1
}

pkgs=("${BUILD_PKGS[@]}")
if ((want_test)); then
    pkgs+=("${TEST_PKGS[@]}")
fi
if ((want_fuzz)); then
    pkgs+=("${FUZZ_PKGS[@]}")
fi
if ((want_package)); then
    pkgs+=("${PACKAGE_PKGS[@]}")
fi

missing=()
for p in "${pkgs[@]}"; do
    [[ -n "$(installed_version "$p")" ]] || missing+=("$p")
done
bp_missing=()  # "name min below" entries not satisfied
for entry in "${BACKPORTS_PKGS[@]}"; do
    read -r name min below <<<"$entry"
    version_ok "$(installed_version "$name")" "$min" "$below" || bp_missing+=("$entry")
done

describe() { # "name min below" -> "name (>= min, < below)"
    local name min below
    read -r name min below <<<"$1"
    printf '%s (>= %s%s)' "$name" "$min" "$([[ "$below" == - ]] || printf ', < %s' "$below")"
}

if ((${#missing[@]} == 0 && ${#bp_missing[@]} == 0)); then
    say "all dependencies present, nothing to do"
    exit 0
fi

wanted=("${missing[@]}")
for entry in "${bp_missing[@]}"; do
    wanted+=("$(describe "$entry")")
done
[[ "$(id -u)" == 0 ]] || die "missing: ${wanted[*]}; run this script as root to install them"
command -v apt-get >/dev/null 2>&1 || die "apt-get not found"

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp "${TMPDIR:-/tmp}/nsrun-install-deps.XXXXXX.log")
trap 'rm -f "$log"' EXIT

# Runs apt-get quietly; on failure shows its output and stops.
apt_quiet() {
    if ! apt-get -q -y -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=300 "$@" >"$log" 2>&1; then
        cat "$log" >&2
        die "apt-get $* failed (output above)"
    fi
}

codename=""
if [[ -r /etc/os-release ]]; then
    codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
fi

backports_suite=""
if ((${#bp_missing[@]})); then
    [[ -n "$codename" ]] || die "cannot tell the Debian release (no VERSION_CODENAME in /etc/os-release) to find its backports"
    backports_suite="$codename-backports"
    has_backports=0
    shopt -s nullglob
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r "$f" ]] || continue
        if grep -Eq "^[[:space:]]*deb[[:space:]].*[[:space:]]$backports_suite([[:space:]]|$)" "$f"; then
            has_backports=1
        fi
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r "$f" ]] || continue
        if grep -Eq "^[[:space:]]*Suites:.*[[:space:]]$backports_suite([[:space:]]|$)" "$f"; then
            has_backports=1
        fi
    done
    shopt -u nullglob
    if ((!has_backports)); then
        printf 'deb http://deb.debian.org/debian %s main\n' "$backports_suite" >"$BACKPORTS_LIST"
        say "added $BACKPORTS_LIST ($backports_suite)"
    fi
fi

say "apt-get update"
apt_quiet update

# The tests need sshd's binary, not a daemon listening on the host:
# openssh-server's postinst would start and enable the ssh service.
own_policy_rc=0
if [[ " ${missing[*]} " == *" openssh-server "* && ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\n# install-deps.sh: start no service while installing\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    own_policy_rc=1
    trap 'rm -f "$log"; rm -f /usr/sbin/policy-rc.d' EXIT
fi

if ((${#missing[@]})); then
    apt_quiet install --no-install-recommends "${missing[@]}"
    if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
        if command -v deb-systemd-helper >/dev/null 2>&1; then
            deb-systemd-helper disable ssh.service ssh.socket >/dev/null 2>&1 || true
        fi
        if command -v update-rc.d >/dev/null 2>&1; then
            update-rc.d ssh disable >/dev/null 2>&1 || true
        fi
        say "openssh-server installed for the tests; its ssh service is disabled and was not started"
    fi
    if ((own_policy_rc)); then
        rm -f /usr/sbin/policy-rc.d
    fi
    for p in "${missing[@]}"; do
        v=$(installed_version "$p")
        [[ -n "$v" ]] || die "$p is still not installed after apt-get install"
        say "installed $p $v"
    done
fi

if ((${#bp_missing[@]})); then
    names=()
    for entry in "${bp_missing[@]}"; do
        read -r name _ <<<"$entry"
        names+=("$name")
    done
    # -t only for these: everything else stays on the stable release.
    apt_quiet install --no-install-recommends -t "$backports_suite" "${names[@]}"
    for entry in "${bp_missing[@]}"; do
        read -r name min below <<<"$entry"
        v=$(installed_version "$name")
        version_ok "$v" "$min" "$below" ||
            die "$(describe "$entry") is still not installed (have: '${v:-none}'); is $backports_suite reachable?"
        say "installed $name $v (from $backports_suite)"
    done
fi

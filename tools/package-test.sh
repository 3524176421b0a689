#!/usr/bin/env bash
# Builds nsrun's Debian packages from this tree (dpkg-buildpackage -us -uc
# -b, in a copy at a fixed path so ccache hits from one run to the next),
# runs lintian on them, unpacks them into a scratch root (dpkg -x: nothing
# is installed on this machine) and checks the installed files: the
# version, the man page, the completions, the AppArmor profile, one
# sandboxed command as root and as nsrun-test (its effect on the host),
# and nsrun-bwrap's /usr/bin/bwrap. docs/packaging.md.
#
#   tools/package-test.sh [--keep] [--debs DIR]
#     --keep       leave $work (the copy, the build log, the scratch root)
#     --debs DIR   check the packages in DIR instead of building them
#     --reuse-build DIR
#                  package the static nsrun already built in DIR (a
#                  tools/build.sh --static directory, e.g. build-static:
#                  CI builds it once) instead of compiling it again; the
#                  binary then has DIR's flags, not dpkg-buildflags'
set -euo pipefail

die() { printf 'package-test: FAIL: %s\n' "$*" >&2; exit 1; }
say() { printf 'package-test: %s\n' "$*"; }

keep=0
debs=""
reuse=""
while (($#)); do
    case "$1" in
        --keep) keep=1 ;;
        --debs) debs=$(cd -- "${2:?--debs needs a directory}" && pwd -P); shift ;;
        --reuse-build) reuse=$(cd -- "${2:?--reuse-build needs a directory}" && pwd -P); shift ;;
        *) die "unknown argument: $1 (usage: ${0##*/} [--keep] [--debs DIR])" ;;
    esac
    shift
done

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
work=${NSRUN_PACKAGE_WORK:-/tmp/nsrun-package}
for tool in dpkg-buildpackage dpkg-checkbuilddeps lintian; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found; run tools/install-deps.sh --package as root"
done

rm -rf -- "$work"
mkdir -p -- "$work"
if [[ -z "$debs" ]]; then
    mkdir -p -- "$work/src"
    # The tree as git sees it (tracked and new files, not ignored ones: no
    # build directories).
    git -C "$root" ls-files -z --cached --others --exclude-standard |
        (cd "$root" && xargs -0 tar -cf - --no-recursion --ignore-failed-read) | tar -xf - -C "$work/src"
    (cd -- "$work/src" && dpkg-checkbuilddeps) || die "build dependencies missing (tools/install-deps.sh --package)"
    start=$(date +%s)
    build=(dpkg-buildpackage -us -uc -b)
    if [[ -n "$reuse" ]]; then
        [[ -x "$reuse/nsrun" ]] || die "--reuse-build: no $reuse/nsrun"
        # debian/rules' build directory, with the package's paths; the
        # build stamp tells dh that the build part is done, and -nc keeps
        # dh clean from removing it.
        cp -a -- "$reuse" "$work/src/debian/build"
        meson setup --reconfigure "$work/src/debian/build" -Dprefix=/usr \
            -Dzsh_completions_dir=/usr/share/zsh/vendor-completions >"$work/build.log" 2>&1 ||
            { cat "$work/build.log" >&2; die "meson setup --reconfigure of the copy of $reuse failed"; }
        printf 'nsrun\nnsrun-bwrap\n' >"$work/src/debian/debhelper-build-stamp"
        build+=(-nc)
    fi
    if ! (cd -- "$work/src" && DEB_BUILD_OPTIONS="parallel=2 ${DEB_BUILD_OPTIONS:-}" "${build[@]}") \
        >>"$work/build.log" 2>&1; then
        tail -40 "$work/build.log" >&2
        die "dpkg-buildpackage failed (log: $work/build.log)"
    fi
    say "${build[*]}${reuse:+ (nsrun from $reuse)}: $(($(date +%s) - start)) s"
    debs=$work
fi

version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
deb=$debs/nsrun_${version}_amd64.deb
bwrap_deb=$debs/nsrun-bwrap_${version}_all.deb
[[ -f "$deb" && -f "$bwrap_deb" ]] || die "missing $deb or $bwrap_deb"

start=$(date +%s)
lintian_out=$(lintian --fail-on error --display-info "$deb" "$bwrap_deb" 2>&1 | { grep -v '^running with root privileges' || true; }) ||
    { printf '%s\n' "$lintian_out" >&2; die "lintian found errors"; }
say "lintian ($(($(date +%s) - start)) s): $(printf '%s\n' "$lintian_out" | grep -c . || true) tags (each overridden one says why in debian/*.lintian-overrides)"
[[ -z "$lintian_out" ]] || printf '%s\n' "$lintian_out" | sed 's/^/  /'

# The scratch root, readable by nsrun-test.
inst=$work/root
mkdir -p -- "$inst"
dpkg -x "$deb" "$inst"
dpkg -x "$bwrap_deb" "$inst"
chmod 0755 "$work" "$inst"
nsrun=$inst/usr/bin/nsrun

got=$("$nsrun" --version)
[[ "$got" == "nsrun $version" ]] || die "nsrun --version says '$got', the package is $version"
file -b "$nsrun" | grep -q 'statically linked' || die "$nsrun is not statically linked: $(file -b "$nsrun")"
man_page=$(MANPATH=$inst/usr/share/man man -w nsrun) || die "man -w nsrun finds no page in $inst"
[[ "$man_page" == "$inst/usr/share/man/man1/nsrun.1.gz" ]] || die "man -w nsrun: $man_page"
MANWIDTH=80 MANPATH=$inst/usr/share/man man nsrun 2>/dev/null | grep -q -- '--workspace' || die "man nsrun does not render"
bash -n "$inst/usr/share/bash-completion/completions/nsrun" || die "bash completion does not parse"
if command -v zsh >/dev/null 2>&1; then
    zsh -n "$inst/usr/share/zsh/vendor-completions/_nsrun" || die "zsh completion does not parse"
fi
grep -qx "profile nsrun /usr/bin/nsrun flags=(unconfined) {" "$inst/usr/share/nsrun/apparmor/nsrun" ||
    die "the AppArmor profile does not attach to /usr/bin/nsrun"
[[ "$(readlink "$inst/usr/bin/bwrap")" == nsrun ]] || die "nsrun-bwrap's /usr/bin/bwrap is not a link to nsrun"
"$inst/usr/bin/bwrap" --version | grep -q nsrun || die "bwrap --version does not name nsrun"
say "installed files: --version $version, man page $man_page, completions, AppArmor profile, bwrap link"

# One sandboxed command from the installed binary: it writes its workspace
# and is refused a file outside it; the host shows both.
sandboxed() { # USER ("" = root)
    local who=$1 ws out
    ws=$(mktemp -d "$work/ws.XXXXXX")
    out=$(mktemp -d "$work/out.XXXXXX")
    chmod 0777 "$ws" "$out"
    as() { if [[ -n "$who" ]]; then (cd / && runuser -u "$who" -- "$@"); else (cd / && "$@"); fi; }
    as "$nsrun" --workspace "$ws" --home ro -- sh -c "echo in >'$ws/inside'; echo out >'$out/outside'" \
        >/dev/null 2>&1 || true
    [[ "$(cat "$ws/inside" 2>/dev/null)" == in ]] || die "${who:-root}: the sandboxed command could not write its workspace"
    [[ ! -e "$out/outside" ]] || die "${who:-root}: the sandboxed command wrote outside its workspace"
    as "$inst/usr/bin/bwrap" --ro-bind / / --proc /proc --dev /dev --unshare-pid -- /bin/true ||
        die "${who:-root}: bwrap (nsrun) --ro-bind / / --proc /proc --dev /dev --unshare-pid true failed"
    say "${who:-root}: the installed nsrun wrote its workspace and was refused $out"
}
sandboxed ""
if id nsrun-test >/dev/null 2>&1; then
    sandboxed nsrun-test
else
    say "SKIP: no user nsrun-test, the unprivileged run is not checked (tools/run-tests.sh creates it)"
fi

((keep)) || rm -rf -- "$work"
say "ok"

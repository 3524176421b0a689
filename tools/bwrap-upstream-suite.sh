#!/usr/bin/env bash
# Runs bubblewrap's own test suite (tests/test-run.sh, test-seccomp.py,
# test-specifying-userns.sh, test-specifying-pidns.sh of a bubblewrap
# checkout) against nsrun installed as `bwrap`, and ends with one line
# "N passed, N failed, N skipped" (TAP "ok" lines; a script that stops early
# counts as one more failure).
#
#   tools/bwrap-upstream-suite.sh [OPTIONS] CHECKOUT
#
#   CHECKOUT        a bubblewrap source tree (its tests/ is what runs; nothing
#                   of it is built or copied into this repository)
#   --nsrun PATH    the nsrun binary (default: build/nsrun)
#   --bwrap PATH    run the suite against this bwrap instead (e.g.
#                   /usr/bin/bwrap, to compare)
#   --as USER       run it as USER (e.g. nsrun-test); nsrun is copied to a
#                   world-readable temporary directory for that
#   --install KIND  how nsrun is installed as `bwrap`: symlink (default),
#                   hardlink or copy
#   --builddir DIR  a directory holding tests/try-syscall, the helper
#                   test-seccomp.py needs (bubblewrap's own build has it);
#                   without it the seccomp tests are skipped
#
# Needs: bash, capsh/getpcaps (libcap2-bin), Debian's python3 with the
# seccomp module (python3-seccomp) for test-seccomp.py; with python3-tap it
# reports each of its 6 cases, without it one line for all. strace, where
# installed, adds test-run.sh's fault-injection case. KEEP=1 keeps the
# logs (the temporary directory named at the start).
set -euo pipefail

say() { printf 'bwrap-upstream-suite: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 2; }
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
nsrun="$root/build/nsrun"
bwrap=""
as_user=""
install_kind=symlink
builddir=""
checkout=""
while (($#)); do
    case "$1" in
        --nsrun) nsrun=${2:?}; shift ;;
        --bwrap) bwrap=${2:?}; shift ;;
        --as) as_user=${2:?}; shift ;;
        --install) install_kind=${2:?}; shift ;;
        --builddir) builddir=${2:?}; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) usage >&2; die "unknown option: $1" ;;
        *) [[ -z "$checkout" ]] || die "one checkout only"; checkout=$1 ;;
    esac
    shift
done
[[ -n "$checkout" ]] || { usage >&2; die "no bubblewrap checkout given"; }
checkout=$(cd -- "$checkout" && pwd -P)
[[ -f "$checkout/tests/test-run.sh" && -f "$checkout/tests/libtest.sh" ]] ||
    die "$checkout is not a bubblewrap checkout (no tests/test-run.sh)"

work=$(mktemp -d /tmp/bwrap-upstream.XXXXXX)
say "logs in $work"

trap '[[ -n "${KEEP:-}" ]] || rm -rf -- "$work"' EXIT
chmod 755 "$work"

if [[ -z "$bwrap" ]]; then
    [[ -x "$nsrun" ]] || die "$nsrun is not executable (build first: tools/build.sh)"
    install -m 755 "$nsrun" "$work/nsrun"
    case "$install_kind" in
        symlink) ln -s nsrun "$work/bwrap" ;;
        hardlink) ln "$work/nsrun" "$work/bwrap" ;;
        copy) install -m 755 "$work/nsrun" "$work/bwrap" ;;
        *) die "--install takes symlink, hardlink or copy" ;;
    esac
    bwrap="$work/bwrap"
    say "nsrun $("$work/nsrun" --version | head -1), installed as bwrap by $install_kind"
else
    say "against $bwrap ($("$bwrap" --version 2>&1 | head -1))"
fi

helpers="$work/helpers"
mkdir -p "$helpers/tests"
if [[ -n "$builddir" ]]; then
    [[ -x "$builddir/tests/try-syscall" ]] || die "$builddir/tests/try-syscall is missing"
    install -m 755 "$builddir/tests/try-syscall" "$helpers/tests/try-syscall"
fi

runner=()
if [[ -n "$as_user" ]]; then
    id "$as_user" >/dev/null 2>&1 || die "no user $as_user"
    runner=(runuser -u "$as_user" --)
fi

passed=0 failed=0 skipped=0
run_script() {
    local name=$1; shift
    local log="$work/$name.log" rc=0
    (cd /tmp && "${runner[@]}" env BWRAP="$bwrap" G_TEST_SRCDIR="$checkout" G_TEST_BUILDDIR="$helpers" \
        PATH="/usr/sbin:/usr/bin:/sbin:/bin" "$@") >"$log" 2>"$work/$name.err" || rc=$?
    local ok skip notok
    ok=$(grep -cE '^ok( |$)' "$log" || true)
    skip=$(grep -cE '^ok .*# *SKIP' "$log" || true)
    notok=$(grep -cE '^not ok' "$log" || true)
    ok=$((ok - skip))
    if ((rc != 0 && notok == 0)); then
        notok=1
        say "$name stopped early (exit $rc); last lines of its trace:"
        tail -n 15 "$work/$name.err" | sed 's/^/    /' >&2
    elif ((notok > 0)); then
        grep -E '^not ok' "$log" | sed 's/^/    /' >&2
    fi
    say "$name: $ok passed, $notok failed, $skip skipped"
    passed=$((passed + ok)) failed=$((failed + notok)) skipped=$((skipped + skip))
}

run_script test-run.sh bash "$checkout/tests/test-run.sh"
if [[ -x "$helpers/tests/try-syscall" ]] && /usr/bin/python3 -c 'import seccomp' 2>/dev/null; then
    run_script test-seccomp.py /usr/bin/python3 "$checkout/tests/test-seccomp.py"
else
    say "SKIPPED test-seccomp.py: needs --builddir with tests/try-syscall and python3-seccomp"
    skipped=$((skipped + 1))
fi
run_script test-specifying-userns.sh bash "$checkout/tests/test-specifying-userns.sh"
run_script test-specifying-pidns.sh bash "$checkout/tests/test-specifying-pidns.sh"

printf '%d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
((failed == 0))

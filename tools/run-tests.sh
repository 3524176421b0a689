#!/usr/bin/env bash
# One command that does everything on a fresh Debian 12 machine (run as root):
# installs what is missing, builds ./build and ./build-static, then runs every
# Catch2 test binary twice, as root and as the unprivileged user nsrun-test,
# then the soak (tools/soak.sh) as each user and the fuzzers (tools/fuzz.sh),
# and ends with one line "N passed, N failed[, N skipped]".
#
#   tools/run-tests.sh [--quick] [--root-only] [--soak N] [--setup-kills N] [--fuzz SECONDS] [-- CATCH2-ARGS...]
#
#   --quick         skip the static build and the fuzzers (the suites then run
#                   without nsrun-static)
#   --root-only     skip the runs as nsrun-test (for debugging)
#   --soak N        launches of the soak per user (default 300; 0: none)
#   --setup-kills N launches per user, in the soak, whose PID 1 or command
#                   is SIGKILLed at a random instant of set-up (default
#                   1000; 0: none; see tools/nsrun-killer.cpp)
#   --fuzz SECONDS  run time of each fuzzer (default 20; 0: none)
#   -- ARGS         passed to every Catch2 binary, e.g. -- '[mount]' or a test
#                   name; the soak and the fuzzers are then left out unless
#                   asked for with --soak / --setup-kills / --fuzz
#
# Environment: NSRUN_TEST_REQUIRE is passed through to the suites (CI sets it
# to "userns"); NSRUN_TEST_TIMEOUT is the limit for one binary run in seconds
# (default 900).
set -euo pipefail

readonly TEST_USER=nsrun-test
readonly TIMEOUT=${NSRUN_TEST_TIMEOUT:-900}

say() { printf 'run-tests: %s\n' "$*"; }
die() { printf 'run-tests: ERROR: %s\n' "$*" >&2; exit 1; }

usage() {
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
}

quick=0
root_only=0
soak=""
setup_kills=""
fuzz=""
catch_args=()
while (($#)); do
    case "$1" in
        --quick) quick=1 ;;
        --root-only) root_only=1 ;;
        --soak) soak=${2:-}; shift ;;
        --setup-kills) setup_kills=${2:-}; shift ;;
        --fuzz) fuzz=${2:-}; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; catch_args=("$@"); break ;;
        *) usage >&2; die "unknown argument: $1 (Catch2 arguments go after --)" ;;
    esac
    shift
done

[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "NSRUN_TEST_TIMEOUT must be a number of seconds, got '$TIMEOUT'"
# Defaults: both in a full run; the soak with --quick too; neither when
# Catch2 arguments pick tests.
if [[ -z "$soak" ]]; then
    soak=$(( ${#catch_args[@]} ? 0 : 300 ))
fi
if [[ -z "$setup_kills" ]]; then
    setup_kills=$(( ${#catch_args[@]} ? 0 : 1000 ))
fi
if [[ -z "$fuzz" ]]; then
    fuzz=$(( ${#catch_args[@]} || quick ? 0 : 20 ))
fi
[[ "$soak" =~ ^[0-9]+$ ]] || die "--soak needs a number of launches, got '$soak'"
[[ "$setup_kills" =~ ^[0-9]+$ ]] || die "--setup-kills needs a number of launches, got '$setup_kills'"
[[ "$fuzz" =~ ^[0-9]+$ ]] || die "--fuzz needs a number of seconds, got '$fuzz'"
# The set-up kills run inside the soak.
if ((setup_kills)) && [[ "$soak" == 0 ]]; then
    soak=1
fi

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd -- "$root"

[[ "$(id -u)" == 0 ]] || die "run me as root: I install packages, create the user $TEST_USER and run the suites as root and as that user"

# ---------------------------------------------------------------- prepare
if ((fuzz)); then
    bash "$root/tools/install-deps.sh" --test --fuzz
else
    bash "$root/tools/install-deps.sh" --test
fi
say "building ./build"
bash "$root/tools/build.sh"
if ((!quick)); then
    say "building ./build-static"
    bash "$root/tools/build.sh" --static
fi

if ((!root_only)) && ! id -u "$TEST_USER" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$TEST_USER" ||
        die "could not create the user $TEST_USER"
    say "created user $TEST_USER"
fi

# The checkout may sit where $TEST_USER cannot enter (e.g. under /root), so
# both users run the same copies from a fresh world-readable directory.
base=""
for d in /tmp /var/tmp; do
    if [[ -d "$d" && -w "$d" ]] && ! findmnt -no OPTIONS -T "$d" | grep -Eq '(^|,)noexec(,|$)'; then
        base=$d
        break
    fi
done
[[ -n "$base" ]] || die "no executable temporary directory (/tmp and /var/tmp are noexec or missing)"

work=$(mktemp -d "$base/nsrun-tests.XXXXXX")
cleanup() {
    cd /
    rm -rf --one-file-system -- "$work" || printf 'run-tests: warning: could not remove %s\n' "$work" >&2
}
trap cleanup EXIT
# The suites run under timeout(1), which puts them in a process group of their
# own, out of reach of a terminal's Ctrl-C: pass INT/TERM on to that group.
running_pid=""
on_signal() {
    trap '' INT TERM
    if [[ -n "$running_pid" ]]; then
        printf '\nrun-tests: interrupted, stopping the running suite\n' >&2
        kill -TERM "$running_pid" 2>/dev/null || true
        wait "$running_pid" 2>/dev/null || true
    fi
    exit "$1"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
chmod 755 "$work"

bin=$work/bin
mkdir -m 755 "$bin"

# Every Catch2 suite: each executable build/tests/*_tests, unit tests first.
suites=(unit_tests integration_tests)
for s in "${suites[@]}"; do
    [[ -f "build/tests/$s" && -x "build/tests/$s" ]] || die "build/tests/$s was not built"
done
for f in build/tests/*_tests; do
    s=${f##*/}
    if [[ -f "$f" && -x "$f" && "$s" != unit_tests && "$s" != integration_tests ]]; then
        suites+=("$s")
    fi
done

copy() { # copy SRC [NAME]
    [[ -f "$1" && -x "$1" ]] || die "$1 was not built"
    install -m 755 -- "$1" "$bin/${2:-${1##*/}}"
}
for s in "${suites[@]}"; do
    copy "build/tests/$s"
done
copy build/nsrun
copy build/tools/nsrun-probe
copy build/tools/nsrun-killer
copy build/tests/nsrun-container-like
# The bench's floor and floor-sandbox rows look for nsrun-floor-<libc> and
# nsrun-floor-sandbox-<libc> beside nsrun.
for f in build/tools/nsrun-floor-glibc build/tools/nsrun-floor-musl \
         build/tools/nsrun-floor-sandbox-glibc build/tools/nsrun-floor-sandbox-musl; do
    if [[ -x "$f" ]]; then copy "$f"; fi
done
install -m 755 -- tools/soak.sh "$bin/soak.sh"
if ((!quick)); then
    copy build-static/nsrun nsrun-static
fi

users=(root)
((root_only)) || users+=("$TEST_USER")

# A scratch directory owned by each user: cwd, TMPDIR and (for the
# unprivileged user) HOME.
for u in "${users[@]}"; do
    d=$work/scratch-$u
    mkdir -m 700 "$d" "$d/tmp" "$d/home"
    chown -R "$u:" "$d"
done

# ---------------------------------------------------------------- run
total_passed=0
total_failed=0
total_skipped=0
bad_exit=0
results=()

# parse_summary LOG: sets passed/failed/skipped/summary from Catch2's closing
# line. Catch2 3.7 ends with one of (console reporter):
#   All tests passed (3 assertions in 2 test cases)       (singular: 1 assertion in 1 test case)
#   test cases: 5 | 2 passed | 1 failed | 2 skipped       (zero parts are left out)
#   test cases: 1 | 1 skipped                             (all skipped; exit code 4)
#   test cases: 4 | 1 passed | 1 skipped | 2 failed as expected   ([!shouldfail]/[!mayfail])
#   No tests ran                                          (filter matched nothing; exit code 2)
parse_summary() {
    local line field n rest total
    passed=0 failed=0 skipped=0 summary=none
    line=$(grep -Ei '^(All tests passed \(|test cases: |No tests ran[[:space:]]*$)' "$1" | tail -n 1) || true
    line=${line%$'\r'}
    shopt -s nocasematch
    if [[ "$line" =~ ^All\ tests\ passed\ \(.*\ in\ ([0-9]+)\ test\ cases?\) ]]; then
        passed=${BASH_REMATCH[1]}
        summary=ok
    elif [[ "$line" =~ ^test\ cases:\ *([0-9]+)(.*)$ ]]; then
        total=${BASH_REMATCH[1]}
        rest=${BASH_REMATCH[2]}
        summary=ok
        while [[ "$rest" =~ ^[[:space:]]*\|[[:space:]]*([0-9]+)\ ([a-z ]*[a-z])[[:space:]]*(.*)$ ]]; do
            n=${BASH_REMATCH[1]}
            field=${BASH_REMATCH[2]}
            rest=${BASH_REMATCH[3]}
            case "$field" in
                passed) passed=$((passed + n)) ;;
                failed) failed=$((failed + n)) ;;
                skipped) skipped=$((skipped + n)) ;;
                "failed as expected") passed=$((passed + n)) ;;
                *) say "warning: unknown Catch2 summary part '$n $field'" ;;
            esac
        done
        if ((passed + failed + skipped < total)); then
            say "warning: summary '$line' accounts for only $((passed + failed + skipped)) of $total test cases; counting the rest as failed"
            failed=$((total - passed - skipped))
        fi
    elif [[ "$line" =~ ^No\ tests\ ran ]]; then
        summary=none-ran
    fi
    shopt -u nocasematch
}

# as_user USER: fills the caller's array `cmd` with the prefix that runs a
# command as USER under the time limit, in USER's scratch HOME and TMPDIR.
as_user() {
    local u=$1 d=$work/scratch-$1
    cmd=(timeout --kill-after=30 "$TIMEOUT")
    if [[ "$u" == root ]]; then
        cmd+=(env TMPDIR="$d/tmp")
    else
        cmd+=(setpriv --reuid="$u" --regid="$u" --init-groups --
              env -u XDG_RUNTIME_DIR -u MAIL HOME="$d/home" USER="$u" LOGNAME="$u" TMPDIR="$d/tmp")
    fi
}

run_suite() { # run_suite USER SUITE
    local u=$1 s=$2 d=$work/scratch-$1 log rc rc0 note
    log=$work/$u-$s.log
    local -a cmd
    as_user "$u"
    cmd+=("$bin/$s" --reporter console --colour-mode none "${catch_args[@]}")

    printf '\n===== %s as %s =====\n' "$s" "$u"
    # Output goes to the terminal and to $log through tee; the suite runs in
    # the background so that a signal to this script is handled at once.
    local fifo=$work/$u-$s.fifo tee_pid
    mkfifo -m 600 "$fifo"
    tee "$log" <"$fifo" &
    tee_pid=$!
    (cd -- "$d" && exec "${cmd[@]}" </dev/null) >"$fifo" 2>&1 &
    running_pid=$!
    rc=0
    wait "$running_pid" || rc=$?
    running_pid=""
    wait "$tee_pid" || true
    rm -f -- "$fifo"
    rc0=$rc

    parse_summary "$log"
    note=""
    case "$summary" in
        none)
            failed=$((failed + 1))
            note="crashed or printed no Catch2 summary; counted as 1 failed"
            ;;
        none-ran)
            if ((${#catch_args[@]})); then
                note="no test matched the arguments"
                ((rc == 2)) && rc=0
            else
                failed=$((failed + 1))
                note="ran no test; counted as 1 failed"
            fi
            ;;
    esac
    # Catch2 exits 4 when every test case was skipped: not a failure by itself.
    if ((rc == 4 && failed == 0 && passed == 0 && skipped > 0)); then
        rc=0
    fi
    if ((rc != 0)); then
        bad_exit=1
        case "$rc" in
            124|137) note="${note:+$note; }timed out after ${TIMEOUT}s" ;;
            *) ((rc > 128)) && note="${note:+$note; }killed by signal $((rc - 128))" ;;
        esac
        if ((failed == 0)); then
            failed=1
            note="${note:+$note; }exit code $rc with no failed test case; counted as 1 failed"
        fi
    fi

    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
    total_skipped=$((total_skipped + skipped))
    results+=("$(printf '%-8s %-11s %-20s %4d passed, %d failed, %d skipped (exit %d)%s' \
        "$([[ $failed -eq 0 ]] && echo ok || echo FAIL)" "$u" "$s" \
        "$passed" "$failed" "$skipped" "$rc0" "${note:+ - $note}")")
}

if ((!root_only)); then
    # Fail early and clearly if the user cannot reach the copies.
    setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups -- test -x "$bin/${suites[0]}" ||
        die "$TEST_USER cannot execute $bin/${suites[0]}"
fi

say "suites: ${suites[*]}; users: ${users[*]}; binaries in $bin"
for u in "${users[@]}"; do
    for s in "${suites[@]}"; do
        run_suite "$u" "$s"
    done
done

# run_step USER NAME CMD...: a script that ends with "N passed, N failed";
# its counts join the totals (a missing line or a bad exit counts 1 failed).
run_step() {
    local u=$1 name=$2 d=$work/scratch-$1 log rc=0 line p=0 f=0 note=""
    shift 2
    log=$work/$u-$name.log
    local -a cmd
    as_user "$u"
    printf '\n===== %s as %s =====\n' "$name" "$u"
    local fifo=$work/$u-$name.fifo tee_pid
    mkfifo -m 600 "$fifo"
    tee "$log" <"$fifo" &
    tee_pid=$!
    (cd -- "$d" && exec "${cmd[@]}" "$@" </dev/null) >"$fifo" 2>&1 &
    running_pid=$!
    wait "$running_pid" || rc=$?
    running_pid=""
    wait "$tee_pid" || true
    rm -f -- "$fifo"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1) || true
    if [[ "$line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
    else
        note="printed no summary"
    fi
    if ((rc != 0 && f == 0)); then
        f=1
        note="${note:+$note; }exit code $rc with no failure counted; counted as 1 failed"
    fi
    ((rc != 0)) && bad_exit=1
    total_passed=$((total_passed + p))
    total_failed=$((total_failed + f))
    results+=("$(printf '%-8s %-11s %-20s %4d passed, %d failed (exit %d)%s' \
        "$([[ $f -eq 0 ]] && echo ok || echo FAIL)" "$u" "$name" "$p" "$f" "$rc" "${note:+ - $note}")")
}

# The soak: launches with random SIGKILLs on both rungs (and SIGKILLs at
# random instants of set-up, --setup-kills), then nothing of nsrun's may
# be left on the host (tools/soak.sh). NSRUN_TEST_REQUIRE tells
# it which rungs must be usable.
if ((soak)); then
    for u in "${users[@]}"; do
        run_step "$u" soak bash "$bin/soak.sh" --launches "$soak" --nsrun "$bin/nsrun" \
            --setup-kills "$setup_kills" --killer "$bin/nsrun-killer"
    done
fi
# The fuzzers (tools/fuzz.sh), as root: they run no sandbox.
if ((fuzz)); then
    run_step root fuzz bash "$root/tools/fuzz.sh" "$fuzz"
fi

printf '\n===== summary =====\n'
printf '%s\n' "${results[@]}"
final="$total_passed passed, $total_failed failed"
((total_skipped > 0)) && final+=", $total_skipped skipped"
printf '%s\n' "$final"

if ((total_failed > 0 || bad_exit)); then
    exit 1
fi
if ((total_passed + total_skipped == 0)); then
    say "no test case ran at all (do the arguments after -- match any test?)" >&2
    exit 1
fi
exit 0

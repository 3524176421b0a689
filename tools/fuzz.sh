#!/usr/bin/env bash
# Build the libFuzzer harnesses (tests/fuzz) in ./build-fuzz with clang,
# ASan and UBSan, and run each for SECONDS (default 60) on a copy of its
# seed corpus (tests/fuzz/corpus/NAME). Ends with one line per harness and
# "N passed, N failed".
#
#   tools/fuzz.sh [SECONDS] [NAME...]
#
#   NAME   policy_json, native_cli, bwrap_args, env_glob, seccomp_programs,
#          http_head, socks, tls_hello, dns_query, dns_reply, git_config
#          (default: all)
#
# A crash, a sanitizer report, a broken property or a hang (over 10 s for
# one input) fails the run; the input is kept in build-fuzz/artifacts/ and
# replays with `build-fuzz/tests/fuzz/fuzz_NAME FILE`. Environment:
# NSRUN_FUZZ_ARGS adds libFuzzer options (e.g. -seed=1); NSRUN_FUZZ_CXX is
# the compiler (default clang++-19, from tools/install-deps.sh --fuzz).
set -euo pipefail

readonly ALL=(policy_json native_cli bwrap_args env_glob seccomp_programs http_head socks tls_hello dns_query dns_reply git_config)
say() { printf 'fuzz: %s\n' "$*"; }
die() { printf 'fuzz: ERROR: %s\n' "$*" >&2; exit 1; }

seconds=60
if (($#)) && [[ "$1" =~ ^[0-9]+$ ]]; then
    seconds=$1
    shift
fi
case "${1:-}" in -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;; esac
((seconds > 0)) || die "SECONDS must be a positive number"
names=("$@")
((${#names[@]})) || names=("${ALL[@]}")
for n in "${names[@]}"; do
    [[ " ${ALL[*]} " == *" $n "* ]] || die "unknown harness '$n' (one of: ${ALL[*]})"
done

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd -- "$root"
cxx=${NSRUN_FUZZ_CXX:-clang++-19}
command -v "$cxx" >/dev/null 2>&1 || die "$cxx not found; run tools/install-deps.sh --fuzz as root first"

dir=build-fuzz
if [[ ! -f "$dir/build.ninja" ]]; then
    # debugoptimized: assertions stay on, -O2 keeps the fuzzer fast.
    CXX=$cxx meson setup --wipe "$dir" -Dbuildtype=debugoptimized -Dfuzz=true -Dtests=false -Dstatic=false \
        >"$root/$dir.setup.log" 2>&1 || { cat "$root/$dir.setup.log" >&2; die "meson setup $dir failed"; }
    rm -f -- "$root/$dir.setup.log"
fi
# The -g of debugoptimized would otherwise put the checkout path in the
# cache key: CI builds in a fresh clone elsewhere.
CCACHE_NOHASHDIR=true ninja -C "$dir" "${names[@]/#/tests/fuzz/fuzz_}" || die "build in $root/$dir failed"

# Stack traces with function names and lines: any llvm-symbolizer will do
# (clang-19 does not bring one; without it the traces are addresses).
if [[ -z "${ASAN_SYMBOLIZER_PATH:-}" ]]; then
    for s in /usr/lib/llvm-19/bin/llvm-symbolizer /usr/bin/llvm-symbolizer /usr/lib/llvm-*/bin/llvm-symbolizer; do
        if [[ -x "$s" ]]; then
            export ASAN_SYMBOLIZER_PATH=$s
            break
        fi
    done
fi
artifacts=$root/$dir/artifacts
mkdir -p "$artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/nsrun-fuzz.XXXXXX")
trap 'rm -rf -- "$work"' EXIT

extra=()
[[ -n "${NSRUN_FUZZ_ARGS:-}" ]] && read -r -a extra <<<"$NSRUN_FUZZ_ARGS"
passed=0 failed=0 lines=()
for n in "${names[@]}"; do
    corpus=$work/$n
    mkdir "$corpus"
    log=$work/$n.log
    say "running $n for ${seconds}s"
    rc=0
    # New inputs go to the copy (the first directory); the seeds stay as they are.
    ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$dir/tests/fuzz/fuzz_$n" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="$artifacts/$n-" "${extra[@]}" \
        "$corpus" "tests/fuzz/corpus/$n" </dev/null >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1 || true)
    if ((rc == 0)); then
        passed=$((passed + 1))
        lines+=("$(printf 'ok    %-17s %s executions (%s/s), %s, corpus %s files' "$n" "${execs:-?}" "${rate:-?}" "${cov:-cov: ?}" "$(ls "$corpus" | wc -l)")")
    else
        failed=$((failed + 1))
        grep -E '^(==[0-9]+==|SUMMARY|fuzz: property|artifact_prefix|Test unit written|.*runtime error)' "$log" | head -n 20 >&2 || true
        tail -n 30 "$log" >&2
        lines+=("$(printf 'FAIL  %-17s exit %d after %s executions; input kept in %s' "$n" "$rc" "${execs:-?}" "$artifacts/")")
    fi
done
printf '%s\n' "${lines[@]}"
printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))

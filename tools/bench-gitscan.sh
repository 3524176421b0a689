#!/usr/bin/env bash
# What the git scan after a direct-mode run costs (docs/hardening.md, "Git
# directories anywhere in a writable root"). First the scan alone
# (build/tools/nsrun-gitscan: scan_git_armed() over the workspace, R
# rounds, median), then `nsrun -- true` in a workspace
# of N files (default 100,000: N/F directories of F files, F default 10,
# in a tree two levels deep, plus one nested repository), timed with the
# scan and with `--unprotect .git/config` (which turns the scan off and
# changes nothing else of the launch), alternating, R rounds (default 21).
# Prints each round and the medians; the difference of the medians is the
# scan. The page cache is warm (the tree is walked once before).
#
#   tools/bench-gitscan.sh [--nsrun PATH] [--runs R] [--files N] [--per-dir F]
set -euo pipefail
nsrun=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)/build/nsrun
runs=21
files=100000
per=10
while (($#)); do
    case "$1" in
        --nsrun) nsrun=$(realpath -- "$2"); shift ;;
        --runs) runs=$2; shift ;;
        --files) files=$2; shift ;;
        --per-dir) per=$2; shift ;;
        *) echo "usage: ${0##*/} [--nsrun PATH] [--runs N] [--files N] [--per-dir F]" >&2; exit 2 ;;
    esac
    shift
done
((runs >= 1 && files >= per && per >= 1)) || { echo "bench-gitscan: --runs >= 1, --files >= --per-dir >= 1" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-gitscan.XXXXXX")
trap 'rm -rf -- "$dir"' EXIT
ws=$dir/ws
dirs=$((files / per))
top=$(( (dirs + 99) / 100 ))
mkdir -p "$ws"
# $top directories of up to 100 directories of $per files.
python3 - "$ws" "$dirs" "$per" <<'EOF'
import os, sys
ws, dirs, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range(dirs):
    p = os.path.join(ws, "t%03d" % (d // 100), "d%02d" % (d % 100))
    os.makedirs(p, exist_ok=True)
    for f in range(per):
        with open(os.path.join(p, "f%d" % f), "w") as fh:
            fh.write("x\n")
EOF
git -C "$ws/t000" init -q 2>/dev/null || true
find "$ws" >/dev/null
echo "bench-gitscan: $files files in $dirs directories (+$top), nsrun $nsrun"
"$(dirname -- "$nsrun")/tools/nsrun-gitscan" "$ws" "$runs" | tail -1
time_ms() {
    local t0=$EPOCHREALTIME
    (cd "$ws" && "$nsrun" "$@" -- true) || { echo "bench-gitscan: nsrun failed" >&2; exit 1; }
    local t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'
}
with=() without=()
printf '%6s %12s %12s\n' round scan-ms no-scan-ms
for ((i = 1; i <= runs; i++)); do
    a=$(time_ms)
    b=$(time_ms --unprotect .git/config)
    with+=("$a") without+=("$b")
    printf '%6d %12.2f %12.2f\n' "$i" "$a" "$b"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mw=$(median "${with[@]}")
mo=$(median "${without[@]}")
printf 'median: with the scan %.2f ms, without %.2f ms, the scan %.2f ms\n' "$mw" "$mo" "$(awk -v a="$mw" -v b="$mo" 'BEGIN { print a - b }')"

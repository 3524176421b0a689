#!/usr/bin/env bash
# `nsrun commit` of N changed files (default 10,000: 100 directories of 100
# files of 1 KiB) against `cp -a` of the same files (the target:
# commit at most 2x cp -a). Each round: a copy-on-write run rewrites every
# file of a fresh workspace (not timed); then, each after a `sync` that is
# waited for (so no timed operation pays for the writeback of what came
# before it), `cp -a` copies
# the run's upper directory into an empty directory (timed), `cp -a`
# followed by `sync` does it again (timed: a durable copy, shown for
# information), and `nsrun commit` applies the run to the workspace (timed;
# it ends with one syncfs, so what it reports applied is on disk). All read
# the same files, warm in the page cache. Prints each round side by side,
# the medians, and the medians of the paired ratios (commit / cp -a of the
# same round, the target; commit / durable copy, for information), which a
# loaded machine disturbs least.
#
#   tools/bench-commit.sh [--nsrun PATH] [--runs N] [--files N]
set -euo pipefail
nsrun=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)/build/nsrun
runs=9
files=10000
while (($#)); do
    case "$1" in
        --nsrun) nsrun=$(realpath -- "$2"); shift ;;
        --runs) runs=$2; shift ;;
        --files) files=$2; shift ;;
        *) echo "usage: ${0##*/} [--nsrun PATH] [--runs N] [--files N]" >&2; exit 2 ;;
    esac
    shift
done
((runs >= 1 && files >= 100)) || { echo "bench-commit: --runs >= 1, --files >= 100" >&2; exit 2; }
dirs=$((files / 100))
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-commit.XXXXXX")
trap 'chmod -R u+rwX -- "$dir" 2>/dev/null; rm -rf -- "$dir"' EXIT
mkdir -m 0700 "$dir/cow"
# The layer commands find the run by --cow-dir; nothing lands in the
# caller's own run directory.
export XDG_RUNTIME_DIR= XDG_STATE_HOME="$dir/state"

# A workspace of $dirs directories of 100 files of 1 KiB each.
make_workspace() {
    mkdir "$1"
    python3 - "$1" "$dirs" <<'EOF'
import os, sys
root, dirs = sys.argv[1], int(sys.argv[2])
block = bytes(range(256)) * 4
for d in range(dirs):
    sub = os.path.join(root, f"d{d:03}")
    os.mkdir(sub)
    for f in range(100):
        with open(os.path.join(sub, f"f{f:03}"), "wb") as out:
            out.write(block)
EOF
}

now_ns() { date +%s%N; }
ms() { echo "scale=1; $1 / 1000000" | bc; }
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

settle() { sync; }

printf 'load average at start: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %10s %10s %12s %9s %12s\n' round "commit ms" "cp -a ms" "cp+sync ms" "c/cp -a" "c/cp+sync"
commit_t=() copy_t=() durable_t=() ratios=() dratios=()
for ((i = 1; i <= runs; i++)); do
    ws="$dir/ws$i"
    make_workspace "$ws"
    # Let the coarse clock pass the files' ctime (a file changed in the
    # run's first tick counts as a conflict, docs/hardening.md).
    sleep 0.05
    err=$(cd "$ws" && "$nsrun" --workspace-mode cow --cow-dir "$dir/cow" -- \
        /bin/sh -c 'for f in d*/f*; do printf x >> "$f"; done' 2>&1 >/dev/null)
    id=$(printf '%s\n' "$err" | sed -n 's/^nsrun: run \([0-9a-f]\{12\}\):.*/\1/p' | head -n 1)
    [[ -n $id ]] || { echo "bench-commit: no run id: $err" >&2; exit 1; }

    settle
    t0=$(now_ns)
    cp -a "$dir/cow/$id/upper/." "$dir/copy$i"
    t1=$(now_ns)
    settle
    t2=$(now_ns)
    cp -a "$dir/cow/$id/upper/." "$dir/durable$i"
    sync
    t3=$(now_ns)
    settle
    t4=$(now_ns)
    (cd "$ws" && "$nsrun" commit "$id" --cow-dir "$dir/cow" >/dev/null 2>"$dir/commit.err") ||
        { echo "bench-commit: commit failed:" >&2; cat "$dir/commit.err" >&2; exit 1; }
    t5=$(now_ns)
    changed=$(grep -o '[0-9]* applied' "$dir/commit.err" | cut -d' ' -f1)
    ((changed == files)) || { echo "bench-commit: $changed of $files applied" >&2; exit 1; }

    p=$((t1 - t0)) d=$((t3 - t2)) c=$((t5 - t4))
    commit_t+=("$c") copy_t+=("$p") durable_t+=("$d")
    r=$(echo "scale=3; $c / $p" | bc) rd=$(echo "scale=3; $c / $d" | bc)
    ratios+=("$r") dratios+=("$rd")
    printf '%-6s %10s %10s %12s %8sx %11sx\n' "$i" "$(ms "$c")" "$(ms "$p")" "$(ms "$d")" "$r" "$rd"
    "$nsrun" discard "$id" --cow-dir "$dir/cow" 2>/dev/null
    rm -rf -- "$ws" "$dir/copy$i" "$dir/durable$i"
done
printf '%-6s %10s %10s %12s %8sx %11sx\n' median \
    "$(ms "$(printf '%s\n' "${commit_t[@]}" | median)")" "$(ms "$(printf '%s\n' "${copy_t[@]}" | median)")" \
    "$(ms "$(printf '%s\n' "${durable_t[@]}" | median)")" \
    "$(printf '%s\n' "${ratios[@]}" | median)" "$(printf '%s\n' "${dratios[@]}" | median)"
printf '(%d files; ratios: medians of the paired ratios; target: commit / cp -a <= 2)\n' "$files"
printf 'load average at end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"

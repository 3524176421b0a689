#!/usr/bin/env bash
# Soak: many launches of nsrun on both rungs whose payload starts children
# and daemonises one (setsid and a double fork), with SIGKILLs of nsrun and
# of the command at random moments; then checks that nothing of nsrun's is
# left on the host: no process of the payload (each launch's processes carry
# a marker in their environment and argv), no new mount in this mount
# namespace, no entry left in TMPDIR (the Landlock rung's private
# directories), no descriptor gained by this shell.
#
#   tools/soak.sh [--launches N] [--seed N] [--rungs LIST] [--nsrun PATH]
#                 [--setup-kills N] [--killer PATH]
#
#   --launches N   launches in all, alternating between the rungs (default 300)
#   --seed N       the random choices (what to kill, when); printed, so a
#                  failure replays with the same --seed (default: random)
#   --rungs LIST   namespaces,landlock (default); a rung the host cannot
#                  use is skipped loudly (a failure when NSRUN_TEST_REQUIRE
#                  names it: "userns" for namespaces, "landlock")
#   --nsrun PATH   the binary (default: build/nsrun of this checkout)
#   --setup-kills N  then N launches more, split between the rungs, each
#                  with a SIGKILL of the sandbox's first process (PID 1; the
#                  supervisor on the Landlock rung) or of the command's
#                  process at a random microsecond of its set-up, by
#                  tools/nsrun-killer (see its head comment for the three
#                  endings allowed: 125 with one line "nsrun: set-up: ...",
#                  137 when the kill came after the exec, 0 when it came
#                  after the end); default 0
#                  (on the namespace rung a tenth more through the bwrap
#                  dialect, which must pass each death on silently, 137)
#   --killer PATH  that killer (default: build/tools/nsrun-killer)
#
# Each launch: 30 % nsrun is SIGKILLed, 30 % the command is, 0-150 ms after
# the start; the rest end by themselves after 0-100 ms, leaving their
# children to nsrun. Ends with one line per rung and "N passed, N failed".
set -euo pipefail

say() { printf 'soak: %s\n' "$*"; }
die() { printf 'soak: ERROR: %s\n' "$*" >&2; exit 2; }

launches=300
seed=""
rungs_arg=namespaces,landlock
nsrun=""
setup_kills=0
killer=""
while (($#)); do
    case "$1" in
        --launches) launches=${2:?}; shift ;;
        --seed) seed=${2:?}; shift ;;
        --rungs) rungs_arg=${2:?}; shift ;;
        --nsrun) nsrun=${2:?}; shift ;;
        --setup-kills) setup_kills=${2:?}; shift ;;
        --killer) killer=${2:?}; shift ;;
        -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
done
[[ "$launches" =~ ^[1-9][0-9]*$ ]] || die "--launches must be a positive number"
[[ -z "$seed" ]] && seed=$(( $(od -An -N2 -tu2 /dev/urandom) ))
[[ "$seed" =~ ^[0-9]+$ ]] || die "--seed must be a number"
if [[ -z "$nsrun" ]]; then
    nsrun=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)/build/nsrun
fi
[[ -x "$nsrun" ]] || die "$nsrun is not an executable (build it with tools/build.sh)"
[[ "$setup_kills" =~ ^[0-9]+$ ]] || die "--setup-kills must be a number"
if ((setup_kills)); then
    [[ -n "$killer" ]] || killer=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)/build/tools/nsrun-killer
    [[ -x "$killer" ]] || die "$killer is not an executable (build it with tools/build.sh)"
fi
IFS=, read -r -a rungs <<<"$rungs_arg"
for r in "${rungs[@]}"; do
    [[ "$r" == namespaces || "$r" == landlock ]] || die "unknown rung '$r'"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/nsrun-soak.XXXXXX")
chmod 755 "$work"
mkdir "$work/ws" "$work/tmp" "$work/state"
# The copy-on-write home's layers go to a state directory of the soak's own
# (as tests/support/state_home.cpp does for the suite), removed with $work:
# nothing is left under the caller's ~/.local/state.
export XDG_STATE_HOME="$work/state"
token="soak$$s$seed"
cleanup() {
    local pids
    pids=$(marked_pids "$token") || true
    [[ -n "$pids" ]] && kill -KILL $pids 2>/dev/null
    # overlayfs leaves each work slot's work/work at mode 0.
    chmod -R u+rwx -- "$work/state" 2>/dev/null || true
    rm -rf --one-file-system -- "$work" 2>/dev/null || true
}
trap cleanup EXIT

# Pids whose environment holds NSRUN_SOAK_MARK=<prefix>... (this user's
# processes, or all of them as root).
marked_pids() {
    grep -lzs -- "^NSRUN_SOAK_MARK=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | grep -vx "$$" || true
}

# The payload: $0 is how long it lives, $1 its marker. A child, and a
# daemon in a session of its own whose parent exits at once (setsid, then
# a background child of a shell that ends): both outlive the command.
payload='
sh -c "sleep 300; :" "$1-child" &
setsid sh -c "sh -c \"sleep 300; :\" \"\$0-daemon\" & :" "$1-session"
sleep "$0"; :
'

# Which rungs this host and user can run (a skip is said, never silent).
usable=()
failed=0 passed=0 results=()
for r in "${rungs[@]}"; do
    out=$(cd "$work/ws" && TMPDIR=$work/tmp "$nsrun" --backend "$r" -- true 2>&1) && { usable+=("$r"); continue; }
    need=$([[ "$r" == namespaces ]] && echo userns || echo landlock)
    if [[ ",${NSRUN_TEST_REQUIRE:-}," == *",$need,"* ]]; then
        results+=("FAIL  $r: the rung is required (NSRUN_TEST_REQUIRE) but unusable: $out")
        failed=$((failed + 1))
    else
        say "SKIPPED rung $r: not usable here: $out"
    fi
done

# The check must see what it looks for: per rung, one launch that lives a
# while, whose processes (nsrun, the payload, its child and its daemon) are
# counted while it runs.
for r in "${usable[@]}"; do
    (cd "$work/ws" && exec env TMPDIR="$work/tmp" NSRUN_SOAK_MARK="$token-see-$r" \
        "$nsrun" --backend "$r" -- sh -c "$payload" 20 "$token-see-$r") >/dev/null 2>&1 </dev/null &
    pid=$!
    seen=0
    for ((t = 0; t < 500 && seen < 5; t++)); do
        seen=$(marked_pids "$token-see-$r" | grep -c . || true)
        ((seen >= 5)) || sleep 0.01
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    if ((seen < 5)); then
        results+=("FAIL  $r: saw only $seen of the payload's processes running: the check would be blind")
        failed=$((failed + 1))
    fi
done
for ((t = 0; t < 100; t++)); do
    [[ -z "$(marked_pids "$token-see-")" ]] && break
    sleep 0.1
done

mountinfo() { cut -d' ' -f1,5,9 /proc/self/mountinfo | sort; }
# Counted by the shell's own glob, not $(ls ...): a command substitution's
# pipe is the shell's while its child lists the directory, and its write
# end may or may not be closed by then.
# Counted by the shell's own glob: a $(ls ...) would list the directory
# while the shell may or may not have closed its copy of the pipe's write
# end yet (one more, or not).
fd_list=(/proc/$$/fd/*)
fds_before=${#fd_list[@]}
mounts_before=$(mountinfo)
say "seed $seed, $launches launches, rungs: ${usable[*]:-none}, nsrun $nsrun, user $(id -un)"
say "replay: tools/soak.sh --seed $seed --launches $launches --rungs $rungs_arg"

# SIGTERM or SIGINT ends the launches early; the checks still run.
stop=0
trap 'stop=1' TERM INT
RANDOM=$seed
declare -A count_kill_nsrun count_kill_cmd count_end count_bad
start=$SECONDS
for ((i = 0; i < launches && ${#usable[@]} > 0 && !stop; i++)); do
    r=${usable[i % ${#usable[@]}]}
    marker="$token-$r-$i"
    action=$((RANDOM % 100))
    delay=$(printf '0.%03d' $((RANDOM % 150)))
    life=$(printf '0.%03d' $((RANDOM % 100)))
    (cd "$work/ws" && exec env TMPDIR="$work/tmp" NSRUN_SOAK_MARK="$token-$r-$i" \
        "$nsrun" --backend "$r" -- sh -c "$payload" "$life" "$marker") >/dev/null 2>>"$work/stderr" </dev/null &
    pid=$!
    want=0
    if ((action < 30)); then
        sleep "$delay"
        kill -KILL "$pid" 2>/dev/null || true
        want=137 what=kill_nsrun
    elif ((action < 60)); then
        sleep "$delay"
        # The command is `sh -c PAYLOAD LIFE MARKER` (nsrun's own argv ends
        # the same way, but starts with its path).
        for ((t = 0; t < 500; t++)); do
            cmd=$(pgrep -f -- "^sh -c .* $marker\$" || true)
            [[ -n "$cmd" ]] && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.01
        done
        [[ -n "$cmd" ]] && kill -KILL $cmd 2>/dev/null || true
        want=137 what=kill_cmd
    else
        what=end
    fi
    rc=0
    { wait "$pid"; } 2>/dev/null || rc=$?
    case "$what" in
        kill_nsrun) count_kill_nsrun[$r]=$((${count_kill_nsrun[$r]:-0} + 1)) ;;
        kill_cmd) count_kill_cmd[$r]=$((${count_kill_cmd[$r]:-0} + 1)) ;;
        end) count_end[$r]=$((${count_end[$r]:-0} + 1)) ;;
    esac
    # A kill that came after the command had ended leaves exit 0.
    if ((rc != want)) && ! ((want == 137 && rc == 0)); then
        count_bad[$r]=$((${count_bad[$r]:-0} + 1))
        ((${count_bad[$r]} <= 3)) && say "launch $i ($r, $what after ${delay}s): exit $rc, expected $want"
    fi
    ((i % 500 == 499)) && say "$((i + 1)) launches, $((SECONDS - start))s"
done
elapsed=$((SECONDS - start))

# Kills in set-up: the killer judges each launch's ending; what is left
# behind is checked below with the rest (its launches carry the rung's
# marker and use the same TMPDIR).
# set_up_kills WHAT MARK KILLER-ARGS...: one killer run, its lines and a
# result line.
set_up_kills() {
    local what=$1 mark=$2 krc=0 line
    shift 2
    say "$what"
    (cd "$work/ws" && exec env TMPDIR="$work/tmp" NSRUN_SOAK_MARK="$mark" "$killer" "$@") \
        >"$work/killer" 2>&1 </dev/null || krc=$?
    sed -e '/^[0-9]* passed, [0-9]* failed$/d' -e 's/^/soak: /' "$work/killer"
    line=$(tail -n 1 "$work/killer")
    if ((krc == 0)) && [[ "$line" =~ ^[1-9][0-9]*\ passed,\ 0\ failed$ ]]; then
        results+=("ok    $what: each ended as allowed ($line)")
        passed=$((passed + 1))
    else
        results+=("FAIL  $what (killer exit $krc: $line)")
        failed=$((failed + 1))
    fi
}
payload_short=(sh -c 'sleep 300 & exit 0')
for ((k = 0; k < ${#usable[@]} && setup_kills > 0 && !stop; k++)); do
    r=${usable[k]}
    n=$(( setup_kills / ${#usable[@]} + (k < setup_kills % ${#usable[@]} ? 1 : 0) ))
    ((n)) || continue
    set_up_kills "$r: $n set-up kills" "$token-$r-setup" \
        --launches "$n" --seed "$seed" -- "$nsrun" --backend "$r" -- "${payload_short[@]}"
    [[ "$r" == namespaces ]] || continue
    # bwrap's semantics: a death in set-up is passed on as the child's
    # status, silently.
    nb=$(( (n + 9) / 10 ))
    set_up_kills "$r: $nb set-up kills through the bwrap dialect" "$token-$r-setup-bwrap" \
        --bwrap --launches "$nb" --seed "$seed" -- "$nsrun" bwrap --unshare-all --die-with-parent \
        --ro-bind / / --proc /proc --dev /dev -- "${payload_short[@]}"
done

# Processes of nsrun killed with SIGKILL die a moment later (the parent-death
# signal): leftovers are what remains after a grace period.
for ((t = 0; t < 100; t++)); do
    [[ -z "$(marked_pids "$token")" ]] && break
    sleep 0.1
done
mounts_after=$(mountinfo)
new_mounts=$(comm -13 <(printf '%s\n' "$mounts_before") <(printf '%s\n' "$mounts_after"))
fd_list=(/proc/$$/fd/*)
fds_after=${#fd_list[@]}

for r in "${usable[@]}"; do
    left=$( (marked_pids "$token-$r-"; marked_pids "$token-see-$r") | sort -u)
    nleft=$(printf '%s' "$left" | grep -c . || true)
    ntmp=$(find "$work/tmp" -mindepth 1 -maxdepth 1 | wc -l)
    [[ "$r" == landlock ]] || ntmp=0  # only the Landlock rung makes host TMPDIRs
    bad=${count_bad[$r]:-0}
    summary="$r: $((${count_kill_nsrun[$r]:-0} + ${count_kill_cmd[$r]:-0} + ${count_end[$r]:-0})) launches (${count_kill_nsrun[$r]:-0} nsrun killed, ${count_kill_cmd[$r]:-0} command killed, ${count_end[$r]:-0} ended), $nleft processes left, $ntmp TMPDIR entries left, $bad unexpected exits"
    if ((nleft == 0 && ntmp == 0 && bad == 0)); then
        results+=("ok    $summary")
        passed=$((passed + 1))
    else
        results+=("FAIL  $summary")
        failed=$((failed + 1))
        ((ntmp)) && say "left in TMPDIR: $(find "$work/tmp" -mindepth 1 -maxdepth 1 -printf '%f (%TT) ' | head -c 300)"
        for p in $(printf '%s\n' "$left" | head -n 5); do
            say "left: pid $p: $(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null | cut -c1-100)"
        done
    fi
done
# The home layers' work slots (src/layers/work_slots.hpp) after all those
# SIGKILLs: the kept ones at most, none left locked by a dead launch.
if [[ -d "$work/state/nsrun/home" ]]; then
    nslots=$(find "$work/state/nsrun/home" -mindepth 2 -maxdepth 2 -name 'work-*' | wc -l)
    nlayers=$(find "$work/state/nsrun/home" -mindepth 1 -maxdepth 1 -type d | wc -l)
    nheld=0
    for d in "$work"/state/nsrun/home/*/work-*; do
        [[ -d "$d" ]] || continue
        flock -n -x "$d" true 2>/dev/null || nheld=$((nheld + 1))
    done
    if ((nslots > 8 * nlayers || nheld > 0)); then
        results+=("FAIL  home layer work slots: $nslots in $nlayers layers (at most 8 each), $nheld still locked")
        failed=$((failed + 1))
    else
        results+=("ok    home layer work slots: $nslots in $nlayers layers, none locked")
        passed=$((passed + 1))
    fi
fi
if [[ -n "$new_mounts" ]]; then
    results+=("FAIL  new mounts in this mount namespace: $(printf '%s' "$new_mounts" | tr '\n' ';')")
    failed=$((failed + 1))
fi
if ((fds_after != fds_before)); then
    results+=("FAIL  this shell had $fds_before descriptors, now $fds_after")
    failed=$((failed + 1))
fi
if [[ -s "$work/stderr" ]]; then
    say "nsrun's messages (first 5 distinct):"
    sed 's/[0-9]\{2,\}/N/g' "$work/stderr" | sort | uniq -c | sort -rn | head -n 5
fi
((stop)) && say "stopped by a signal after $i launches"
say "$i launches in ${elapsed}s, seed $seed"
printf '%s\n' "${results[@]}"
printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))

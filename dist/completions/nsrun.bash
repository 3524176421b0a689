# bash completion for nsrun                                -*- shell-script -*-
#
# The option lists are the option table's (src/cli/options.cpp), as
# NAME=ARITY, the number of values that follow the option;
# tests/unit/completions_test.cpp holds them to the table both ways, so an
# option added there and not here (or gone there) fails the unit tests.

_nsrun_native_options='
    --help=0 -h=0 --version=0 --mode=1 --workspace=1 --writable=1 --ro=1
    --hide=1 --tmpfs=1 --tmp=1 --chdir=1 --setenv=2 --unsetenv=1 --clearenv=0
    --proc=1 --backend=1 --host-backend=1 --as-pid-1=0 --policy=1 --settings=1
    --no-settings=0 --explain-source=0 --report=1
    --report-fd=1 --json=0 --network=1 --no-offline-env=0 --allow-host=1
    --deny-host=1 --resolve-host=1 --network-log=1 --seccomp=1
    --seccomp-log=0 --unix-sockets=1 --allow-socket=1 --protect=1
    --unprotect=1 --protect-defaults=1 --hide-defaults=1 --allow-read=1
    --no-settings-copy=0
    --allow-nested-userns=0 --share-ipc=0 --share-uts=0 --share-cgroup=0
    --env-allow=1 --env-deny=1 --new-session=0 --no-new-session=0
    --workspace-mode=1 --cow-dir=1 --home=1 --home-layer=1 --run-id=1 --pass-fd=1
    --limit-memory=1 --limit-pids=1 --limit-cpu=1 --timeout=1 --idle-timeout=1 --kill-after=1
    --rlimit=1 --tmpfs-size=1 --limits=1 --verdict=0 --watch-writes=0
'

# `nsrun bwrap` and `nsrun explain --bwrap`: bubblewrap's command line.
_nsrun_bwrap_options='
    --help=0 --version=0 --setenv=2 --unsetenv=1 --as-pid-1=0 --new-session=0
    --args=1 --argv0=1 --level-prefix=0 --unshare-all=0 --share-net=0
    --unshare-user=0 --unshare-user-try=0 --unshare-ipc=0 --unshare-pid=0
    --unshare-net=0 --unshare-uts=0 --unshare-cgroup=0 --unshare-cgroup-try=0
    --userns=1 --userns2=1 --disable-userns=0 --assert-userns-disabled=0
    --pidns=1 --uid=1 --gid=1 --hostname=1 --chdir=1 --clearenv=0
    --lock-file=1 --sync-fd=1 --bind=2 --bind-try=2 --dev-bind=2
    --dev-bind-try=2 --ro-bind=2 --ro-bind-try=2 --bind-fd=2 --ro-bind-fd=2
    --remount-ro=1 --overlay-src=1 --overlay=3 --tmp-overlay=1 --ro-overlay=1
    --exec-label=1 --file-label=1 --proc=1 --dev=1 --tmpfs=1 --mqueue=1
    --dir=1 --file=2 --bind-data=2 --ro-bind-data=2 --symlink=2 --seccomp=1
    --add-seccomp-fd=1 --block-fd=1 --userns-block-fd=1 --info-fd=1
    --json-status-fd=1 --die-with-parent=0 --cap-add=1 --cap-drop=1 --perms=1
    --size=1 --chmod=2
'

# The values of the native options that take one of a fixed set.
_nsrun_choices() {
    case $1 in
        --mode) echo 'read-only workspace-write full-access' ;;
        --proc) echo 'auto fresh host-bind none' ;;
        --backend) echo 'auto namespaces landlock' ;;
        --network) echo 'share none proxy' ;;
        --seccomp) echo 'default none log' ;;
        --unix-sockets) echo 'hide-known none' ;;
        --protect-defaults | --hide-defaults) echo 'default none' ;;
        --workspace-mode) echo 'direct cow' ;;
        --home) echo 'cow ro rw' ;;
        --limits) echo 'strict best-effort require-cgroup' ;;
    esac
}

_nsrun_arity() { # OPTION LIST: how many values OPTION takes (nothing: not in LIST)
    local e
    for e in $2; do
        if [[ ${e%=*} == "$1" ]]; then
            echo "${e##*=}"
            return
        fi
    done
}

_nsrun_values() { # OPTION: complete one of its values into COMPREPLY
    local choices
    choices=$(_nsrun_choices "$1")
    if [[ -n $choices ]]; then
        COMPREPLY=($(compgen -W "$choices" -- "$cur"))
    elif [[ $1 == --tmp ]]; then
        COMPREPLY=($(compgen -W 'private host' -- "$cur"))
        _filedir -d
    else
        _filedir
    fi
}

_nsrun() {
    local cur prev words cword split
    _init_completion -s || return

    local list=$_nsrun_native_options i=1
    case ${words[1]-} in
        bwrap) list=$_nsrun_bwrap_options i=2 ;;
        explain)
            i=2
            if [[ ${words[2]-} == --bwrap ]] && ((cword > 2)); then
                list=$_nsrun_bwrap_options i=3
            fi
            ;;
        policy | probe) i=2 ;;
        help)
            # nsrun help TOPIC|SUBCOMMAND (src/cli/help.cpp).
            ((cword == 2)) && COMPREPLY=($(compgen -W 'modes layers egress limits rungs report settings exit
                policy explain probe changes commit discard runs home connect bench bwrap session exec jobs logs kill' -- "$cur"))
            return
            ;;
        session)
            # nsrun session start NAME [OPTIONS]: a launch's options.
            if [[ ${words[2]-} != start ]] || ((cword <= 3)); then
                ((cword == 2)) && COMPREPLY=($(compgen -W 'start stop list' -- "$cur"))
                return
            fi
            i=4
            ;;
        exec | jobs | logs | kill)
            # Options of their own (docs/sessions.md).
            ((cword > 1)) && return
            ;;
        bench | changes | commit | discard | home)
            # Options of their own (nsrun bench --help, nsrun commit --help).
            ((cword > 1)) && { _filedir; return; }
            ;;
    esac

    # The words before the cursor: options and their values, up to the command.
    local opt='' left=0 w
    for ((; i < cword; i++)); do
        w=${words[i]}
        if ((left > 0)); then
            ((left--))
            continue
        fi
        if [[ $w == -- ]]; then
            _command_offset $((i + 1))
            return
        fi
        if [[ $w != -* ]]; then
            _command_offset $i
            return
        fi
        [[ $w == --*=* ]] && continue
        left=$(_nsrun_arity "$w" "$list")
        left=${left:-0}
        opt=$w
    done

    if ((left > 0)); then
        _nsrun_values "$opt"
        return
    fi
    if [[ $split == true ]]; then # --option=value: prev is the option, cur the value
        _nsrun_values "$prev"
        return
    fi
    if [[ $cur == -* ]]; then
        local names=() e
        for e in $list; do names+=("${e%=*}"); done
        COMPREPLY=($(compgen -W "${names[*]}" -- "$cur"))
        return
    fi
    if ((cword == 1)); then
        COMPREPLY=($(compgen -W 'policy explain probe bench bwrap changes commit discard home session exec jobs logs kill' -- "$cur"))
        [[ -n $cur ]] && COMPREPLY+=($(compgen -c -- "$cur"))
        return
    fi
    _command_offset $cword
} &&
    complete -F _nsrun nsrun

# ex: filetype=sh

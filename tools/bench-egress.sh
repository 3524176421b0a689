#!/usr/bin/env bash
# Bulk transfer through nsrun's egress proxy against the same
# transfer over plain loopback, in a network namespace of its own (nothing
# leaves it): a 512 MiB file served by python's http.server on 198.18.0.1,
# fetched with curl directly, through a CONNECT tunnel (--proxytunnel) and
# as absolute-URI HTTP, both inside `nsrun --network proxy`. Prints MB/s
# (curl's speed_download), the best of --runs N (default 3) each.
#
#   tools/bench-egress.sh [--nsrun PATH] [--runs N]
set -euo pipefail
nsrun=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)/build/nsrun
runs=3
while (($#)); do
    case "$1" in
        --nsrun) nsrun=$2; shift ;;
        --runs) runs=$2; shift ;;
        *) echo "usage: ${0##*/} [--nsrun PATH] [--runs N]" >&2; exit 2 ;;
    esac
    shift
done
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-egress.XXXXXX")
trap 'rm -rf -- "$dir"' EXIT
head -c $((512 << 20)) /dev/zero > "$dir/big"
exec unshare --user --map-root-user --net -- /bin/bash -c '
    set -euo pipefail
    nsrun=$1; dir=$2; runs=$3
    ip link set lo up; ip addr add 198.18.0.1/32 dev lo
    mkfifo "$dir/ready"
    /usr/bin/python3 -c "
import http.server, functools, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer((\"198.18.0.1\", 80), h)
open(sys.argv[2], \"w\").write(\"ok\n\")
s.serve_forever()" "$dir" "$dir/ready" 2>/dev/null & server=$!
    read -r _ < "$dir/ready"
    best() { local b=0 v; for ((i = 0; i < runs; i++)); do v=$("$@"); if ((v > b)); then b=$v; fi; done; echo $((b / 1000000)); }
    curl_speed() { /usr/bin/curl -s -o /dev/null -w "%{speed_download}\n" "$@" | cut -d. -f1; }
    sandboxed_speed() {
        "$nsrun" --network proxy --allow-host bulk.test --resolve-host bulk.test=198.18.0.1 -- \
            /usr/bin/curl -s -o /dev/null -w "%{speed_download}\n" "$@" | cut -d. -f1
    }
    echo "loopback (no sandbox)        $(best curl_speed http://198.18.0.1/big) MB/s"
    echo "CONNECT tunnel (nsrun)       $(best sandboxed_speed -p http://bulk.test/big) MB/s"
    echo "absolute-URI HTTP (nsrun)    $(best sandboxed_speed http://bulk.test/big) MB/s"
    kill $server
' bench-egress "$nsrun" "$dir" "$runs"

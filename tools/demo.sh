#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run one
# command under nsrun with the default policy (workspace-write, the current
# directory as the workspace).
#
#   tools/demo.sh                 the built-in demonstration
#   tools/demo.sh COMMAND [ARG]   your own command instead
set -euo pipefail

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
bash "$root/tools/install-deps.sh"
# The build's output only when it fails: then the compiler's own messages
# (ninja prints each failed step's output after its "FAILED:" line).
log=$(mktemp)
if ! bash "$root/tools/build.sh" >"$log" 2>&1; then
    if grep -q '^FAILED:' "$log"; then
        sed -n '/^FAILED:/,$p' "$log" | head -n 60 >&2
    else
        tail -n 40 "$log" >&2
    fi
    rm -f "$log"
    printf 'demo: the build failed (above); full log: bash tools/build.sh\n' >&2
    exit 1
fi
rm -f "$log"

if (($#)); then
    exec "$root/build/nsrun" -- "$@"
fi

# Inside: the workspace is writable, the rest of the host is not, /tmp is
# private and the process list holds only the sandbox.
exec "$root/build/nsrun" -- sh -c '
echo "workspace: $(pwd)"
echo "inside the sandbox" > nsrun-demo.txt && echo "write in the workspace: ok ($(cat nsrun-demo.txt))"
rm -f nsrun-demo.txt
touch /etc/nsrun-demo 2>/dev/null && echo "write to /etc: ok (unexpected)" || echo "write to /etc: refused (read-only file system)"
echo "processes visible: $(ls /proc | grep -c "^[0-9]")"
echo "capabilities: $(grep CapEff /proc/self/status)"
'

#!/usr/bin/env python3
"""Where the instructions of one nsrun-istep segment went, by function.

    tools/nsrun-istep-symbols.py BINARY DIR/seg.PID.N [TOP]

BINARY must be the very file the segment ran (not stripped; copy it before
rebuilding). Prints the count without the vDSO's instructions, then the
functions by inclusive count: a shadow stack kept from the addresses
alone (an entry is a step onto a function's first instruction, a return a
step back into a function below on the stack), so inlined code counts for
its caller and a tail call for the one it replaced. Good to a few
percent, enough to rank; the totals are exact."""
import array
import bisect
import collections
import subprocess
import sys

binary, seg = sys.argv[1], sys.argv[2]
top = int(sys.argv[3]) if len(sys.argv) > 3 else 40
nm = subprocess.run(['nm', '-n', '--defined-only', '-C', binary], capture_output=True, text=True, check=True).stdout
addrs, names = [], []
for line in nm.splitlines():
    part = line.split(' ', 2)
    if len(part) == 3 and part[1] in 'tTwWiI':
        addrs.append(int(part[0], 16))
        names.append(part[2])
rips = array.array('q')
with open(seg, 'rb') as f:
    rips.frombytes(f.read())
VDSO = 0x7f0000000000
inclusive = collections.Counter()
stack = []
own = 0
for rip in rips:
    if rip >= VDSO:
        continue
    own += 1
    i = bisect.bisect_right(addrs, rip) - 1
    if i >= 0 and rip == addrs[i]:
        stack.append(i)
    elif stack and stack[-1] != i:
        for k in range(len(stack) - 1, -1, -1):
            if stack[k] == i:
                del stack[k + 1:]
                break
    for fn in set(stack):
        inclusive[fn] += 1
print(f'{len(rips)} instructions, {own} without the vDSO')
for fn, n in inclusive.most_common(top):
    print(f'{n:9d} {100 * n / max(own, 1):5.1f}%  {names[fn][:140]}')

#!/usr/bin/env python3
"""Runs commands in an nsrun session over its control socket, without
starting nsrun for each one (docs/sessions.md).

    python3 session_client.py NAME COMMAND [ARG]...   # exit status: the command's
    python3 session_client.py NAME --jobs             # the jobs, as JSON
"""
import json
import os
import socket
import sys


def socket_path(name):
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        return os.path.join(runtime, "nsrun", "sessions", name + ".sock")
    state = os.environ.get("XDG_STATE_HOME", "")
    if not state.startswith("/"):
        state = os.path.expanduser("~/.local/state")
    return os.path.join(state, "nsrun", "sessions", "sockets", name + ".sock")


def connect(name):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.connect(socket_path(name))
    return sock


def send(sock, message, fds=()):
    # One JSON object per packet; descriptors ride along as SCM_RIGHTS.
    socket.send_fds(sock, [json.dumps(message).encode()], list(fds))


def receive(sock):
    packet = sock.recv(65536)
    if not packet:
        raise EOFError("the session ended")
    return json.loads(packet)


def run(name, argv, env=(), cwd=None, stdio=(0, 1, 2)):
    """Runs argv in the session with the fds `stdio`; returns its exit status."""
    with connect(name) as sock:
        request = {"op": "exec", "argv": list(argv), "env": list(env)}
        if cwd:
            request["cwd"] = cwd
        send(sock, request, stdio)
        while True:
            reply = receive(sock)
            if "error" in reply:
                print("nsrun:", reply["error"], file=sys.stderr)
            if "exit" in reply:
                return reply["exit"]


def jobs(name):
    with connect(name) as sock:
        send(sock, {"op": "jobs"})
        return receive(sock)["jobs"]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] == "--jobs":
        print(json.dumps(jobs(sys.argv[1])))
        sys.exit(0)
    sys.exit(run(sys.argv[1], sys.argv[2:]))

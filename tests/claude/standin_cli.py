"""A stand-in for the Claude Code CLI that speaks just enough stream-json to hang in one phase.

`STANDIN_HANG` picks the phase: `initializing` (never answers `initialize`), `preparing` (answers
`initialize`, never the settings request), `submitting` (answers control requests, never reacts to
a user message), `asleep` (reads nothing: its end of input goes unnoticed; SIGTERM ends it). It
writes its PID to `STANDIN_PID_FILE` so tests can prove it was reaped.

`STANDIN_CHILD=1` starts a helper process first (as the real CLI starts MCP servers and tools) that
ignores the CLI's end and waits (up to 120 s, so a leak cannot last); its PID goes to the same
file. `STANDIN_STUBBORN=1` ignores SIGTERM and outlives the end of its stdin: only SIGKILL ends it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys


def reply(request_id: str, response: dict[str, object]) -> None:
    frame = {"type": "control_response", "response": {"subtype": "success", "request_id": request_id,
                                                      "response": response}}
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def main() -> int:
    if "-v" in sys.argv or "--version" in sys.argv:
        print("2.1.332 (Claude Code)")
        return 0
    hang = os.environ.get("STANDIN_HANG", "")
    stubborn = os.environ.get("STANDIN_STUBBORN") == "1"
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pids = [os.getpid()]
    if os.environ.get("STANDIN_CHILD") == "1":
        code = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.alarm(120); signal.pause()"
        helper = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        pids.append(helper.pid)
    with open(os.environ["STANDIN_PID_FILE"], "a") as handle:
        handle.write("".join(f"{pid}\n" for pid in pids))
    if hang == "asleep":
        signal.alarm(120)  # so a leak cannot last
        while True:
            signal.pause()
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("type") != "control_request":
            continue  # a user message: in every mode the stand-in stays silent
        subtype = message["request"].get("subtype")
        if subtype == "initialize" and hang != "initializing":
            reply(message["request_id"], {"commands": [], "models": [], "pid": os.getpid()})
        elif (subtype == "set_permission_mode" and hang not in ("initializing", "preparing")) or subtype == "interrupt":
            reply(message["request_id"], {})
    while stubborn:
        signal.pause()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

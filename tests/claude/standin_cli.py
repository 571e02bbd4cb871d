"""A stand-in for the Claude Code CLI that speaks just enough stream-json to hang in one phase.

`STANDIN_HANG` picks the phase: `initializing` (never answers `initialize`), `preparing` (answers
`initialize`, never the settings request), `submitting` (answers control requests, never reacts to
a user message). It writes its PID to `STANDIN_PID_FILE` so tests can prove it was reaped.
"""

from __future__ import annotations

import json
import os
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
    with open(os.environ["STANDIN_PID_FILE"], "a") as handle:
        handle.write(f"{os.getpid()}\n")
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("type") != "control_request":
            continue  # a user message: in every mode the stand-in stays silent
        subtype = message["request"].get("subtype")
        if subtype == "initialize" and hang != "initializing":
            reply(message["request_id"], {"commands": [], "models": [], "pid": os.getpid()})
        elif (subtype == "set_permission_mode" and hang not in ("initializing", "preparing")) or subtype == "interrupt":
            reply(message["request_id"], {})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

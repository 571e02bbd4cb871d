"""A stand-in for `codex app-server`, reached through ACP_AGENT_CODEX_BIN, that stalls or dies on cue.

It speaks just enough of the app-server protocol (JSON-RPC lines without "jsonrpc") for the
runtime to get through start-up. `STAND_IN_HANG=<method>` leaves that request unanswered (the
process keeps reading, so a closed stdin still ends it); `STAND_IN_EXIT_ON=<method>` exits
instead of answering; `STAND_IN_FAIL_ON=<method>` answers it with a JSON-RPC error.
`STAND_IN_SCRIPT` is JSON `{"<method>": {"before": [...], "after": [...]}}`:
notifications sent before and after answering that request (`$THREAD` stands for the thread id);
`STAND_IN_SCRIPT_FILE` names a file holding that JSON instead (for scripts too long for a variable).
`STAND_IN_LATE_ONCE=<method>` leaves the first such request unanswered and sends the script's
`"late"` notifications just before handling the next request (a turn that starts after its
prompt gave up). `STAND_IN_LOG` names a JSON-lines file every request received is appended to.
It writes its PID to `STAND_IN_PID_FILE` so tests can check it is gone. `STAND_IN_STUBBORN=1`
ignores SIGTERM and outlives the end of its stdin (for at most 120 s): only SIGKILL stops it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

THREAD_ID = "00000000-0000-7000-8000-000000000001"


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {"userAgent": "stand-in/0.0.0", "codexHome": "/nonexistent", "platformFamily": "unix",
                "platformOs": "linux"}
    if method in ("thread/start", "thread/resume"):
        return {"thread": {"id": THREAD_ID, "cwd": params.get("cwd"), "turns": []}, "model": "stand-in-model",
                "approvalPolicy": "on-request", "sandbox": {"type": "workspaceWrite"}}
    if method == "model/list":
        return {"data": [], "nextCursor": None}
    if method == "turn/start":
        return {"turn": {"id": "turn-1", "items": [], "status": "inProgress", "error": None}}
    return {}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    pid_file = os.environ.get("STAND_IN_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as handle:
            handle.write(str(os.getpid()))
    stubborn = os.environ.get("STAND_IN_STUBBORN") == "1"
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.alarm(120)
    hang, exit_on = os.environ.get("STAND_IN_HANG"), os.environ.get("STAND_IN_EXIT_ON")
    fail_on = os.environ.get("STAND_IN_FAIL_ON")
    late_once, log_path = os.environ.get("STAND_IN_LATE_ONCE"), os.environ.get("STAND_IN_LOG")
    script_file = os.environ.get("STAND_IN_SCRIPT_FILE")
    raw_script = os.environ.get("STAND_IN_SCRIPT", "{}")
    if script_file:
        with open(script_file) as handle:
            raw_script = handle.read()
    script = json.loads(raw_script.replace("$THREAD", THREAD_ID))
    late_pending = False
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if "id" not in message or method is None:
            continue
        if log_path:
            with open(log_path, "a") as handle:
                handle.write(json.dumps({"method": method, "params": message.get("params")}) + "\n")
        if method == exit_on:
            return 3
        if method == hang:
            continue
        if method == fail_on:
            send({"id": message["id"], "error": {"code": -32603, "message": f"stand-in refuses {method}"}})
            continue
        if late_pending:
            late_pending = False
            for notification in script.get("late", []):
                send(notification)
        if method == late_once:
            late_once, late_pending = None, True
            continue
        steps = script.get(method, {})
        for notification in steps.get("before", []):
            send(notification)
        send({"id": message["id"], "result": answer(method, message.get("params") or {})})
        if method == "thread/start":
            send({"method": "thread/started", "params": {"thread": {"id": THREAD_ID}}})
        for notification in steps.get("after", []):
            send(notification)
    while stubborn:
        signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())

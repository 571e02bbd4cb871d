"""A stand-in for the Claude Code CLI that answers each prompt with the lines a test scripted.

`STANDIN_SCRIPT` names a JSON file mapping a prompt's text to the lines to write for it: an
object is written as one JSON line, a string as it is (garbage a CLI should never write). A
prompt the script does not name gets no answer. Control requests are answered with success.
The PID goes to `STANDIN_PID_FILE` so a test can prove the stand-in was reaped.
"""

from __future__ import annotations

import json
import os
import sys


def write(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> int:
    if "-v" in sys.argv or "--version" in sys.argv:
        print("2.1.332 (Claude Code)")
        return 0
    with open(os.environ["STANDIN_PID_FILE"], "a") as handle:
        handle.write(f"{os.getpid()}\n")
    with open(os.environ["STANDIN_SCRIPT"]) as handle:
        script: dict[str, list[object]] = json.load(handle)
    for raw in sys.stdin:
        message = json.loads(raw)
        if message.get("type") == "control_request":
            response = {"commands": [], "models": [], "pid": os.getpid()} \
                if message["request"].get("subtype") == "initialize" else {}
            write(json.dumps({"type": "control_response", "response": {
                "subtype": "success", "request_id": message["request_id"], "response": response}}))
        elif message.get("type") == "user":
            blocks = message["message"]["content"]
            text = "".join(block.get("text", "") for block in blocks) if isinstance(blocks, list) else str(blocks)
            for line in script.get(text, []):
                write(line if isinstance(line, str) else json.dumps(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

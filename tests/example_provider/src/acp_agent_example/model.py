"""A stand-in model, run as a child process: JSON lines in, JSON lines out.

In: `{"text": ...}` starts a turn, `{"cancel": true}` stops the running one (ignored otherwise).
Out, per turn: `{"turn": id}` (the acknowledgement), then `{"delta": text}`s, then `{"done": reason}`
or `{"error": native, "message": text}`. The answer is `echo: <text>`; a text starting `hold ` is
held after one delta until a cancel arrives; the text `fail` is an "overloaded" error.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    turns = 0
    while line := sys.stdin.readline():
        request = json.loads(line)
        if "text" not in request:
            continue  # a cancel with no turn running
        turns += 1
        text = request["text"]
        send({"turn": f"model-turn-{turns}"})
        if text == "fail":
            send({"error": "overloaded", "message": "The echo model is overloaded; try again later."})
        elif text.startswith("hold "):
            send({"delta": "thinking"})
            while line := sys.stdin.readline():
                if json.loads(line).get("cancel"):
                    break
            send({"done": "cancelled"})
        else:
            send({"delta": "echo: "})
            send({"delta": text})
            send({"done": "end_turn"})


if __name__ == "__main__":
    main()

"""Runs the real `codex app-server` (`TAP_CODEX`) and writes the method of every request the agent
sends it, one per line, to `TAP_FIFO` before passing the request on: a test reading the FIFO sees
what the agent asked app-server and when, without polling. Its output is app-server's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main() -> int:
    child = subprocess.Popen([os.environ["TAP_CODEX"], *sys.argv[1:]], stdin=subprocess.PIPE)
    assert child.stdin is not None
    with open(os.environ["TAP_FIFO"], "w", buffering=1) as tap:
        for line in sys.stdin.buffer:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if isinstance(message, dict) and "id" in message and isinstance(message.get("method"), str):
                tap.write(message["method"] + "\n")
            child.stdin.write(line)
            child.stdin.flush()
    child.stdin.close()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())

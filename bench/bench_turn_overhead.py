"""Per-turn overhead: a scripted turn of 10,000 text deltas through a subprocess agent to a client.

Checks that none is lost or reordered and reports delta events per second. Asserts nothing else.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _agent import RawAgent, median

DELTAS = 10_000


def one_run() -> float:
    with tempfile.TemporaryDirectory() as directory:
        script = os.path.join(directory, "script.json")
        with open(script, "w") as handle:
            json.dump({"turns": [[{"deltas": DELTAS}]]}, handle)
        agent = RawAgent("scripted", env={"ACP_AGENT_SCRIPTED_SCRIPT": script}, cwd=directory)
        agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = agent.call("session/new", {"cwd": directory, "mcpServers": []})["result"]["sessionId"]
        started = time.perf_counter()
        frames = agent.frames_until(agent.send("session/prompt", {
            "sessionId": session, "prompt": [{"type": "text", "text": "go"}]}))
        elapsed = time.perf_counter() - started
        agent.close()
    texts = [f["params"]["update"]["content"]["text"] for f in frames if f.get("method") == "session/update"]
    expected = [f"{index} " for index in range(DELTAS)]
    if texts != expected:
        raise SystemExit(f"deltas lost or reordered: got {len(texts)}, first mismatch at "
                         f"{next(i for i, (a, b) in enumerate(zip(texts, expected, strict=False)) if a != b)}")
    return DELTAS / elapsed


def main() -> None:
    rates = [one_run() for _ in range(5)]
    print(f"turn_overhead: {DELTAS} deltas, none lost or reordered; median {median(rates):,.0f} delta events/s "
          f"(min {min(rates):,.0f}, max {max(rates):,.0f}, n={len(rates)})")


if __name__ == "__main__":
    main()

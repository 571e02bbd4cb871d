"""Cost of the output scrubber per frame, in-process (so a loaded machine does not drown it).

Feeds the scrubber the frames of the delta benchmark (agent_message_chunk updates, encoded as the
JSON-RPC writer encodes them), in single-frame writes and in batches of 64 as the writer joins
them: with 0, 3, 12, 32 and 40 secrets held, none of which appears (the usual case: the fast
path), and with one appearing in every frame (the slow path: decode, replace, encode). Reports
the best of 7 runs as ns per frame. Asserts nothing.
"""

from __future__ import annotations

import json
import time

from acp_agent.failures.redaction import Redactor
from acp_agent.failures.scrub import FrameScrubber

FRAMES = 10_000
SECRETS = ("sk-ant-bench-0123456789abcdef", "ghp_bench0123456789abcdef", "postgres://u:pw-bench-42@db/app",
           *(f"{chr(97 + index % 26)}{index}-mcp-value-{index:03d}" for index in range(37)))


def encode(text: str) -> bytes:
    message = {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "0b9f5d1e-2c4a-4f0e-9d1b-6a7c8e9f0a1b",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}}
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def best_ns_per_frame(scrubber: FrameScrubber, writes: list[bytes]) -> float:
    runs = []
    for _ in range(7):
        started = time.perf_counter_ns()
        for write in writes:
            scrubber(write)
        runs.append((time.perf_counter_ns() - started) / FRAMES)
    return min(runs)


def main() -> None:
    clean = [encode(f"{index} ") for index in range(FRAMES)]
    dirty = [encode(f"{index} {SECRETS[0]} ") for index in range(FRAMES)]
    for label, frames in (("clean frames", clean), ("the first secret in every frame", dirty)):
        batched = [b"".join(frames[start:start + 64]) for start in range(0, FRAMES, 64)]
        for shape, writes in (("1/write", frames), ("64/write", batched)):
            costs = []
            for count in (0, 3, 12, 32, len(SECRETS)):
                held = Redactor()
                held.add(*SECRETS[:count])
                costs.append(f"{best_ns_per_frame(FrameScrubber(held), writes):,.0f} ns with {count}")
            print(f"scrub: {label}, {shape}: per frame " + ", ".join(costs) + " secrets")


if __name__ == "__main__":
    main()

"""Claude turn latency: initialize, session/new, first and second prompt against the fake API.

Uses the real Claude Code CLI bundled in claude-agent-sdk and the loopback fake Anthropic API, so
it measures the adapter plus the CLI, not a model. Reports medians; asserts nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _agent import RawAgent, median  # noqa: E402

from tests.fakes.anthropic_api import FakeAnthropicAPI  # noqa: E402

RUNS = 5


def one_run() -> dict[str, float]:
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as directory, FakeAnthropicAPI([{"reply": "first"}, {"reply": "second"}]) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-ant-bench-0000",
               "CLAUDE_CONFIG_DIR": os.path.join(directory, "config"), "HOME": directory,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
               "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"}
        agent = RawAgent("claude", env=env, cwd=directory)
        agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        timings["initialize"] = time.perf_counter() - agent.started
        started = time.perf_counter()
        session = agent.call("session/new", {"cwd": directory, "mcpServers": []})["result"]["sessionId"]
        timings["session/new"] = time.perf_counter() - started
        for label in ("first prompt", "second prompt"):
            started = time.perf_counter()
            result = agent.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})
            timings[label] = time.perf_counter() - started
            if result.get("result", {}).get("stopReason") != "end_turn":
                raise SystemExit(f"{label} did not end normally: {result}")
        agent.close()
    return timings


def main() -> None:
    runs = [one_run() for _ in range(RUNS)]
    parts = [f"{key} {median([run[key] for run in runs]) * 1000:.0f} ms" for key in runs[0]]
    print(f"claude_turn (median of {RUNS}): " + ", ".join(parts))


if __name__ == "__main__":
    main()

"""Codex turn latency: initialize, session/new, first and second prompt against the fake API.

Uses the real `codex app-server` from openai-codex-cli-bin with a CODEX_HOME whose model provider
is the loopback fake Responses API, so it measures the adapter plus app-server, not a model.
`session/new` includes starting app-server (it starts lazily). Reports medians; asserts nothing.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _agent import RawAgent, median  # noqa: E402

from tests.codex.e2e_support import FAKE_KEY, write_codex_home  # noqa: E402
from tests.fakes.responses_api import FakeResponsesAPI  # noqa: E402

RUNS = 5


def one_run() -> dict[str, float]:
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as directory, FakeResponsesAPI([{"reply": "first"}, {"reply": "second"}]) as api:
        home = write_codex_home(api, Path(directory))
        env = {"CODEX_HOME": str(home), "FAKE_OPENAI_API_KEY": FAKE_KEY}
        agent = RawAgent("codex", env=env, cwd=directory)
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
    parts = [f"{key} {median([run[key] for run in runs]) * 1000:.0f} ms "
             f"({min(run[key] for run in runs) * 1000:.0f}–{max(run[key] for run in runs) * 1000:.0f})"
             for key in runs[0]]
    print(f"codex_turn (median of {RUNS}, min–max): " + ", ".join(parts))


if __name__ == "__main__":
    main()

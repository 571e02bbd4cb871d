"""Claude turn latency: initialize, session/new, first and second prompt against the fake API.

Uses the real Claude Code CLI bundled in claude-agent-sdk and the loopback fake Anthropic API, so
it measures the adapter plus the CLI, not a model. Reports medians; asserts nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _agent import report, time_turns  # noqa: E402

from tests.fakes.anthropic_api import FakeAnthropicAPI  # noqa: E402

RUNS = 5


def one_run() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory, FakeAnthropicAPI([{"reply": "first"}, {"reply": "second"}]) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-ant-bench-0000",
               "CLAUDE_CONFIG_DIR": os.path.join(directory, "config"), "HOME": directory,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
               "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"}
        return time_turns("claude", env, directory)


def main() -> None:
    print(report("claude_turn", [one_run() for _ in range(RUNS)]))


if __name__ == "__main__":
    main()

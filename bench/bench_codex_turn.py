"""Codex turn latency: initialize, session/new, first and second prompt against the fake API.

Uses the real `codex app-server` from openai-codex-cli-bin with a CODEX_HOME whose model provider
is the loopback fake Responses API, so it measures the adapter plus app-server, not a model.
`session/new` includes starting app-server (it starts lazily). Reports medians; asserts nothing.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _agent import report, time_turns  # noqa: E402

from tests.codex.e2e_support import FAKE_KEY, write_codex_home  # noqa: E402
from tests.fakes.responses_api import FakeResponsesAPI  # noqa: E402

RUNS = 5


def one_run() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory, FakeResponsesAPI([{"reply": "first"}, {"reply": "second"}]) as api:
        home = write_codex_home(api, Path(directory))
        # no title request after the first turn: it would take the second turn's scripted answer
        # and run beside the second turn being timed
        env = {"CODEX_HOME": str(home), "FAKE_OPENAI_API_KEY": FAKE_KEY, "ACP_AGENT_CODEX_TITLES": "0"}
        return time_turns("codex", env, directory)


def main() -> None:
    print(report("codex_turn", [one_run() for _ in range(RUNS)]))


if __name__ == "__main__":
    main()

"""Muse turn latency: initialize, session/new, first and second prompt against the fake MSP host.

Muse Code has no installable binary, so this runs `acp-agent --provider muse` against the fake
`muse serve` in tests/fakes/muse_host.py (a Python program): it measures the adapter plus a
minimal host, not Muse Code. Reports medians; asserts nothing.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _agent import report, time_turns  # noqa: E402

from tests.muse.e2e_support import muse_env  # noqa: E402

RUNS = 5


def one_run() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory:
        env = {key: value for key, value in muse_env(Path(directory)).items() if value != ""}
        return time_turns("muse", env, directory)


def main() -> None:
    print(report("muse_turn", [one_run() for _ in range(RUNS)]))


if __name__ == "__main__":
    main()

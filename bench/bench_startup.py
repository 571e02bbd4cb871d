"""Startup: spawn → initialize response (median of N runs), RSS after initialize, exit after EOF.

Run: `nox -s bench` or `python bench/bench_startup.py [runs]`. Reports numbers; asserts nothing.
"""

from __future__ import annotations

import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _agent import RawAgent, median

INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}}


def measure(provider: str, runs: int) -> None:
    startup, rss, exits = [], [], []
    for _ in range(runs):
        agent = RawAgent(provider)
        agent.call("initialize", INITIALIZE)
        startup.append(time.perf_counter() - agent.started)
        rss.append(agent.rss_kib() / 1024)
        exits.append(agent.close())
    print(f"startup[{provider}]: initialize median {median(startup) * 1000:.1f} ms "
          f"(min {min(startup) * 1000:.1f}, max {max(startup) * 1000:.1f}, n={runs}); "
          f"RSS after initialize median {median(rss):.1f} MB; exit after EOF median {median(exits) * 1000:.1f} ms")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 15
    from acp_agent.backends.plugins import discover

    for provider in discover().names():
        measure(provider, runs)


if __name__ == "__main__":
    main()

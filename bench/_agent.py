"""One raw line client for every benchmark: spawns an ACP agent, writes requests, reads frames.

It answers the agent's own requests (a permission request: the first "allow" option) so a turn
never waits on the benchmark, timestamps each frame as it is read, and measures the process tree
(RSS, what is left after exit), for acp-agent and for any other ACP agent command alike.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

OnFrame = Callable[[dict[str, Any], float], None]


def keep_state_across_runs() -> None:
    """One state directory for every agent a bench starts (unless one is set), as a user's
    persists: the first start records the provider's early-start hook, later starts use it."""
    import tempfile

    os.environ.setdefault("ACP_AGENT_STATE_DIR", tempfile.mkdtemp(prefix="acp-agent-bench-state-"))


def executable() -> str:
    """The `acp-agent` command of this environment, its packages byte-compiled (`byte_compile`)."""
    candidate = Path(sys.executable).parent / "acp-agent"
    found = str(candidate) if candidate.exists() else shutil.which("acp-agent")
    if not found:
        raise SystemExit("acp-agent is not installed in this environment")
    byte_compile()
    return found


@functools.cache
def byte_compile(*roots: str) -> None:
    """Write the bytecode of the core's and the plugins' modules (and of `roots`), as installing a
    wheel does. An editable install run with PYTHONDONTWRITEBYTECODE (set on this machine) keeps
    whatever `__pycache__` holds: every module edited since is compiled from source on each start,
    25 ms more on the first `session/new` than an installed agent pays."""
    import compileall
    import importlib.util

    for name in ("acp_agent", "acp_agent_claude", "acp_agent_codex", "acp_agent_muse"):
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(location, quiet=2)
            if "site-packages" not in Path(location).parts and name == "acp_agent":
                print(f"note: {name} runs from {location} (an editable install): its start-up is 5-10 ms "
                      "slower than from a wheel (`pip install ./core ./plugins/...`)", file=sys.stderr)
    for root in roots:
        compileall.compile_dir(root, quiet=2)


# --- the process tree -------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """Every descendant of `pid` (children of all its threads), found through /proc."""
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                for child in (task / "children").read_text().split():
                    found.append(int(child))
                    stack.append(int(child))
    return found


def tree_rss_mb(pid: int) -> tuple[float, int]:
    """RSS of the process and its descendants (MB), and how many processes that is."""
    total, count = 0, 0
    for member in [pid, *descendants(pid)]:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
                    count += 1
    return total / 1024, count


def alive(pids: list[int]) -> list[int]:
    """The processes of `pids` that still run (a zombie has ended)."""
    left = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            left.append(pid)
    return left


# --- the client ---------------------------------------------------------------------------------


class AcpClient:
    """An ACP agent subprocess on stdio, driven with raw JSON-RPC lines."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        self.left = 0
        """After `close`: how many of the agent's descendants were still running."""
        self._next = 0

    def send(self, method: str, params: Any) -> int:
        self._next += 1
        self._write({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return self._next

    def until(self, request_id: int, on_frame: OnFrame | None = None) -> dict[str, Any]:
        """Read frames up to the response to `request_id` and return it (result or error);
        `on_frame` sees every other frame with the time it was read."""
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("the agent closed its output")
            now = time.perf_counter()
            frame = json.loads(line)
            if "method" in frame and "id" in frame:
                self._answer(frame)
                continue
            if frame.get("id") == request_id and "method" not in frame:
                return dict(frame)
            if on_frame is not None:
                on_frame(frame, now)

    def frames_until(self, request_id: int) -> list[dict[str, Any]]:
        """Every frame up to and including the response to `request_id`."""
        frames: list[dict[str, Any]] = []
        frames.append(self.until(request_id, lambda frame, _: frames.append(frame)))
        return frames

    def call(self, method: str, params: Any) -> dict[str, Any]:
        """The response frame (result or error) to one request."""
        return self.until(self.send(method, params))

    def result(self, method: str, params: Any, on_frame: OnFrame | None = None) -> dict[str, Any]:
        """The result of one request; an error response stops the benchmark."""
        answer = self.until(self.send(method, params), on_frame)
        if "error" in answer:
            self.close()
            raise SystemExit(f"{method} failed: {answer['error']}")
        return dict(answer["result"])

    def rss_kib(self) -> int:
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def close(self, grace: float = 0.0) -> float:
        """Close stdin: seconds until the agent exited. `left` is then how many of its descendants
        still ran `grace` seconds after (another adapter's children may take a moment); those are
        killed by PID, the benchmark's own cleanup."""
        tree = descendants(self.process.pid)
        assert self.process.stdin is not None
        started = time.perf_counter()
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        # a blocking waitpid: Popen.wait(timeout=...) polls with sleeps of up to 50 ms, which
        # rounds an exit time up to 64, 114, 164... ms
        killer = threading.Timer(60, self.process.kill)
        killer.start()
        self.process.wait()
        took = time.perf_counter() - started
        killer.cancel()
        deadline = time.monotonic() + grace
        while alive(tree) and time.monotonic() < deadline:
            time.sleep(0.02)
        left = alive(tree)
        self.left = len(left)
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        return took

    def _answer(self, frame: dict[str, Any]) -> None:
        options = (frame.get("params") or {}).get("options") or []
        allow = next((o["optionId"] for o in options if str(o.get("kind", "")).startswith("allow")), None)
        result = {"outcome": {"outcome": "selected", "optionId": allow}} if allow else {}
        self._write({"jsonrpc": "2.0", "id": frame["id"], "result": result})

    def _write(self, frame: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(frame) + "\n").encode())
        self.process.stdin.flush()


class RawAgent(AcpClient):
    """`acp-agent --provider NAME` from this environment, with `env` over the current one."""

    def __init__(self, provider: str, env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        super().__init__([executable(), "--provider", provider], {**os.environ, **(env or {})}, cwd)


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def time_turns(provider: str, env: dict[str, str], cwd: str) -> dict[str, float]:
    """Seconds for initialize (from spawn), session/new, a first and a second one-line prompt."""
    timings: dict[str, float] = {}
    agent = RawAgent(provider, env=env, cwd=cwd)
    agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    timings["initialize"] = time.perf_counter() - agent.started
    started = time.perf_counter()
    session = agent.call("session/new", {"cwd": cwd, "mcpServers": []})["result"]["sessionId"]
    timings["session/new"] = time.perf_counter() - started
    for label in ("first prompt", "second prompt"):
        started = time.perf_counter()
        result = agent.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})
        timings[label] = time.perf_counter() - started
        if result.get("result", {}).get("stopReason") != "end_turn":
            agent.close()
            raise SystemExit(f"{provider}: {label} did not end normally: {result}")
    agent.close()
    return timings


def report(name: str, runs: list[dict[str, float]]) -> str:
    parts = [f"{key} {median([run[key] for run in runs]) * 1000:.0f} ms "
             f"({min(run[key] for run in runs) * 1000:.0f}–{max(run[key] for run in runs) * 1000:.0f})"
             for key in runs[0]]
    return f"{name} (median of {len(runs)}, min–max): " + ", ".join(parts)

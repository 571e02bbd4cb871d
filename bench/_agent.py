"""A raw line client for benchmarks: spawns `acp-agent`, writes requests, reads frames."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def executable() -> str:
    candidate = Path(sys.executable).parent / "acp-agent"
    found = str(candidate) if candidate.exists() else shutil.which("acp-agent")
    if not found:
        raise SystemExit("acp-agent is not installed in this environment")
    return found


class RawAgent:
    def __init__(self, provider: str, env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        full_env = {**os.environ, **(env or {})}
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [executable(), "--provider", provider], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=full_env, cwd=cwd)
        self._next = 0
        self._reader = self.process.stdout

    def send(self, method: str, params: Any) -> int:
        self._next += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}) + "\n"
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode())
        self.process.stdin.flush()
        return self._next

    def frames_until(self, request_id: int) -> list[dict[str, Any]]:
        frames = []
        assert self._reader is not None
        while True:
            line = self._reader.readline()
            if not line:
                raise RuntimeError("agent closed stdout")
            frame = json.loads(line)
            frames.append(frame)
            if frame.get("id") == request_id and "method" not in frame:
                return frames

    def call(self, method: str, params: Any) -> dict[str, Any]:
        return self.frames_until(self.send(method, params))[-1]

    def rss_kib(self) -> int:
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def close(self, timeout: float = 10) -> float:
        """Close stdin; return seconds until the process exited."""
        assert self.process.stdin is not None
        start = time.perf_counter()
        self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return time.perf_counter() - start


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

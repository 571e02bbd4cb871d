"""Claude: spawn → first session ready, 2,000-chunk streaming, 16 idle sessions (RSS, exit).

Each run interleaves the subjects under the same load and reports median [min–max]:
- `acp-agent --provider claude` from this environment;
- `--base DIR`: the same with `DIR/core/src` and `DIR/plugins/claude/src` first on PYTHONPATH
  (an older checkout, e.g. from `git archive`), for before/after ratios;
- `--reference PATH`: another ACP agent command (e.g. claude-agent-acp's bin) as a subject;
- for streaming, the raw CLI: `claude -p --output-format stream-json --include-partial-messages`.

All against the loopback fake Anthropic API. Run: `python bench/bench_claude_sessions.py [runs]
[--base DIR] [--reference PATH] [--only ready,stream,idle,exit1,released]`. Reports numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _agent import AcpClient, executable, keep_state_across_runs, median, tree_rss_mb  # noqa: E402

from tests.fakes.anthropic_api import FakeAnthropicAPI  # noqa: E402

WORDS = 2000
IDLE_SESSIONS = 16


def fake_env(api: FakeAnthropicAPI, home: str) -> dict[str, str]:
    return {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-ant-bench-0000",
            "CLAUDE_CONFIG_DIR": os.path.join(home, "config"), "HOME": home,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"}


INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}}


def ready(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, float]:
    agent = AcpClient(argv, env, cwd)
    agent.result("initialize", INITIALIZE)
    initialized = time.perf_counter()
    agent.result("session/new", {"cwd": cwd, "mcpServers": []})
    done = time.perf_counter()
    agent.close()
    return {"initialize": initialized - agent.started, "session/new": done - initialized,
            "ready": done - agent.started}


def stream(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, float]:
    agent = AcpClient(argv, env, cwd)
    agent.result("initialize", INITIALIZE)
    session = agent.result("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
    times: list[float] = []
    texts: list[str] = []

    def chunk(frame: dict[str, Any], now: float) -> None:
        update = (frame.get("params") or {}).get("update") or {}
        if update.get("sessionUpdate") == "agent_message_chunk":
            times.append(now)
            texts.append(update["content"]["text"])

    agent.until(agent.send("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
                chunk)
    agent.close()
    # (the reference adds a notice of its own after the answer: it is not counted)
    text, done, index = "", len(answer()), 0
    for piece in texts:
        text += piece
        if len(text) >= done:
            break
        index += 1
    if text != answer():
        raise SystemExit("the streamed answer differs from the fake API's")
    return {"first→last chunk": times[index] - times[0], "chunks": float(index + 1)}


def raw_stream(cli: str, env: dict[str, str], cwd: str) -> dict[str, float]:
    process = subprocess.Popen([cli, "-p", "go", "--output-format", "stream-json", "--verbose",
                                "--include-partial-messages"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL, env=env, cwd=cwd)
    assert process.stdout is not None
    times: list[float] = []
    for line in process.stdout:
        message = json.loads(line)
        if message.get("type") == "stream_event" and \
                (message["event"].get("delta") or {}).get("type") == "text_delta":
            times.append(time.perf_counter())
    process.wait()
    return {"first→last chunk": times[-1] - times[0], "chunks": float(len(times))}


def idle(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, float]:
    agent = AcpClient(argv, env, cwd)
    agent.result("initialize", INITIALIZE)
    for _ in range(IDLE_SESSIONS):
        agent.result("session/new", {"cwd": cwd, "mcpServers": []})
    time.sleep(2)  # a benchmark: let the CLIs settle before sampling memory
    memory, processes = tree_rss_mb(agent.process.pid)
    exit_s = agent.close()
    return {"RSS MB": memory, "processes": float(processes), "exit": exit_s, "left": float(agent.left)}


def one_session_exit(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, float]:
    agent = AcpClient(argv, env, cwd)
    agent.result("initialize", INITIALIZE)
    agent.result("session/new", {"cwd": cwd, "mcpServers": []})
    exit_s = agent.close()
    return {"exit": exit_s, "left": float(agent.left)}


def first_chunk(agent: AcpClient, session: str) -> float:
    """Seconds from sending a prompt to its first agent_message_chunk."""
    started = time.perf_counter()
    seen: list[float] = []

    def chunk(frame: dict[str, Any], now: float) -> None:
        update = (frame.get("params") or {}).get("update") or {}
        if update.get("sessionUpdate") == "agent_message_chunk" and not seen:
            seen.append(now)

    agent.until(agent.send("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}), chunk)
    return seen[0] - started


def released(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, float]:
    """First-chunk latency of a prompt on a live session and on one whose CLI was released (the
    bound set to one live CLI: opening a second session releases the first)."""
    agent = AcpClient(argv, {**env, "ACP_AGENT_CLAUDE_MAX_LIVE_CLIS": "1"}, cwd)
    agent.result("initialize", INITIALIZE)
    first = agent.result("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
    first_chunk(agent, first)
    live = first_chunk(agent, first)
    agent.result("session/new", {"cwd": cwd, "mcpServers": []})
    time.sleep(1)  # a benchmark: let the released CLI go
    revived = first_chunk(agent, first)
    agent.close()
    return {"live session": live, "released session": revived}


def answer() -> str:
    return " ".join(f"w{i}" for i in range(WORDS))


def show(name: str, rows: list[dict[str, float]]) -> None:
    parts = []
    for key in rows[0]:
        values = [row[key] for row in rows]
        if key in ("RSS MB", "processes", "chunks", "left"):
            parts.append(f"{key} {median(values):.0f} [{min(values):.0f}–{max(values):.0f}]")
        else:
            parts.append(f"{key} {median(values) * 1000:.0f} ms [{min(values) * 1000:.0f}–{max(values) * 1000:.0f}]")
    print(f"  {name}: " + ", ".join(parts), flush=True)


def main() -> None:
    keep_state_across_runs()
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="?", type=int, default=5)
    parser.add_argument("--base")
    parser.add_argument("--reference")
    parser.add_argument("--only", default="ready,stream,idle")
    args = parser.parse_args()
    subjects: dict[str, tuple[list[str], dict[str, str]]] = {"acp-agent": ([executable(), "--provider", "claude"], {})}
    if args.base:
        base = Path(args.base)
        path = os.pathsep.join([str(base / "core" / "src"), str(base / "plugins" / "claude" / "src")])
        subjects["acp-agent (base)"] = ([executable(), "--provider", "claude"], {"PYTHONPATH": path})
    if args.reference:
        # as root the reference refuses to start unless told it runs in a sandbox
        subjects["reference"] = ([args.reference], {"IS_SANDBOX": "1"})
    from acp_agent_claude.locate import find_cli  # type: ignore[import-untyped]

    cli = find_cli()
    assert cli is not None
    measures: dict[str, Callable[[list[str], dict[str, str], str], dict[str, float]]] = {
        "ready": ready, "stream": stream, "idle": idle, "exit1": one_session_exit,
        "released": released}
    for measure in args.only.split(","):
        print(f"{measure}:", flush=True)
        results: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.runs):
            for name, (argv, extra) in subjects.items():
                if measure == "released" and name != "acp-agent":
                    continue
                step = {"reply": answer()} if measure == "stream" else {"reply": "ok"}
                with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as home, FakeAnthropicAPI([step]) as api:
                    results.setdefault(name, []).append(measures[measure](argv, {**fake_env(api, home), **extra}, home))
            if measure == "stream":
                with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as home, \
                        FakeAnthropicAPI([{"reply": answer()}]) as api:
                    results.setdefault("raw claude -p", []).append(raw_stream(cli, fake_env(api, home), home))
        for name, rows in results.items():
            show(name, rows)


if __name__ == "__main__":
    main()

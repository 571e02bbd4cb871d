"""`session/load` of long histories, Claude and Codex (issue 25, item 11).

Claude: a transcript of N turns as the real CLI writes them (`tests/claude/long_transcript.py`:
the user prompt, one Bash call and its result, the answer text), loaded by a fresh agent with the
real CLI resuming it against the fake Anthropic API; beside it claude-agent-acp when it is
installed (as in `bench_vs_reference.py`: `ACP_REFERENCE_DIR`, default /work/ref). Codex: one real
turn (a prompt, a shell call and its output, the answer) run by the real `codex app-server`
against the fake Responses API, its rollout lines repeated to N turns with fresh ids, loaded by a
fresh agent. Per run: request → response (load), request → first replayed update, the replayed
user and agent message chunks per turn (the same at every size: complete), and the peak RSS of
the agent's process tree (sampled every 20 ms). Reports median [min–max]; asserts nothing.

    python bench/bench_long_history.py [--turns 100,1000,10000,50000] [--runs 3] [--only claude,codex,ref]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _agent import AcpClient, executable, median, tree_rss_mb  # noqa: E402
from bench_vs_reference import INITIALIZE, claude_fixture, codex_binary, codex_fixture, reference  # noqa: E402

from tests.claude import long_transcript  # noqa: E402

Row = dict[str, float]


class PeakRss:
    """The highest RSS of a process tree, sampled every 20 ms while it runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, tree_rss_mb(self.pid)[0])

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def load(argv: list[str], env: dict[str, str], cwd: str, session_id: str) -> Row:
    """One fresh agent: initialize, then session/load timed; the agent is closed after."""
    agent = AcpClient(argv, env, cwd)
    peak = PeakRss(agent.process.pid)
    first: list[float] = []
    chunks = [0]

    def on_frame(frame: dict[str, Any], now: float) -> None:
        update = (frame.get("params") or {}).get("update") or {}
        kind = update.get("sessionUpdate")
        if frame.get("method") == "session/update" and kind in ("user_message_chunk", "agent_message_chunk",
                                                                 "tool_call"):
            first.append(now) if not first else None
            chunks[0] += kind != "tool_call"

    try:
        agent.result("initialize", INITIALIZE)
        started = time.perf_counter()
        answer = agent.until(agent.send("session/load", {"sessionId": session_id, "cwd": cwd, "mcpServers": []}),
                             on_frame)
        took = time.perf_counter() - started
    finally:
        rss = peak.stop()
        agent.close(grace=5)
    if "error" in answer:
        print(f"  session/load failed: {answer['error'].get('message')}", file=sys.stderr)
        return {"load": float("nan"), "first": float("nan"), "chunks": chunks[0], "rss": rss}
    return {"load": took, "first": (first[0] - started) if first else float("nan"), "chunks": chunks[0],
            "rss": rss}


# --- Claude ---------------------------------------------------------------------------------------


def claude_store(env: dict[str, str], cwd: str, turns: int) -> str:
    return long_transcript.install(Path(env["CLAUDE_CONFIG_DIR"]), Path(cwd), turns)


# --- Codex ----------------------------------------------------------------------------------------


def codex_turn(env: dict[str, str], cwd: str) -> tuple[Path, str]:
    """One real turn (prompt, shell call, answer) through acp-agent and app-server: its rollout."""
    agent = AcpClient([executable(), "--provider", "codex"], env, cwd)
    try:
        agent.result("initialize", INITIALIZE)
        session = agent.result("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        agent.result("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "List files."}]})
    finally:
        agent.close(grace=5)
    [rollout] = Path(env["CODEX_HOME"], "sessions").rglob(f"rollout-*{session}.jsonl")
    return rollout, session


def codex_store(rollout: Path, session: str, turns: int) -> str:
    """`rollout` with its one turn repeated `turns` times (fresh turn and call ids), as a new thread."""
    lines = rollout.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if '"task_started"' in line)
    head, turn = lines[:start], "\n".join(lines[start:])
    ids = sorted(set(re.findall(r'"(?:turn_id|call_id|id)":"([^"]+)"', turn)) - {session}, key=len, reverse=True)
    thread = str(uuid.uuid4())
    path = rollout.with_name(rollout.name.replace(session, thread))
    ordinal = iter(range(10**9))
    with path.open("w") as out:
        out.write("\n".join(head).replace(session, thread) + "\n")
        for n in range(turns):
            body = turn.replace(session, thread)
            for old in ids:
                body = body.replace(old, f"{old[:max(len(old) - 9, 1)]}{n:09d}")
            out.write(re.sub(r'"ordinal":\d+', lambda _: f'"ordinal":{next(ordinal) + len(head)}', body) + "\n")
    return thread


# --- the run --------------------------------------------------------------------------------------


def cell(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    clean = [v for v in values if v == v]
    if not clean:
        return "failed"
    return f"{median(clean) * scale:.{digits}f} [{min(clean) * scale:.{digits}f}–{max(clean) * scale:.{digits}f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", default="100,1000,10000,50000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="claude,ref,codex")
    options = parser.parse_args()
    sizes, only = [int(n) for n in options.turns.split(",")], options.only.split(",")
    agent = executable()
    claude_ref = reference("claude-agent-acp")
    subjects: list[tuple[str, list[str]]] = []
    if "claude" in only:
        subjects.append(("acp-agent claude", [agent, "--provider", "claude"]))
    if "ref" in only:
        if claude_ref:
            subjects.append(("claude-agent-acp", claude_ref))
        else:
            print("claude-agent-acp: not installed (see bench_vs_reference.py)", file=sys.stderr)
    results: dict[tuple[str, int], list[Row]] = {}
    with contextlib.ExitStack() as stack:
        if subjects:
            env, cwd = stack.enter_context(claude_fixture())
            for turns in sizes:
                session = claude_store(env, cwd, turns)
                for _ in range(options.runs):
                    for name, argv in subjects:  # interleaved: the same load for both
                        results.setdefault((name, turns), []).append(load(argv, env, cwd, session))
                        print(f"{name} {turns}: {results[(name, turns)][-1]}", file=sys.stderr)
        if "codex" in only and codex_binary():
            env, cwd = stack.enter_context(codex_fixture(SHELL_TURN))
            rollout, base = codex_turn(env, cwd)
            for turns in sizes:
                thread = codex_store(rollout, base, turns)
                for _ in range(options.runs):
                    results.setdefault(("acp-agent codex", turns), []).append(
                        load([agent, "--provider", "codex"], env, cwd, thread))
                    print(f"codex {turns}: {results[('acp-agent codex', turns)][-1]}", file=sys.stderr)
    print(f"load average {os.getloadavg()[0]:.1f}; {options.runs} runs each; median [min–max]\n")
    print("| subject | turns | session/load (s) | first update (s) | message chunks per turn | peak tree RSS (MB) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (name, turns), rows in results.items():
        chunks = sorted({f"{r['chunks'] / turns:.2f}" for r in rows})  # the same at every size: complete
        print(f"| {name} | {turns:,} | {cell([r['load'] for r in rows])} | {cell([r['first'] for r in rows], 1, 3)} "
              f"| {'/'.join(chunks)} | {cell([r['rss'] for r in rows], 1, 0)} |")


SHELL_TURN = [{"shell": ["bash", "-lc", "ls"], "reply": "Listing."}, {"reply": "There are two files."}]
"""The fake model's one turn: a shell call, then the answer."""


if __name__ == "__main__":
    main()

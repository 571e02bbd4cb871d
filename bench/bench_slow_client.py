"""Memory with a stalled client: 8 sessions stream long answers while the client stops reading.

The client starts 8 turns of DELTAS text deltas each, stops reading the agent's stdout for STALL_S
seconds (sampling the agent's RSS), then reads everything. Reports the agent's peak RSS (VmHWM)
during the stall and checks that every session received every byte of its answer, in order.
Asserts nothing else. By default the turns are the scripted test provider's (the core alone);
`--claude` runs the real Claude Code CLI against the fake Anthropic API instead (the provider's
own buffers too; the CLIs' memory is not counted, only the agent's); `--codex` the real codex
app-server against the fake Responses API (one word per delta); `--muse` the fake Muse host (one
host per session, `many:<DELTAS>` turns of 105-byte chunks). Codex and Muse sessions are opened by
a client that declares `sessionFailure`, so notices are not mixed into the answer text.

    python bench/bench_slow_client.py [--claude | --codex | --muse] [DELTAS] [STALL_S]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _agent import RawAgent  # noqa: E402

SESSIONS = 8


def status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


@contextmanager
def scripted(directory: str, deltas: int) -> Iterator[tuple[str, dict[str, str], str]]:
    script = os.path.join(directory, "script.json")
    with open(script, "w") as handle:
        json.dump({"turns": [[{"deltas": deltas}] for _ in range(SESSIONS)]}, handle)
    yield "scripted", {"ACP_AGENT_SCRIPTED_SCRIPT": script}, "".join(f"{index} " for index in range(deltas))


@contextmanager
def claude(directory: str, deltas: int) -> Iterator[tuple[str, dict[str, str], str]]:
    from tests.fakes.anthropic_api import FakeAnthropicAPI

    text = " ".join(f"w{index}" for index in range(deltas))
    with FakeAnthropicAPI([{"slow_stream": {"text": text, "interval_s": 0}, "times": SESSIONS}]) as api:
        yield "claude", {
            "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-ant-bench-0000",
            "CLAUDE_CONFIG_DIR": os.path.join(directory, "config"), "HOME": directory,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "NO_PROXY": "127.0.0.1,localhost",
        }, text


@contextmanager
def codex(directory: str, deltas: int) -> Iterator[tuple[str, dict[str, str], str]]:
    from tests.codex.e2e_support import codex_env, write_codex_home
    from tests.fakes.responses_api import FakeResponsesAPI

    text = " ".join(f"w{index}" for index in range(deltas))
    with FakeResponsesAPI([{"slow_stream": {"text": text, "interval_s": 0}}] * SESSIONS) as api:
        yield "codex", codex_env(write_codex_home(api, Path(directory))), text


@contextmanager
def muse(directory: str, deltas: int) -> Iterator[tuple[str, dict[str, str], str]]:
    from tests.muse.e2e_support import muse_env

    yield "muse", muse_env(Path(directory)), "".join(f"w{index} " + "." * 100 for index in range(deltas))


SUBJECTS = {"--claude": claude, "--codex": codex, "--muse": muse}
CAPABLE_META = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure"]}}}


def run(deltas: int, stall_s: float, subject: str | None) -> str:
    with tempfile.TemporaryDirectory() as directory, \
            SUBJECTS.get(subject or "", scripted)(directory, deltas) as (provider, env, expected):
        for name in [name for name, value in env.items() if value == ""]:  # "" means unset (as in the tests)
            del env[name]
            os.environ.pop(name, None)
        agent = RawAgent(provider, env=env, cwd=directory)
        pid = agent.process.pid
        initialize: dict[str, object] = {"protocolVersion": 1, "clientCapabilities": {}}
        if provider in ("codex", "muse"):
            initialize["_meta"] = CAPABLE_META
        agent.call("initialize", initialize)
        sessions = [agent.call("session/new", {"cwd": directory, "mcpServers": []})["result"]["sessionId"]
                    for _ in range(SESSIONS)]
        before = status_kib(pid, "VmRSS")
        prompt_text = f"turn:many:{deltas}" if provider == "muse" else "go"
        prompts = {agent.send("session/prompt", {"sessionId": session,
                                                 "prompt": [{"type": "text", "text": prompt_text}]}):
                   session for session in sessions}
        # The client stops reading: the agent's writes to stdout block once the pipe is full.
        started = time.perf_counter()
        samples = []
        while time.perf_counter() - started < stall_s:
            samples.append(status_kib(pid, "VmRSS"))
            time.sleep(0.05)
        peak_stalled = status_kib(pid, "VmHWM")
        # The client resumes reading.
        texts: dict[str, list[str]] = {session: [] for session in sessions}
        answered: dict[str, str] = {}
        resumed = time.perf_counter()
        assert agent.process.stdout is not None
        while len(answered) < SESSIONS:
            line = agent.process.stdout.readline()
            if not line:
                raise SystemExit("agent closed stdout before every prompt was answered")
            frame = json.loads(line)
            if frame.get("method") == "session/update":
                update = frame["params"]["update"]
                if update.get("sessionUpdate") == "agent_message_chunk":
                    texts[frame["params"]["sessionId"]].append(update["content"]["text"])
            elif frame.get("id") in prompts:
                answered[prompts[frame["id"]]] = frame.get("result", {}).get("stopReason", repr(frame))
        drained = time.perf_counter() - resumed
        peak_total = status_kib(pid, "VmHWM")
        agent.close()
    complete = all("".join(chunks) == expected for chunks in texts.values())
    if not complete or set(answered.values()) != {"end_turn"}:
        bad = [s for s, chunks in texts.items() if "".join(chunks) != expected]
        raise SystemExit(f"answers incomplete or out of order in {bad}; stop reasons {answered}")
    return (f"slow_client ({provider}): {SESSIONS} sessions × {deltas:,} deltas ({len(expected):,} bytes of text each), "
            f"stalled {stall_s:.0f} s: agent RSS before the turns {before / 1024:.1f} MB, max sampled during "
            f"the stall {max(samples) / 1024:.1f} MB, peak (VmHWM) by the end of the stall "
            f"{peak_stalled / 1024:.1f} MB, peak overall {peak_total / 1024:.1f} MB; after resuming, every "
            f"byte of every answer arrived in order ({drained:.1f} s to drain)")


def main() -> None:
    args = [arg for arg in sys.argv[1:] if arg not in SUBJECTS]
    subject = next((arg for arg in sys.argv[1:] if arg in SUBJECTS), None)
    deltas = int(args[0]) if args else 50_000
    stall_s = float(args[1]) if len(args) > 1 else 5.0
    print(run(deltas, stall_s, subject))


if __name__ == "__main__":
    main()

"""acp-agent against the raw backends and the reference adapters, interleaved in one run (issue 11).

Every row of the issue's table, for every subject that is installed, all on loopback fakes
(`tests/fakes`): spawn → `initialize`; the first `session/new` (raw app-server: `initialize` and
`thread/start`); a 2,000-chunk answer from its first to its last chunk (checked: every chunk
arrived, in order, unaltered); 16 idle sessions, RSS of the process tree once its process set
is stable for 1 s; stdin EOF → exit with 1 and with 16 sessions. For the Claude subjects (issue
25): 16 sessions in use (16 × `session/new`, then one turn in each, then a second turn in each,
with the default release time), and the 16 idle sessions' RSS taken once they have been idle
past acp-agent's release time (`ACP_AGENT_CLAUDE_IDLE_RELEASE_MS`, shortened by `--release-ms`;
every Claude subject waits as long). Subjects run one after another inside each run, so every ratio is taken under the same
load. Reports median [min–max] and ratios; asserts nothing.

Subjects: `acp-agent --provider claude|codex`; `acp-agent` serving every installed provider, its
sessions on Claude or Codex ("acp-agent all (claude|codex)": `--default-provider`); the raw backends (`claude -p … --output-format
stream-json` from the bundled CLI, `codex app-server` driven with raw JSON-RPC); the bundled
CLI alone started and driven as acp-agent runs a session's CLI ("claude CLI as the agent runs
it": stream-json input, the agent's flags, environment and control handshake); and, when they
are installed (`npm install @agentclientprotocol/claude-agent-acp@0.101.0
@agentclientprotocol/codex-acp@2.6.0` in a directory named by `ACP_REFERENCE_DIR`, default
/work/ref), the reference adapters. Missing subjects are skipped and said so; npm is not needed.
With `BENCH_BASELINE_SRC=DIR` (a checkout's root, e.g. `git archive main core plugins | tar -x -C
DIR`), `acp-agent` run from DIR's sources is measured too, as "baseline codex|claude". "python
floor" times this interpreter alone importing what the design mandates (asyncio, anyio, attrs,
cattrs, pluggy) and what answering `initialize` needs at the least (the same without asyncio, plus
json), set against the anchors of targets 2 and 6: the part of each budget no agent on this stack
can spend. "least codex agent" and "least claude agent" (`least_agent.py`) are the least a Python
ACP agent on this stack can be: the backend spawned on its first line with its handshake written,
`initialize` answered after the floor's imports, then the loop, `session/new`, one prompt relayed
delta by delta, and nothing else (no types, plugins, validation or failure handling). Driven as
acp-agent is, they show what of each target's budget the stack itself takes, and what acp-agent adds;
"least codex agent, thread at spawn" also starts the thread at spawn, guessing session/new's.

    python bench/bench_vs_reference.py [--runs 7] [--session-runs 3] [--release-ms 5000]
        [--only codex,claude,...]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _agent import AcpClient, byte_compile, descendants, executable, keep_state_across_runs, median, tree_rss_mb  # noqa: E402

from tests.codex.e2e_support import FAKE_KEY, write_codex_home  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropicAPI  # noqa: E402
from tests.fakes.responses_api import FakeResponsesAPI  # noqa: E402

CHUNKS = 2000
ANSWER = " ".join(f"w{n}" for n in range(CHUNKS))  # the fakes stream one word per delta
SESSIONS = 16
KEYRING_PATH = "--keyring" in sys.argv
PAUSE_S = 0.0
"""--pause-ms: how long an ACP client waits between the initialize answer and session/new."""
IDLE_VAR = "ACP_AGENT_CLAUDE_IDLE_RELEASE_MS"
RELEASE_S = 5.0
"""--release-ms: acp-agent's idle release time for the Claude subjects' 16 idle sessions, and how
long every Claude subject leaves them idle before their RSS is taken."""
REF_DIR = Path(os.environ.get("ACP_REFERENCE_DIR", "/work/ref")) / "node_modules" / "@agentclientprotocol"
Row = dict[str, float]


INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                                          "terminal": False},
              "clientInfo": {"name": "bench", "version": "1"}}


def acp_subject(argv: list[str], env: dict[str, str], cwd: str, *, sessions: bool, in_use: bool = False) -> Row:
    row: Row = {}
    agent = AcpClient(argv, env, cwd)
    try:
        agent.result("initialize", INITIALIZE)
        row["initialize"] = time.perf_counter() - agent.started
        time.sleep(PAUSE_S)  # an editor's user opens a thread later than a benchmark does
        started = time.perf_counter()
        session = agent.result("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        row["session/new"] = time.perf_counter() - started
        row["ready"] = row["initialize"] + row["session/new"]
        chunks: list[tuple[float, str]] = []

        def collect(frame: dict[str, Any], now: float) -> None:
            update = (frame.get("params") or {}).get("update") or {}
            if frame.get("method") == "session/update" and update.get("sessionUpdate") == "agent_message_chunk":
                content = update.get("content") or {}
                if content.get("type") == "text":
                    chunks.append((now, content["text"]))

        agent.result("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "stream"}]},
                     collect)
        answer = [(when, text) for when, text in chunks if text.lstrip().startswith("w")]
        row["stream"] = answer[-1][0] - answer[0][0] if answer else float("nan")
        row["stream ok"] = float("".join(text for _, text in answer) == ANSWER)
    finally:
        row["exit 1"] = agent.close(grace=5)
    row["left 1"] = agent.left
    if sessions and in_use:
        row.update(sessions_in_use(argv, env, cwd))
    if sessions:
        release = {IDLE_VAR: str(round(RELEASE_S * 1000))} if in_use else {}
        agent = AcpClient(argv, {**env, **release}, cwd)
        try:
            agent.result("initialize", INITIALIZE)
            for _ in range(SESSIONS):
                agent.result("session/new", {"cwd": cwd, "mcpServers": []})
            if in_use:
                time.sleep(RELEASE_S)  # a benchmark: idle past the release time
            row["rss 16"], row["procs 16"] = idle_tree(agent.process.pid)
        finally:
            row["exit 16"] = agent.close(grace=5)
        row["left 16"] = agent.left
    return row


def sessions_in_use(argv: list[str], env: dict[str, str], cwd: str) -> Row:
    """16 × session/new, then one turn in each session, then a second turn in each, in an agent
    with the default release time (a shortened one would release CLIs between the turns of a
    loaded run), and the tree's processes then (acp-agent: itself and one CLI per session)."""
    agent = AcpClient(argv, {name: value for name, value in env.items() if name != IDLE_VAR}, cwd)
    try:
        agent.result("initialize", INITIALIZE)
        started = time.perf_counter()
        opened = [agent.result("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
                  for _ in range(SESSIONS)]
        row: Row = {"new 16": time.perf_counter() - started}
        for key in ("turn 16", "again 16"):
            begun = time.perf_counter()
            for session in opened:
                agent.result("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})
            row[key] = time.perf_counter() - begun
        row["new+turn 16"] = row["new 16"] + row["turn 16"]
        row["procs in use"] = float(len(descendants(agent.process.pid)) + 1)
    finally:
        agent.close(grace=5)
    return row


def idle_tree(pid: int) -> tuple[float, int]:
    """The tree's RSS once it is idle: its process set unchanged for 1 s (at most 10 s), so a
    backend still being released or started after the last answer is not counted half-way."""
    deadline, stable_since, members = time.monotonic() + 10, time.monotonic(), set(descendants(pid))
    while time.monotonic() < deadline and time.monotonic() - stable_since < 1:
        time.sleep(0.1)
        now = set(descendants(pid))
        if now != members:
            members, stable_since = now, time.monotonic()
    return tree_rss_mb(pid)


# --- the raw backends -------------------------------------------------------------------------------


def codex_binary() -> str | None:
    try:
        from codex_cli_bin import bundled_codex_path  # type: ignore[import-untyped]
    except ImportError:
        return None
    return str(bundled_codex_path())


def raw_app_server(env: dict[str, str], cwd: str) -> Row:
    """`codex app-server` with raw JSON-RPC: initialize, thread/start, one streamed turn."""
    binary = codex_binary()
    assert binary is not None
    row: Row = {}
    started = time.perf_counter()
    process = subprocess.Popen([binary, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    assert process.stdin is not None and process.stdout is not None

    def send(frame: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write((json.dumps(frame) + "\n").encode())
        process.stdin.flush()

    def until(request_id: int | None, method: str | None = None,
              on: Callable[[dict[str, Any], float], None] | None = None) -> dict[str, Any]:
        assert process.stdout is not None
        while True:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError("app-server closed its output")
            now = time.perf_counter()
            frame = json.loads(line)
            if on is not None:
                on(frame, now)
            if request_id is not None and frame.get("id") == request_id and "method" not in frame:
                return frame
            if method is not None and frame.get("method") == method:
                return frame

    try:
        send({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "bench", "version": "1"},
                                                          "capabilities": {"experimentalApi": True}}})
        until(1)
        row["initialize"] = time.perf_counter() - started
        send({"method": "initialized"})
        begun = time.perf_counter()
        send({"id": 2, "method": "thread/start", "params": {"cwd": cwd}})
        thread = until(2)["result"]["thread"]["id"]
        row["session/new"] = time.perf_counter() - begun
        row["ready"] = row["initialize"] + row["session/new"]
        deltas: list[tuple[float, str]] = []

        def collect(frame: dict[str, Any], now: float) -> None:
            if frame.get("method") == "item/agentMessage/delta":
                deltas.append((now, frame["params"]["delta"]))

        send({"id": 3, "method": "turn/start", "params": {"threadId": thread,
                                                          "input": [{"type": "text", "text": "stream"}]}})
        until(None, "turn/completed", collect)
        row["stream"] = deltas[-1][0] - deltas[0][0] if deltas else float("nan")
        row["stream ok"] = float("".join(text for _, text in deltas) == ANSWER)
    finally:
        close(process)
    return row


def least_codex_agent(env: dict[str, str], cwd: str, *options: str) -> Row:
    """`least_agent.py codex`, driven as acp-agent is (one session: it serves no more)."""
    binary = codex_binary()
    assert binary is not None
    return acp_subject([sys.executable, str(HERE / "least_agent.py"), "codex", *options, binary], env, cwd,
                       sessions=False)


def least_claude_agent(env: dict[str, str], cwd: str) -> Row:
    """`least_agent.py claude` with the argv and environment acp-agent gives a session's CLI."""
    argv, cli_env, _ = claude_cli_as_agent_runs_it(env, cwd)
    return acp_subject([sys.executable, str(HERE / "least_agent.py"), "claude", *argv], cli_env, cwd, sessions=False)


def close(process: subprocess.Popen[bytes]) -> None:
    """End a raw subject: close its input, then kill it if it has not exited within 10 s."""
    assert process.stdin is not None
    process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def claude_cli() -> str | None:
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "_bundled" / "claude"
    return str(path) if path.exists() else None


def raw_claude(env: dict[str, str], cwd: str) -> Row:
    """`claude -p … --output-format stream-json`: the first to the last text delta."""
    cli = claude_cli()
    assert cli is not None
    argv = [cli, "-p", "stream", "--output-format", "stream-json", "--verbose", "--include-partial-messages"]
    deltas: list[tuple[float, str]] = []
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=env, cwd=cwd)
    assert process.stdout is not None
    for line in process.stdout:
        now = time.perf_counter()
        with contextlib.suppress(ValueError):
            frame = json.loads(line)
            event = frame.get("event") or {}
            delta = event.get("delta") or {}
            if frame.get("type") == "stream_event" and delta.get("type") == "text_delta":
                deltas.append((now, delta["text"]))
    process.wait(timeout=30)
    row: Row = {"first chunk": deltas[0][0] - started if deltas else float("nan")}
    row["stream"] = deltas[-1][0] - deltas[0][0] if deltas else float("nan")
    row["stream ok"] = float("".join(text for _, text in deltas) == ANSWER)
    return row


def claude_cli_as_agent_runs_it(env: dict[str, str], cwd: str) -> tuple[list[str], dict[str, str], str]:
    """The bundled CLI's argv and environment as acp-agent starts a new session's CLI
    (`acp_agent_claude.prestart`), and that session's id."""
    from acp_agent_claude.prestart import command, environment

    cli = claude_cli()
    assert cli is not None
    session = str(uuid.uuid4())
    argv = command(cli, session_id=session, resume=False, mode="default", model=None, mcp_config=None)
    return argv, environment(env, {}, cwd), session


def cli_as_agent(env: dict[str, str], cwd: str) -> Row:
    """The bundled CLI alone, started and driven exactly as acp-agent drives a session's CLI (its
    argv and environment from `acp_agent_claude.prestart`, stream-json input, the `initialize` and
    `set_permission_mode` control requests, then the prompt): the first to the last text delta.
    Tells the CLI's own speed in the agent's mode from what the agent adds (issue 11, target 3)."""
    argv, cli_env, session = claude_cli_as_agent_runs_it(env, cwd)
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=cli_env, cwd=cwd)
    assert process.stdin is not None and process.stdout is not None
    deltas: list[tuple[float, str]] = []

    def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write((json.dumps(message) + "\n").encode())
        process.stdin.flush()

    def until(kind: str) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            now = time.perf_counter()
            frame = json.loads(line)
            delta = (frame.get("event") or {}).get("delta") or {}
            if frame.get("type") == "stream_event" and delta.get("type") == "text_delta":
                deltas.append((now, delta["text"]))
            if frame.get("type") == kind:
                return
        raise RuntimeError("the CLI closed its output")

    try:
        send({"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize", "hooks": None}})
        until("control_response")
        send({"type": "control_request", "request_id": "req_2",
              "request": {"subtype": "set_permission_mode", "mode": "default"}})
        until("control_response")
        send({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "stream"}]},
              "parent_tool_use_id": None, "session_id": session, "uuid": str(uuid.uuid4())})
        until("result")
    finally:
        close(process)
    row: Row = {"stream": deltas[-1][0] - deltas[0][0] if deltas else float("nan")}
    row["stream ok"] = float("".join(text for _, text in deltas) == ANSWER)
    return row


# --- fixtures per subject ---------------------------------------------------------------------------


@contextlib.contextmanager
def codex_fixture(script: list[dict[str, Any]] | None = None) -> Iterator[tuple[dict[str, str], str]]:
    """A CODEX_HOME on the fake Responses API (one answer, unless `script` says what the model does)."""
    with tempfile.TemporaryDirectory() as directory, FakeResponsesAPI(script or [{"reply": ANSWER}]) as api:
        home = write_codex_home(api, Path(directory))
        work = Path(directory) / "work"
        work.mkdir()
        # The key in the environment, as a user who exports OPENAI_API_KEY has it: without it
        # acp-agent consults the keyring on the first session/new, and loading keyring's
        # backends costs ~200 ms here (`--keyring` measures that case).
        env = {**os.environ, "CODEX_HOME": str(home), "FAKE_OPENAI_API_KEY": FAKE_KEY, "RUST_LOG": "warn",
               "OPENAI_API_KEY": "sk-bench-0000"}
        for name in ("CODEX_API_KEY", "ACP_AGENT_CODEX_BIN"):
            env.pop(name, None)
        if KEYRING_PATH:
            env.pop("OPENAI_API_KEY")
        yield env, str(work)


@contextlib.contextmanager
def claude_fixture() -> Iterator[tuple[dict[str, str], str]]:
    with tempfile.TemporaryDirectory() as directory, FakeAnthropicAPI([{"reply": ANSWER}]) as api:
        work = Path(directory) / "work"
        work.mkdir()
        env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-ant-bench-0000",
               "CLAUDE_CONFIG_DIR": os.path.join(directory, "config"), "HOME": directory,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
               "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
               "IS_SANDBOX": "1"}  # claude-agent-acp bypasses permissions, which root may only do in a sandbox
        yield env, str(work)


FLOORS = {"floor": "import asyncio, anyio, attrs, cattrs, pluggy",
          "floor initialize": "import anyio, attrs, cattrs, pluggy, json"}
"""Python's own share, timed spawn → exit: the imports the design mandates, and those answering
`initialize` needs at the least (the agent answers it before asyncio is loaded)."""


def python_floor(env: dict[str, str], cwd: str) -> Row:
    row: Row = {}
    for key, imports in FLOORS.items():
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", imports], env=env, cwd=cwd, check=True)
        row[key] = time.perf_counter() - started
    return row


@contextlib.contextmanager
def no_fixture() -> Iterator[tuple[dict[str, str], str]]:
    with tempfile.TemporaryDirectory() as directory:
        yield dict(os.environ), directory


def reference(name: str) -> list[str] | None:
    script = REF_DIR / name / "dist" / "index.js"
    node = shutil.which("node")
    return [node, str(script)] if node and script.exists() else None


def subjects() -> dict[str, tuple[Callable[[], Any], Callable[[dict[str, str], str, bool], Row]] | str]:
    """name → (fixture, measure), or the reason it is skipped."""
    found: dict[str, Any] = {}
    agent = executable()

    def acp(argv: list[str], *, in_use: bool = False) -> Callable[[dict[str, str], str, bool], Row]:
        return lambda env, cwd, sessions: acp_subject(argv, env, cwd, sessions=sessions, in_use=in_use)

    found["acp-agent codex"] = ((codex_fixture, acp([agent, "--provider", "codex"])) if codex_binary()
                                else "openai-codex-cli-bin is not installed")
    found["raw app-server"] = ((codex_fixture, lambda env, cwd, sessions: raw_app_server(env, cwd))
                               if codex_binary() else "openai-codex-cli-bin is not installed")
    found["least codex agent"] = ((codex_fixture, lambda env, cwd, sessions: least_codex_agent(env, cwd))
                                  if codex_binary() else "openai-codex-cli-bin is not installed")
    found["least codex agent, thread at spawn"] = (
        (codex_fixture, lambda env, cwd, sessions: least_codex_agent(env, cwd, "--thread-at-spawn"))
        if codex_binary() else "openai-codex-cli-bin is not installed")
    # `acp-agent` alone serves every installed provider: the same rows, the session on one of them.
    found["acp-agent all (codex)"] = ((codex_fixture, acp([agent, "--default-provider", "codex"]))
                                     if codex_binary() else "openai-codex-cli-bin is not installed")
    codex_ref = reference("codex-acp")
    found["codex-acp"] = (codex_fixture, acp(codex_ref)) if codex_ref else f"not installed under {REF_DIR}"
    found["acp-agent claude"] = ((claude_fixture, acp([agent, "--provider", "claude"], in_use=True)) if claude_cli()
                                 else "claude-agent-sdk is not installed")
    found["acp-agent all (claude)"] = ((claude_fixture, acp([agent, "--default-provider", "claude"], in_use=True))
                                      if claude_cli() else "claude-agent-sdk is not installed")
    found["raw claude -p"] = ((claude_fixture, lambda env, cwd, sessions: raw_claude(env, cwd)) if claude_cli()
                              else "claude-agent-sdk is not installed")
    found["least claude agent"] = ((claude_fixture, lambda env, cwd, sessions: least_claude_agent(env, cwd))
                                   if claude_cli() else "claude-agent-sdk is not installed")
    found["claude CLI as the agent runs it"] = ((claude_fixture, lambda env, cwd, sessions: cli_as_agent(env, cwd))
                                                if claude_cli() else "claude-agent-sdk is not installed")
    baseline = os.environ.get("BENCH_BASELINE_SRC")
    if baseline:  # another checkout's sources (e.g. `git archive main core plugins`), for before/after
        path = os.pathsep.join(f"{baseline}/{part}/src" for part in ("core", "plugins/codex", "plugins/claude"))
        byte_compile(*path.split(os.pathsep))

        def before(provider: str) -> Callable[[dict[str, str], str, bool], Row]:
            # That checkout's own command line (its console script's function may not exist here).
            return lambda env, cwd, sessions: acp_subject([sys.executable, "-m", "acp_agent.cli", "--provider", provider],
                                                          {**env, "PYTHONPATH": path}, cwd, sessions=sessions,
                                                          in_use=provider == "claude")

        found["baseline codex"] = (codex_fixture, before("codex"))
        found["baseline claude"] = (claude_fixture, before("claude"))
    claude_ref = reference("claude-agent-acp")
    found["claude-agent-acp"] = ((claude_fixture, acp(claude_ref, in_use=True)) if claude_ref
                                 else f"not installed under {REF_DIR}")
    found["python floor"] = (no_fixture, lambda env, cwd, sessions: python_floor(env, cwd))
    return found


# --- the report -------------------------------------------------------------------------------------

ROWS = [("initialize", "spawn → initialize", 1000, "ms"), ("session/new", "first session/new (raw: thread/start)",
                                                            1000, "ms"),
        ("ready", "spawn → first session ready", 1000, "ms"),
        ("stream", f"{CHUNKS:,}-chunk answer, first → last chunk", 1000, "ms"),
        ("new 16", f"Claude: {SESSIONS} × session/new", 1000, "ms"),
        ("turn 16", f"Claude: then one turn in each of the {SESSIONS}", 1000, "ms"),
        ("new+turn 16", f"Claude: {SESSIONS} × session/new plus one turn in each", 1000, "ms"),
        ("again 16", f"Claude: a second turn in each of the {SESSIONS}", 1000, "ms"),
        ("procs in use", "Claude: processes after the second turns", 1, ""),
        ("rss 16", f"{SESSIONS} idle sessions, RSS with children (Claude: idle past the release time)", 1, "MB"),
        ("procs 16", f"{SESSIONS} idle sessions, processes", 1, ""),
        ("exit 1", "stdin EOF → exit, 1 session", 1000, "ms"), ("exit 16", f"stdin EOF → exit, {SESSIONS} sessions",
                                                                 1000, "ms"),
        ("floor", f"python -c \"{FLOORS['floor']}\"", 1000, "ms"),
        ("floor initialize", f"python -c \"{FLOORS['floor initialize']}\"", 1000, "ms")]
RATIOS = [("ready", "acp-agent codex", "raw app-server", "target 2: ≤ 1.15"),
          ("stream", "acp-agent codex", "raw app-server", "target 3: ≤ 1.1"),
          ("stream", "acp-agent claude", "raw claude -p", "target 3: ≤ 1.1"),
          ("stream", "acp-agent claude", "claude CLI as the agent runs it", "what the agent adds"),
          ("stream", "claude CLI as the agent runs it", "raw claude -p", "the CLI's mode against -p"),
          ("ready", "least codex agent", "raw app-server", "the least agent against target 2's anchor"),
          ("ready", "least codex agent, thread at spawn", "raw app-server",
           "the least agent guessing session/new's thread, against target 2's anchor"),
          ("stream", "least codex agent", "raw app-server", "the least agent against target 3's anchor"),
          ("initialize", "least codex agent", "codex-acp", "the least agent against target 6's anchor"),
          ("ready", "acp-agent codex", "least codex agent", "what acp-agent adds"),
          ("stream", "acp-agent codex", "least codex agent", "what acp-agent adds"),
          ("initialize", "acp-agent codex", "least codex agent", "what acp-agent adds"),
          ("ready", "least claude agent", "claude-agent-acp", "the least agent against target 1's anchor"),
          ("stream", "least claude agent", "raw claude -p", "the least agent against target 3's anchor"),
          ("initialize", "least claude agent", "claude-agent-acp", "the least agent against target 6's anchor"),
          ("ready", "acp-agent claude", "least claude agent", "what acp-agent adds"),
          ("stream", "acp-agent claude", "least claude agent", "what acp-agent adds"),
          ("initialize", "acp-agent claude", "least claude agent", "what acp-agent adds"),
          ("ready", "acp-agent claude", "claude-agent-acp", "target 1: ≤ 0.5"),
          ("rss 16", "acp-agent claude", "claude-agent-acp", "target 4, issue 25 item 9: ≤ 0.2, idle past the release time"),
          ("new+turn 16", "acp-agent claude", "claude-agent-acp", "issue 25 item 9: ≤ 1.0"),
          ("again 16", "acp-agent claude", "claude-agent-acp", "issue 25 item 9: ≤ 1.0"),
          ("new+turn 16", "acp-agent claude", "baseline claude", "this tree against the baseline"),
          ("again 16", "acp-agent claude", "baseline claude", "this tree against the baseline"),
          ("initialize", "acp-agent codex", "codex-acp", "target 6: ≤ 0.25"),
          ("initialize", "acp-agent claude", "claude-agent-acp", "target 6: ≤ 0.25"),
          ("ready", "acp-agent codex", "baseline codex", "this tree against the baseline"),
          ("ready", "acp-agent claude", "baseline claude", "this tree against the baseline"),
          ("stream", "acp-agent codex", "baseline codex", "this tree against the baseline"),
          ("initialize", "acp-agent codex", "baseline codex", "this tree against the baseline"),
          (("floor", "ready"), "python floor", "raw app-server", "the mandated imports against target 2's anchor"),
          (("floor initialize", "initialize"), "python floor", "codex-acp",
           "what initialize must import against target 6's anchor"),
          (("floor initialize", "initialize"), "python floor", "claude-agent-acp",
           "what initialize must import against target 6's anchor")]


def cell(values: list[float], scale: float, unit: str) -> str:
    values = [v for v in values if v == v]  # drop NaN
    if not values:
        return "—"
    low, mid, high = (f"{v * scale:,.0f}" for v in (min(values), median(values), max(values)))
    return f"{mid} [{low}–{high}]{(' ' + unit) if unit else ''}"


def main() -> None:
    keep_state_across_runs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--session-runs", type=int, default=3, help="runs that also open 16 sessions")
    parser.add_argument("--only", default="", help="comma-separated subject names (default: all found)")
    parser.add_argument("--keyring", action="store_true", help="codex subjects without OPENAI_API_KEY")
    parser.add_argument("--release-ms", type=float, default=5_000,
                        help="Claude subjects: acp-agent's idle release time for the 16 idle sessions, "
                             "and how long every Claude subject leaves them idle before the RSS")
    parser.add_argument("--pause-ms", type=float, default=0,
                        help="ACP subjects: pause between the initialize answer and session/new "
                             "(ready is still initialize + session/new, without the pause)")
    args, _ = parser.parse_known_args()
    global PAUSE_S, RELEASE_S
    PAUSE_S = args.pause_ms / 1000
    RELEASE_S = args.release_ms / 1000
    available = subjects()
    wanted = [name.strip() for name in args.only.split(",") if name.strip()] or list(available)
    runnable = {name: value for name, value in available.items() if name in wanted and not isinstance(value, str)}
    for name, value in available.items():
        if isinstance(value, str) and name in wanted:
            print(f"skipped {name}: {value}")
    results: dict[str, list[Row]] = {name: [] for name in runnable}
    for run in range(args.runs):
        for name, (fixture, measure) in runnable.items():
            with fixture() as (env, cwd):
                try:
                    results[name].append(measure(env, cwd, run < args.session_runs))
                except Exception as exc:  # a subject that fails is reported, the others go on
                    print(f"run {run + 1}: {name} failed: {type(exc).__name__}: {exc}"[:300])
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    names = list(results)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.runs} interleaved runs "
          f"({args.session_runs} with {SESSIONS} sessions), median [min–max]\n")
    print("| measure | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for key, label, scale, unit in ROWS:
        print(f"| {label} | " + " | ".join(cell([row[key] for row in results[name] if key in row], scale, unit)
                                           for name in names) + " |")
    streamed = [name for name in names if any("stream ok" in row for row in results[name])]
    checks = {name: sum(int(row.get("stream ok", 0)) for row in results[name]) for name in streamed}
    left = {name: sum(int(row.get("left 1", 0) + row.get("left 16", 0)) for row in results[name]) for name in names}
    print("\nanswers complete and in order: " + ", ".join(f"{name} {checks[name]}/{len(results[name])}"
                                                         for name in streamed))
    print("processes left after exit: " + ", ".join(f"{name} {left[name]}" for name in names))
    print("\nratios (median of the per-run ratios):")
    for keys, subject, anchor, target in RATIOS:
        key, anchor_key = keys if isinstance(keys, tuple) else (keys, keys)
        if subject in results and anchor in results:
            pairs = [(a[key], b[anchor_key]) for a, b in zip(results[subject], results[anchor], strict=False)
                     if key in a and anchor_key in b and b[anchor_key] > 0]
            if pairs:
                ratios = [a / b for a, b in pairs]
                named = key if key == anchor_key else f"{key} / {anchor_key}"
                print(f"- {named}: {subject} / {anchor} = {median(ratios):.2f} "
                      f"[{min(ratios):.2f}–{max(ratios):.2f}] ({target})")


if __name__ == "__main__":
    main()

"""app-server's `initialize` handshake and `model/list` run as the agent starts, before the client's
first `session/new`, which then only asks for `thread/start` (issue 11, target 2); a handshake that
fails early is reported at that `session/new` as it was when the handshake ran there.

What the agent asks app-server is read from a FIFO that the backend (a tap in front of the real
codex, or the stand-in's request log) writes before answering: the test sees the handshake happen
before it sends `session/new`, without timing anything.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import acp
import anyio
import pytest

from acp_agent_codex import find_codex
from tests.codex.e2e_support import codex_agent, stand_in_env, text, workspace, write_codex_home
from tests.e2e.harness import spawn_agent
from tests.e2e.processes import close_input_and_wait_for, wait_ended
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(90)]

TAP = Path(__file__).with_name("tap_app_server.py")


class Fifo:
    """The read end of a FIFO, opened before the writer exists (so opening it never blocks), with a
    write end of our own held open: a writer that opens it per line never makes it read as ended."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.held = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        self.lines: list[str] = []
        self._partial = b""

    def _take(self, data: bytes) -> None:
        *complete, self._partial = (self._partial + data).split(b"\n")
        self.lines.extend(line.decode() for line in complete)

    async def wait_for(self, predicate: Callable[[list[str]], bool], *, timeout_s: float = 30) -> None:
        with anyio.fail_after(timeout_s):
            while not predicate(self.lines):
                await anyio.wait_readable(self.fd)
                try:
                    self._take(os.read(self.fd, 65536))
                except BlockingIOError:
                    continue

    def drain(self) -> list[str]:
        """Every line written so far (the writer writes before it passes a request on)."""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return self.lines
            self._take(data)


@contextmanager
def fifo(path: Path) -> Iterator[Fifo]:
    reader = Fifo(path)
    try:
        yield reader
    finally:
        os.close(reader.held)
        os.close(reader.fd)


def tap_env(tmp_path: Path, tap: Fifo) -> dict[str, str]:
    """The real codex behind the tap, through ACP_AGENT_CODEX_BIN (so the command line prestarts it)."""
    real = find_codex({})
    assert real is not None, "the openai-codex-cli-bin wheel is not installed"
    wrapper = tmp_path / "codex-tap"
    wrapper.write_text(f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(TAP)!r}, run_name='__main__')\n")
    wrapper.chmod(0o755)
    return {"ACP_AGENT_CODEX_BIN": str(wrapper), "TAP_CODEX": real, "TAP_FIFO": str(tap.path)}


@pytest.mark.real_backend
@pytest.mark.parametrize("capable", [pytest.param(True, id="capable"), pytest.param(False, id="legacy")])
async def test_the_handshake_is_done_before_the_first_session_which_only_starts_a_thread(
        tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"reply": "Hello from the fake model"}]) as api, fifo(tmp_path / "tap") as tap:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable, env=tap_env(tmp_path, tap)) as agent:
            # Before any session/new: app-server was asked initialize, then model/list.
            await tap.wait_for(lambda lines: "model/list" in lines)
            assert tap.lines == ["initialize", "model/list"]
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            assert tap.drain() == ["initialize", "model/list", "thread/start"]  # no second handshake
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
            assert result.stop_reason == "end_turn"
            assert tap.drain()[3:] == ["turn/start"]
            log = agent.log_text()
            assert "adopted codex app-server" in log and "started codex app-server" not in log
            answered = log.index("codex app-server (pid ")
            assert "answered initialize" in log[answered:]
            option_ids = {option.id for option in session.config_options or []}
            assert "model" in option_ids  # model/list's answer, asked early, reached the session


@pytest.mark.parametrize(("setting", "failure", "message"), [
    pytest.param("STAND_IN_FAIL_ON", {
        "kind": "appServerError", "source": "host", "retryable": True, "outcome": "failed",
        "recovery": "Check the session before trying again.", "phase": "initializing",
        "execution": "notSubmitted"}, "stand-in refuses initialize.", id="refused"),
    pytest.param("STAND_IN_EXIT_ON", {
        "kind": "transportLost", "source": "transport", "outcome": "failed", "phase": "initializing",
        "execution": "notSubmitted", "recovery": "Start a new session; Codex will be started again."},
        "The connection to Codex was lost.", id="exited"),
])
@pytest.mark.parametrize("capable", [pytest.param(True, id="capable"), pytest.param(False, id="legacy")])
async def test_an_early_handshake_failure_is_reported_at_the_first_session(
        tmp_path: Path, capable: bool, setting: str, failure: dict[str, str], message: str) -> None:
    with fifo(tmp_path / "requests") as requests:
        env = stand_in_env(tmp_path, **{setting: "initialize"}, STAND_IN_LOG=str(requests.path))
        async with spawn_agent("codex", tmp_path, env) as agent:
            await agent.initialize(capable=capable)
            await requests.wait_for(lambda lines: len(lines) >= 1)  # the handshake, before any session
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.new_session(cwd=str(tmp_path))
            methods = [json.loads(line)["method"] for line in requests.drain()]
            if setting == "STAND_IN_FAIL_ON":
                # the failure answered is the early handshake's: app-server was not asked again
                # (the command line wrote `model/list` with `initialize` when it spawned it)
                assert methods == ["initialize", "model/list"]
            else:
                # one that died before the runtime claimed it is not adopted: the session's own
                # app-server is asked (and dies) in turn, with nothing else asked of either
                assert set(methods) == {"initialize"} and len(methods) <= 2
    data = caught.value.data["failure"]
    assert data == failure
    assert str(caught.value).startswith(message)
    assert "No model turn was submitted." in str(caught.value)
    assert agent.frames.problems == []


async def test_an_agent_closed_before_initialize_stops_app_server(tmp_path: Path) -> None:
    """The runtime's opening waits for `initialize` to be answered: the end of input cancels it,
    the agent exits at once, and the app-server it started is gone."""
    with fifo(tmp_path / "requests") as requests:
        env = stand_in_env(tmp_path, STAND_IN_LOG=str(requests.path))
        async with spawn_agent("codex", tmp_path, env) as agent:
            await requests.wait_for(lambda lines: len(lines) >= 2)  # initialize, model/list: it runs
            server = int((tmp_path / "stand-in.pid").read_text())
            await close_input_and_wait_for(agent.process, server)
            assert agent.process.returncode == 0
        await wait_ended([server], within_s=5)

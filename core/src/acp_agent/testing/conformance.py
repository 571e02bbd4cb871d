"""Contract base classes a provider's tests subclass (pytest collects `Test*` subclasses).

Each contract is driven by tables the provider fills in from real backend output, so every
provider gets the same checks: classification, titles, history recognition, both carriers,
legacy behaviour and redaction.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar, Literal

import anyio
import pytest
from attrs import define, field

from acp_agent.agent import CANCEL_GRACE_S
from acp_agent.backends.contract import (
    ProviderRuntime,
    ProviderSpec,
    RuntimeContext,
    SessionChannel,
    SessionStart,
    TurnChannel,
    TurnFailed,
)
from acp_agent.backends.events import MODEL_ANSWER_UPDATES, Event, TurnEnd
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.testing.client import InProcessClient, run_in_process
from acp_agent.wire.rpc import RpcError

Step = Event | FailureObservation | TurnEnd


class ClassificationContract:
    """`cases`: (native event, expected neutral result); `classify` is the provider's pure function."""

    cases: ClassVar[Sequence[tuple[Any, Any]]] = ()
    unknown_natives: ClassVar[Sequence[Any]] = ()

    def classify(self, native: Any) -> Any:
        raise NotImplementedError

    def test_classification_table(self) -> None:
        assert self.cases, "fill `cases` from real backend output"
        mismatches = [(native, expected, self.classify(native)) for native, expected in self.cases
                      if self.classify(native) != expected]
        assert not mismatches, "\n".join(f"{n!r}\n  expected {e!r}\n  got      {g!r}" for n, e, g in mismatches)

    def test_unknown_native_kinds_are_provider_errors(self) -> None:
        for native in self.unknown_natives:
            result = self.classify(native)
            kind = getattr(result, "kind", None)
            assert kind is FailureKind.PROVIDER_ERROR, f"{native!r} classified as {result!r}, never success"


class TitleContract:
    """`title_cases`: (native event, the vendor's own text or None); titles are never canned."""

    title_cases: ClassVar[Sequence[tuple[Any, str | None]]] = ()

    def extract_title(self, native: Any) -> str | None:
        raise NotImplementedError

    def test_titles_are_the_vendor_text(self) -> None:
        assert self.title_cases, "fill `title_cases` from real backend output"
        for native, expected in self.title_cases:
            assert self.extract_title(native) == expected, native


class HistoryContract:
    """`history_cases`: (stored transcript, expected [(message id, preceding user id or None)])."""

    history_cases: ClassVar[Sequence[tuple[Any, Sequence[tuple[str, str | None]]]]] = ()

    def recognise(self, transcript: Any) -> Sequence[tuple[str, str | None]]:
        raise NotImplementedError

    def test_history_recognition(self) -> None:
        assert self.history_cases, "fill `history_cases` from stored backend transcripts"
        for transcript, expected in self.history_cases:
            assert list(self.recognise(transcript)) == list(expected)


class _PlayedRuntime(ProviderRuntime):
    """Plays neutral steps that a provider's pure fold produced from native events."""

    def __init__(self, turns: list[list[Step]]) -> None:
        self.turns = turns

    async def new_session(self, cwd: str, mcp_servers: Sequence[Any], channel: SessionChannel) -> SessionStart:
        return SessionStart("contract-session")

    async def cancel(self, session_id: str) -> None:
        return None

    async def prompt(self, session_id: str, prompt: Sequence[Any], turn: TurnChannel) -> TurnEnd:
        for step in self.turns.pop(0) if self.turns else []:
            if isinstance(step, FailureObservation):
                raise TurnFailed(step)
            if isinstance(step, TurnEnd):
                return step
            await turn.emit(step)
        return TurnEnd()


def played_spec(name: str, turns: list[list[Step]]) -> ProviderSpec:
    @asynccontextmanager
    async def open_runtime(context: RuntimeContext) -> AsyncIterator[ProviderRuntime]:
        yield _PlayedRuntime(turns)

    return ProviderSpec(name=name, title=name.title(), open_runtime=open_runtime)


async def play(name: str, steps: list[Step], *, capable: bool, environ: dict[str, str] | None = None) -> Any:
    """Run one turn of steps through a real agent; returns (result or error, client)."""
    from acp_agent.wire.rpc import RpcError

    async with run_in_process(played_spec(name, [steps]), environ=environ) as client:
        await client.initialize(capable=capable)
        session_id = await client.new_session(tempfile.gettempdir())
        try:
            outcome: Any = await client.prompt(session_id, "go")
        except RpcError as exc:
            outcome = exc
        return outcome, client


class ProviderWireContract:
    """Both carriers and legacy behaviour for a provider's retry-then-fail native sequence.

    `retry_then_fail_natives` are native events of one turn (from real output) whose fold yields
    at least one retry warning and then a terminal failure; `fold` is the provider's pure fold.
    """

    provider_name: ClassVar[str] = "provider"
    retry_then_fail_natives: ClassVar[Sequence[Any]] = ()

    def fold(self, natives: Sequence[Any]) -> list[Step]:
        raise NotImplementedError

    @pytest.mark.anyio
    async def test_capable_client_gets_one_incident_with_rising_revisions(self) -> None:
        steps = self.fold(self.retry_then_fail_natives)
        result, client = await play(self.provider_name, steps, capable=True)
        records = client.failure_records()
        assert len(records) >= 2, records
        assert len({record["id"] for record in records}) == 1
        assert [record["revision"] for record in records] == list(range(1, len(records) + 1))
        assert [record["severity"] for record in records][-1] == "error"
        assert all(record["severity"] == "warning" for record in records[:-1])
        assert result["stopReason"] == "end_turn"

    @pytest.mark.anyio
    async def test_legacy_client_gets_baseline_error_and_no_extension(self) -> None:
        from acp_agent.wire.rpc import RpcError

        steps = self.fold(self.retry_then_fail_natives)
        result, client = await play(self.provider_name, steps, capable=False)
        assert isinstance(result, RpcError)
        assert set(result.data["failure"]) <= {"kind", "source", "retryable", "outcome", "recovery", "phase",
                                               "execution", "mutation"}
        assert "sessionFailure" not in json.dumps(client.frames)


class RedactionContract:
    """A failure whose vendor text carries secrets must reach no frame with them."""

    provider_name: ClassVar[str] = "provider"
    secret_env_var: ClassVar[str] = "PROVIDER_API_KEY"

    def failure_with_text(self, text: str) -> FailureObservation:
        raise NotImplementedError

    @pytest.mark.anyio
    @pytest.mark.parametrize("capable", [True, False])
    async def test_secrets_never_reach_the_wire(self, capable: bool) -> None:
        secret = "sk-contract-" + "x7" * 12
        text = (f"failed with {secret} Authorization: Bearer abc.def.ghi at https://user:hunter22@example.test/"
                f"v1?api_key={secret}&token=tok123456")
        observation = self.failure_with_text(text)
        _, client = await play(self.provider_name, [observation], capable=capable,
                               environ={self.secret_env_var: secret})
        wire = json.dumps(client.frames)
        for leaked in (secret, "abc.def.ghi", "hunter22", "tok123456"):
            assert leaked not in wire


async def gather(*calls: Callable[[], Any]) -> list[Any]:
    """Run coroutine factories concurrently and return their results in order."""
    results: list[Any] = [None] * len(calls)

    async def run(index: int, call: Callable[[], Any]) -> None:
        results[index] = await call()

    async with anyio.create_task_group() as task_group:
        for index, call in enumerate(calls):
            task_group.start_soon(run, index, call)
    return results


# --- The runtime contract: a provider's real runtime against its own backend or fake. ---------

Turn = Literal["echo", "hold"]
"""What the backend does with one prompt: `echo` answers with text containing the prompt's text;
`hold` starts answering and then waits (until the turn is cancelled or `release` is called)."""


@define
class KitBackend:
    """What a provider's `open_backend` yields: its spec, and the backend arranged for the turns.

    `environ` is added to the test process's environment (minus `ACP_AGENT_*`); an empty value
    unsets a variable. `hold_prompt` turns a prompt's text into one the backend holds (for fakes
    that are told by the prompt). `turn_held` returns once the backend holds the turn; None waits
    for the turn's first model content (a message or thought chunk, a tool call). `release` lets a
    held answer go on (after the cancel: a runtime that did not stop the backend's turn would then
    leak it into the next prompt).
    """

    spec: ProviderSpec | None = None
    """None: the installed provider named by the contract's `provider_name` (its entry point)."""
    environ: Mapping[str, str] = field(factory=dict)
    hold_prompt: Callable[[str], str] = lambda text: text
    turn_held: Callable[[], Awaitable[None]] | None = None
    release: Callable[[], None] = lambda: None


def kit_environ(extra: Mapping[str, str]) -> dict[str, str]:
    """The environment a backend gets in the kit: this process's, without the agent's own settings."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    environ.update(extra)
    return {key: value for key, value in environ.items() if value != ""}


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.extend(int(child) for child in handle.read().split())
        except FileNotFoundError:
            continue
    return found


def descendants(pid: int | None = None) -> set[int]:
    """Every process below `pid` (default: this one), through /proc (Linux)."""
    found: set[int] = set()
    for child in _children(os.getpid() if pid is None else pid):
        found.add(child)
        found |= descendants(child)
    return found


def running(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def answer_text(client: InProcessClient, session_id: str, since: int = 0) -> str:
    """The agent message text of `session_id`'s updates from index `since` of `client.updates` on."""
    texts = []
    for update in client.updates[since:]:
        body = update.get("update", {})
        if update.get("sessionId") == session_id and body.get("sessionUpdate") == "agent_message_chunk":
            texts.append(body.get("content", {}).get("text", ""))
    return "".join(texts)


_IMPORT_PROBE = """
import json, sys, tempfile, anyio
from acp_agent.backends.plugins import discover
from acp_agent.testing.client import run_in_process
name, modules = sys.argv[1], json.loads(sys.argv[2])
loaded = discover().get(name)
assert loaded is not None, f"no provider {name!r} installed"
imported = lambda: sorted(m for m in modules if m in sys.modules)
async def main():
    async with run_in_process(loaded.spec, environ=json.loads(sys.argv[3])) as client:
        await client.initialize(capable=True)
        before = imported()
        await client.new_session(tempfile.gettempdir())
        return before, imported()
before, after = anyio.run(main)
print(json.dumps({"at_start": before, "after_session": after}))
"""


HOOK_SAMPLES: tuple[Mapping[str, Any], ...] = (
    {}, {"type": "error", "message": "boom"}, {"error": {"message": "boom", "code": 500, "type": "overloaded"}},
    {"type": "result", "subtype": "error_during_execution", "is_error": True, "result": "boom"},
    {"method": "error", "params": {"error": {"message": "boom"}}}, {"type": "assistant", "error": "rate_limit"},
)
"""Shapes of native failures, none of one vendor's: asked for another provider, a provider's
hooks must answer each with None (`RuntimeContract.hook_samples` adds the provider's own)."""


def hooks_answering_for_others(plugin: str, samples: Sequence[Mapping[str, Any]] = HOOK_SAMPLES,
                               manager: Any = None) -> list[str]:
    """The failure hooks of `plugin` (an entry point's name) that answer for a provider that is not
    theirs: a provider's own hooks return None for every other provider, so that a second provider
    installed beside it keeps its own classification, titles and history."""
    from acp_agent.backends.plugins import FAILURE_HOOKS, make_plugin_manager

    pm = manager if manager is not None else make_plugin_manager()[0]
    other = "kit-another-provider"
    found = []
    for hook in FAILURE_HOOKS:
        for impl in getattr(pm.hook, hook).get_hookimpls():
            if impl.plugin_name != plugin:
                continue
            for native in samples:
                if hook == "acp_agent_classify_failure":
                    answer = impl.function(provider=other, native=native)
                elif hook == "acp_agent_failure_title":
                    answer = impl.function(provider=other, native=native, kind=FailureKind.PROVIDER_ERROR)
                else:
                    answer = impl.function(provider=other, entry=native, user_message_id=None)
                if answer is not None:
                    found.append(f"{hook}(provider={other!r}, {native!r}) answered {answer!r}")
    return found


class RuntimeContract:
    """A provider's own runtime against its own backend (or fake), through a real agent in-process.

    Subclass it in the plugin's tests, set `provider_name`, `vendor_modules` (modules that only a
    session may import: the vendor SDK, the runtime module), and implement `open_backend`. Every
    test runs the real runtime: new session, prompts answered with their own text, a cancel that
    returns `cancelled` and leaves the next prompt its own answer, `session/close`, and no child
    process left once the agent has stopped. Linux only (it reads /proc).
    """

    provider_name: ClassVar[str] = "provider"
    vendor_modules: ClassVar[Sequence[str]] = ()
    starts_child: ClassVar[bool] = True
    """Whether the runtime starts a backend process (then the kit sees it run, and end)."""
    timeout_s: ClassVar[float] = 60
    hook_samples: ClassVar[Sequence[Mapping[str, Any]]] = ()
    """Native failures of this provider's backend (from its classification tables) that its
    hooks must not answer for another provider, beside the kit's `HOOK_SAMPLES`."""

    def open_backend(self, tmp_path: Path, turns: Sequence[Turn]) -> AbstractAsyncContextManager[KitBackend]:
        """Start the backend or fake so that its prompts behave as `turns` say, in order."""
        raise NotImplementedError

    @asynccontextmanager
    async def _agent(self, tmp_path: Path, turns: Sequence[Turn], *,
                     capable: bool) -> AsyncIterator[tuple[InProcessClient, KitBackend, set[int]]]:
        if not sys.platform.startswith("linux"):
            pytest.skip("the runtime contract reads /proc (Linux)")
        before = descendants()
        seen: set[int] = set()
        async with self.open_backend(tmp_path, turns) as backend:
            backend.spec = backend.spec or self._installed_spec()
            async with run_in_process(backend.spec, environ=kit_environ(backend.environ)) as client:
                await client.initialize(capable=capable)
                yield client, backend, seen
                seen.update(descendants() - before)
            left = sorted(pid for pid in seen if running(pid))
        assert not left, f"processes left after the agent stopped: {left}"
        if self.starts_child:
            assert seen, "no backend process was seen while the session ran"

    def _installed_spec(self) -> ProviderSpec:
        from acp_agent.backends.plugins import discover

        loaded = discover().get(self.provider_name)
        assert loaded is not None, f"no provider {self.provider_name!r} is installed (an `acp_agent` entry point)"
        return loaded.spec

    def _cwd(self, tmp_path: Path) -> str:
        path = tmp_path / "work"
        path.mkdir(exist_ok=True)
        return str(path)

    def test_failure_hooks_answer_only_for_this_provider(self) -> None:
        from acp_agent.backends.plugins import discover

        loaded = discover().get(self.provider_name)
        assert loaded is not None, f"no provider {self.provider_name!r} is installed (an `acp_agent` entry point)"
        answered = hooks_answering_for_others(loaded.plugin, (*HOOK_SAMPLES, *self.hook_samples))
        assert not answered, "a provider's hooks must return None for other providers:\n" + "\n".join(answered)

    @pytest.mark.anyio
    async def test_prompts_get_their_own_answers_and_close(self, tmp_path: Path) -> None:
        with anyio.fail_after(self.timeout_s):
            async with self._agent(tmp_path, ["echo", "echo"], capable=True) as (client, backend, seen):
                session_id = await client.new_session(self._cwd(tmp_path))
                first = await client.prompt(session_id, "kit-alpha")
                seen.update(descendants())
                mark = len(client.updates)
                second = await client.prompt(session_id, "kit-bravo")
                assert first["stopReason"] == "end_turn"
                assert second["stopReason"] == "end_turn"
                assert "kit-alpha" in answer_text(client, session_id)
                assert "kit-bravo" in answer_text(client, session_id, mark)
                assert "kit-alpha" not in answer_text(client, session_id, mark)
                assert backend.spec is not None
                if backend.spec.capabilities.close_session:
                    assert await client.request("session/close", {"sessionId": session_id}) == {}
                    with pytest.raises(RpcError):
                        await client.prompt(session_id, "kit-after-close")

    @pytest.mark.anyio
    @pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
    async def test_cancel_returns_cancelled_and_the_next_prompt_gets_its_own_answer(
            self, tmp_path: Path, capable: bool) -> None:
        with anyio.fail_after(self.timeout_s):
            async with self._agent(tmp_path, ["hold", "echo"], capable=capable) as (client, backend, seen):
                session_id = await client.new_session(self._cwd(tmp_path))
                outcome: dict[str, Any] = {}
                updated = anyio.Event()

                def on_update(params: dict[str, Any]) -> None:
                    kind = params.get("update", {}).get("sessionUpdate")
                    if params.get("sessionId") == session_id and kind in MODEL_ANSWER_UPDATES:
                        updated.set()

                client.update_hook = on_update

                async def held_prompt() -> None:
                    outcome.update(await client.prompt(session_id, backend.hold_prompt("kit-held")))

                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(held_prompt)
                    await (backend.turn_held or updated.wait)()
                    seen.update(descendants())
                    cancelled_at = anyio.current_time()
                    await client.notify("session/cancel", {"sessionId": session_id})
                assert outcome.get("stopReason") == "cancelled", outcome
                # `cancel` stopped the backend's turn: the prompt was not cut off after the grace.
                assert anyio.current_time() - cancelled_at < CANCEL_GRACE_S, "prompt returned only at the cancel grace"
                backend.release()
                mark = len(client.updates)
                after = await client.prompt(session_id, "kit-after")
                assert after["stopReason"] == "end_turn"
                text = answer_text(client, session_id, mark)
                assert "kit-after" in text and "kit-held" not in text, text
                if not capable:
                    assert "sessionFailure" not in json.dumps(client.frames)

    def test_a_declared_prestart_loads_without_its_package(self) -> None:
        """`ProviderSpec.prestart` names a function in a module the command line can load alone,
        in a fresh interpreter, before the agent's imports: its package's `__init__` does not run."""
        reference = self._installed_spec().prestart
        if reference is None:
            pytest.skip("the provider starts nothing early")
        package = reference.split(".")[0]
        probe = ("import json, sys\nfrom acp_agent.startup.declared import load\n"
                 f"hook = load({reference!r}, {self.provider_name!r})\n"
                 f"print(json.dumps([callable(hook), {package!r} in sys.modules]))")
        import subprocess

        finished = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60, check=False)
        assert finished.returncode == 0, finished.stderr.decode(errors="replace")[-2000:]
        loaded, package_imported = json.loads(finished.stdout.decode().splitlines()[-1])
        assert loaded, f"{reference} is not a function of an installed module"
        assert not package_imported, f"loading {reference} imported {package}"

    @pytest.mark.anyio
    async def test_vendor_modules_are_imported_by_the_first_session_not_before(self, tmp_path: Path) -> None:
        """In a fresh interpreter: loading the plugins and `initialize` import none of `vendor_modules`;
        the first session imports at least one (so the names are right)."""
        if not self.vendor_modules:
            pytest.skip("the provider names no vendor modules")
        with anyio.fail_after(self.timeout_s):
            async with self.open_backend(tmp_path, ["echo"]) as backend:
                env = kit_environ(backend.environ)
                result = await anyio.run_process(
                    [sys.executable, "-c", _IMPORT_PROBE, self.provider_name,
                     json.dumps(list(self.vendor_modules)), json.dumps(env)], env=env, check=False)
        assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
        report = json.loads(result.stdout.decode().splitlines()[-1])
        assert report["at_start"] == [], f"imported before the first session: {report['at_start']}"
        assert report["after_session"], f"no session imported any of {list(self.vendor_modules)}: wrong names?"

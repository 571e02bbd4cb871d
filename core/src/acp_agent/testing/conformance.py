"""Contract base classes a provider's tests subclass (pytest collects `Test*` subclasses).

Each contract is driven by tables the provider fills in from real backend output, so every
provider gets the same checks: classification, titles, history recognition, both carriers,
legacy behaviour and redaction.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, ClassVar

import anyio
import pytest

from acp_agent.events import Event, TurnEnd
from acp_agent.failures import FailureKind, FailureObservation
from acp_agent.provider import (
    ProviderRuntime,
    ProviderSpec,
    RuntimeContext,
    SessionChannel,
    SessionStart,
    TurnChannel,
    TurnFailed,
)
from acp_agent.testing.client import run_in_process

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
    from acp_agent.rpc import RpcError

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
        from acp_agent.rpc import RpcError

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

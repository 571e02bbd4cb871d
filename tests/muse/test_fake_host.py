"""The fake host speaks real MSP: Meta's official `muse-code-sdk` client drives it.

The SDK validates the handshake (and refuses any schema fingerprint but the one it pins), folds
every view notification, answers approvals with `approval/decide`, and settles turns only on
server-authored `turn/completed` frames; if the fake strayed from MSP these tests would fail.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import muse_code_msp
import pytest
from muse_code import (
    EXPECTED_SCHEMA_FINGERPRINT,
    ApprovalDecisionInput,
    MuseClient,
    MuseClientSpawnOptions,
    ResumeSessionOptions,
    SendUserTurnOptions,
)
from muse_code.connection.connection import MspError
from muse_code.errors import MuseHostMismatchError
from muse_code.facade.client import StartSessionOptions

from tests.muse.e2e_support import host_events, muse_env, received

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK is asyncio-first


def spawn_options(tmp_path: Path, **env_options: Any) -> MuseClientSpawnOptions:
    env = {**os.environ, **muse_env(tmp_path, **env_options)}
    env = {key: value for key, value in env.items() if value != ""}
    return MuseClientSpawnOptions(muse_bin=env["MUSE_CODE_EXECUTABLE"], args=["serve"], env=env,
                                  client_info={"name": "sdk-conformance", "version": "1"})


async def test_the_official_client_runs_a_streamed_turn(tmp_path: Path) -> None:
    assert EXPECTED_SCHEMA_FINGERPRINT == muse_code_msp.SCHEMA_FINGERPRINT
    client = await MuseClient.spawn(spawn_options(tmp_path))
    try:
        assert client.initialize_result["schema"]["fingerprint"] == EXPECTED_SCHEMA_FINGERPRINT
        session = await client.start_session(StartSessionOptions(workspace_root=str(tmp_path),
                                                                 approval_mode="promptUnmatched"))
        turn = await session.send_user_turn(SendUserTurnOptions(input=[{"type": "text", "text": "turn:stream hi"}]))
        outcome = await asyncio.wait_for(turn.completed, 20)
        assert outcome.kind == "completed"
        assert outcome.params["terminal"] == "completed"  # type: ignore[union-attr]
        folded = {item["itemId"]: item for item in session.fold.items.list()}
        answer = folded[f"{turn.turn_id}-answer"]
        assert answer["text"] == "The notes say to ship it."
        # The delta sent before its item opened was held and folded too.
        assert session.fold.items.accumulated(answer["itemId"]) == "The notes say to ship it."
        assert folded[f"{turn.turn_id}-tool"]["status"] == "completed"
        todo = session.fold.session_state.get("session/todoListChanged")
        assert todo is not None
        assert [entry["text"] for entry in todo["items"]] == ["Read the file", "Summarise it", "Report back"]
        assert session.fold.turn(turn.turn_id).terminal == "completed"  # type: ignore[union-attr]

        resumed_client = await MuseClient.spawn(spawn_options(tmp_path))
        try:
            resumed = await resumed_client.resume_session(ResumeSessionOptions(session_id=session.session_id))
            assert resumed.session_id == session.session_id
        finally:
            await resumed_client.close()
    finally:
        await client.close()
    commands = [frame for frame in received(tmp_path) if frame.get("method") in ("session/start", "turn/start")]
    assert all(frame["params"]["commandId"] for frame in commands)


async def test_the_official_client_answers_an_approval(tmp_path: Path) -> None:
    client = await MuseClient.spawn(spawn_options(tmp_path, turn="approval"))
    asked: list[dict[str, Any]] = []
    try:
        session = await client.start_session(StartSessionOptions(workspace_root=str(tmp_path)))

        def decide(request: Any) -> ApprovalDecisionInput:
            asked.append(request)
            return ApprovalDecisionInput(choice_id="allow-once")

        session.on_approval(decide)
        turn = await session.send_user_turn(SendUserTurnOptions(input=[{"type": "text", "text": "clean up"}]))
        outcome = await asyncio.wait_for(turn.completed, 20)
    finally:
        await client.close()
    assert outcome.kind == "completed"
    assert len(asked) == 1  # the notification and the server request are one stage, decided once
    assert [choice["choiceId"] for choice in asked[0]["availableChoices"]] == [
        "allow-once", "allow-session", "deny", "abort"]
    [decided] = [event for event in host_events(tmp_path) if event["event"] == "decided"]
    assert decided["choiceId"] == "allow-once"


async def test_the_official_client_refuses_another_fingerprint_and_errors_carry_kinds(tmp_path: Path) -> None:
    with pytest.raises(MuseHostMismatchError) as mismatch:
        await MuseClient.spawn(spawn_options(tmp_path, scenario="fingerprint=sha256:0000"))
    assert mismatch.value.served == "sha256:0000"

    client = await MuseClient.spawn(spawn_options(tmp_path))
    try:
        with pytest.raises(MspError) as missing:
            await client.resume_session(ResumeSessionOptions(session_id="01900000-0000-7000-8000-000000000000"))
    finally:
        await client.close()
    assert (missing.value.code, missing.value.kind) == (-32020, "sessionNotFound")


async def test_the_official_client_folds_shell_output_compaction_and_the_first_naming(tmp_path: Path) -> None:
    client = await MuseClient.spawn(spawn_options(tmp_path, scenario="names"))
    try:
        session = await client.start_session(StartSessionOptions(workspace_root=str(tmp_path),
                                                                 approval_mode="promptUnmatched"))
        for prompt in ("turn:shell run the tests", "turn:compact go on"):
            turn = await session.send_user_turn(SendUserTurnOptions(input=[{"type": "text", "text": prompt}]))
            outcome = await asyncio.wait_for(turn.completed, 20)
            assert outcome.kind == "completed"
        folded = {item["itemId"]: item for item in session.fold.items.list()}
        shell = next(item for item in folded.values() if item.get("tool") == "shell")
        assert shell["visibleOutput"] == "compiling\ntesting\n3 passed\n" and shell["exitCode"] == 0
        compaction = next(item for item in folded.values() if item["kind"] == "compaction")
        assert (compaction["outcome"], compaction["trigger"]) == ("compacted", "auto")
        named = session.fold.session_state.get("session/nameChanged")
        assert named is not None and named["name"] == "turn:shell run the tests"
    finally:
        await client.close()

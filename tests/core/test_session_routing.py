"""Through the agent: what a runtime emits for a session, on its channel or by id through the core's
router, reaches the client in the order it was emitted, before registration and between turns."""

from __future__ import annotations

import tempfile
from typing import Any

import anyio
import pytest

from acp_agent.testing import run_in_process
from acp_agent_scripted import make_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
CWD = tempfile.gettempdir()
LOST = {"kind": "transport_lost", "native_kind": "hostExited", "title": "The backend exited between turns.",
        "execution": "notSubmitted"}


def index_of_result(client: Any, key: str) -> int:
    return next(i for i, f in enumerate(client.frames) if isinstance(f.get("result"), dict) and key in f["result"])


def update_indexes(client: Any, session_id: str) -> list[int]:
    return [i for i, f in enumerate(client.frames)
            if f.get("method") == "session/update" and f["params"].get("sessionId") == session_id]


async def wait_for_records(client: Any, session_id: str, count: int) -> list[dict[str, Any]]:
    while len(client.failure_records(session_id)) < count:
        await anyio.wait_all_tasks_blocked()
    return list(client.failure_records(session_id))


async def test_a_burst_while_the_session_is_created_arrives_after_it_exists_in_emit_order() -> None:
    titles = [f"creation {index}" for index in range(12)]
    async with run_in_process(make_spec({"creation_burst": titles})) as client:
        await client.initialize(capable=True)
        session_id = await client.new_session(CWD)
        records = await wait_for_records(client, session_id, len(titles))
        await client.prompt(session_id, "hi")
    assert [record["title"] for record in records] == titles
    assert min(update_indexes(client, session_id)) > index_of_result(client, "sessionId")


async def test_events_between_turns_arrive_in_order_after_the_prompt_answer() -> None:
    burst = [{"session_failure": LOST}] + [{"notice": f"between {index}"} for index in range(10)]
    script = {"turns": [[{"text": "ok"}, {"between_turns": burst}]]}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize(capable=True)
        session_id = await client.new_session(CWD)
        result = await client.prompt(session_id, "hi")
        records = await wait_for_records(client, session_id, len(burst))
        second = await client.prompt(session_id, "again")
    assert result["stopReason"] == "end_turn" and second["stopReason"] == "end_turn"
    assert [record["title"] for record in records] == [LOST["title"]] + [f"between {i}" for i in range(10)]
    assert records[0]["id"].startswith(f"{session_id}:session-error:")


async def test_a_legacy_client_gets_between_turn_events_without_the_extension() -> None:
    script = {"turns": [[{"text": "ok"}, {"between_turns": [{"session_failure": LOST}]}]]}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize(capable=False)
        session_id = await client.new_session(CWD)
        await client.prompt(session_id, "hi")
        with anyio.fail_after(5):
            await client.prompt(session_id, "again")  # the agent still serves the session
    assert client.failure_records() == []
    texts = [u["content"]["text"] for u in client.session_updates(session_id)
             if u.get("sessionUpdate") == "agent_message_chunk"]
    assert texts == ["ok", "again"]


async def test_what_was_kept_comes_after_a_loaded_history_and_before_the_answer() -> None:
    """A process-wide notice kept while the backend started, and an event the runtime emits by id
    before replaying, follow the replayed history (the answer to session/load) and precede the
    answer."""
    script = {"history": {"stored-1": [{"user": "earlier question"}, {"agent": "earlier answer"}]},
              "load_emits": ["while loading"], "startup_notices": ["found at startup"]}
    async with run_in_process(make_spec(script)) as client:
        await client.initialize(capable=True)
        await client.request("session/load", {"sessionId": "stored-1", "cwd": CWD, "mcpServers": []})
    answer = max(i for i, f in enumerate(client.frames) if "result" in f)
    before = [f["params"]["update"] for f in client.frames[:answer] if f.get("method") == "session/update"]
    assert [u["sessionUpdate"] for u in before] == ["user_message_chunk", "agent_message_chunk",
                                                    "session_info_update", "session_info_update"]
    assert [r["title"] for r in client.failure_records("stored-1")] == ["found at startup", "while loading"]

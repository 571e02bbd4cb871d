"""History recognition from real stored transcripts (fixtures/transcript_*.jsonl)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from acp_agent.backends.events import HistoryFailure
from acp_agent.testing import HistoryContract
from acp_agent.wire.acp import AgentMessageChunk, UserMessageChunk
from acp_agent_claude import history
from tests.claude.replay import FIXTURES, replay_history


def transcript(name: str) -> list[dict[str, Any]]:
    """The visible user/assistant entries of a stored transcript, as get_session_messages gives them."""
    lines = [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines()[1:] if line.strip()]
    return [{"type": entry["type"], "uuid": entry["uuid"], "message": entry["message"]} for entry in lines
            if entry.get("type") in ("user", "assistant") and isinstance(entry.get("message"), dict)
            and not entry.get("isMeta")]


USAGE = transcript("transcript_usage_limit")
USER_UUID = "00000000-0000-4000-8000-000000000001"
SYNTHETIC = {"model": "<synthetic>", "role": "assistant"}


def assistant(uuid: str, text: str, model: str = "claude-opus-5-5") -> dict[str, Any]:
    return {"type": "assistant", "uuid": uuid, "message": {"model": model, "role": "assistant",
                                                          "content": [{"type": "text", "text": text}]}}


class TestHistory(HistoryContract):
    history_cases: ClassVar[list[Any]] = [
        (USAGE, [(USAGE[-1]["uuid"], USER_UUID)]),
        (USAGE[1:], [(USAGE[-1]["uuid"], None)]),  # no preceding user message
        (transcript("transcript_session_multi_turn"), []),
    ]

    def recognise(self, transcript: Any) -> Any:
        return history.recognise(transcript)


def failures(entries: list[dict[str, Any]]) -> list[HistoryFailure]:
    return [event for event in replay_history(entries, "sess") if isinstance(event, HistoryFailure)]


def test_usage_limit_replays_in_place_with_the_exact_text_and_stays_active() -> None:
    events = replay_history(USAGE, "sess")
    assert isinstance(events[0], UserMessageChunk)
    [failure] = [event for event in events if isinstance(event, HistoryFailure)]
    assert failure.observation.title == "You've hit your limit · resets 9:26pm (UTC)"
    assert failure.active is True
    assert [update.content.text for update in failure.legacy_updates] == [failure.observation.title]  # type: ignore[union-attr]


def test_only_the_latest_stays_active_until_a_real_answer() -> None:
    second_user = {"type": "user", "uuid": "u-2", "message": {"role": "user", "content": "again"}}
    entries = [*USAGE, second_user, assistant("a-2", "You've hit your limit · resets 10pm", "<synthetic>")]
    assert [f.active for f in failures(entries)] == [False, True]
    assert failures(entries)[1].user_message_id == "u-2"
    recovered = [*entries, {"type": "user", "uuid": "u-3", "message": {"role": "user", "content": "hi"}},
                 assistant("a-3", "Hello!")]
    assert [f.active for f in failures(recovered)] == [False, False]


def test_a_local_commands_synthetic_reply_is_not_a_recovery() -> None:
    entries = [*USAGE, assistant("a-9", "No response requested.", "<synthetic>")]
    assert [f.active for f in failures(entries)] == [True]
    assert isinstance(replay_history(entries, "sess")[-1], AgentMessageChunk)


def test_model_prose_that_looks_like_a_limit_is_just_text() -> None:
    entries = [USAGE[0], assistant("a-1", "You've hit your stride today!")]
    assert failures(entries) == []


def test_login_messages_are_not_replayed_as_records() -> None:
    entries = [USAGE[0], assistant("a-1", "Not logged in · Please run /login", "<synthetic>")]
    [failure] = failures(entries)
    assert failure.typed is False


def test_task_tools_replay_as_the_plan_they_built() -> None:
    """A stored session's TaskCreate/TaskUpdate calls replay as plans (from the results' text,
    which is all the transcript keeps), not as tool calls."""
    from acp_agent.wire.acp import Plan, PlanEntry, ToolCall

    events = replay_history(transcript("transcript_task_plan"))
    assert [e for e in events if isinstance(e, Plan)] == [
        Plan([PlanEntry("Write the parser")]),
        Plan([PlanEntry("Write the parser"), PlanEntry("Test the parser")]),
        Plan([PlanEntry("Writing the parser", status="in_progress"), PlanEntry("Test the parser")]),
    ]
    assert not [e for e in events if isinstance(e, ToolCall)]


def test_a_stored_compaction_replays_as_one_completed_compaction_not_as_user_text() -> None:
    import io

    from acp_agent.provider import Compaction

    continuation = ("This session is being continued from a previous conversation that ran out of context.\n\n"
                    "Summary:\nWe wrote the parser.\n\nIf you need specific details from before compaction, read it.")
    lines = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "write a parser"}},
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1",
         "compactMetadata": {"trigger": "auto", "preTokens": 900, "postTokens": 90, "durationMs": 7}},
        {"type": "user", "uuid": "s1", "isCompactSummary": True, "message": {"role": "user", "content": continuation}},
    ]
    handle = io.BytesIO(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    batches: list[list[dict[str, object]]] = []
    history.TranscriptReader().read(handle, batches.append)
    events = history.replay([entry for batch in batches for entry in batch])
    assert [type(e) for e in events] == [UserMessageChunk, Compaction]
    assert events[1] == Compaction("compact-s1", "completed", trigger="auto", tokens_before=900, tokens_after=90,
                                   summary="We wrote the parser.", duration_ms=7)

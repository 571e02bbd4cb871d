"""Pure recognition of a stored Claude transcript for `session/load` replay.

Input: the transcript's visible messages in order (`type`, `uuid`, raw API `message`), as the
SDK's `get_session_messages` returns them. Output: what to replay: user and agent text, tool
calls, and the failures the CLI itself wrote (`<synthetic>` model) as `HistoryFailure`s with the
id the live failure had. Each entry is first offered to `recogniser` (the runtime passes the
core's history hook; this provider's answer is `recognise_entry`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, BinaryIO

import attrs

from acp_agent.provider import (
    Compaction,
    Event,
    FailureKind,
    HistoryFailure,
    SubagentLaunch,
    agent_text,
    is_count,
    thought_text,
    user_text,
)
from acp_agent_claude import classify, content
from acp_agent_claude.subagents import LAUNCH_TOOLS
from acp_agent_claude.tasks import TASK_TOOLS, TaskPlan


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    body = message.get("content")
    if isinstance(body, str):
        return [{"type": "text", "text": body}]
    return [block for block in body or () if isinstance(block, Mapping)]


def _text(blocks: Sequence[Mapping[str, Any]]) -> str:
    return "".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")


def _message_id(entry: Mapping[str, Any]) -> str | None:
    """The `messageId` of an entry's chunks, as they had it live: an assistant entry's API message
    id (the entries of one message share it), else the entry's uuid (claude-agent-acp's rule)."""
    message = entry.get("message")
    api_id = message.get("id") if entry.get("type") == "assistant" and isinstance(message, Mapping) else None
    if isinstance(api_id, str) and api_id:
        return api_id
    uuid = entry.get("uuid")
    return uuid if isinstance(uuid, str) and uuid else None


Recogniser = Callable[[Mapping[str, Any], str | None], HistoryFailure | None]


def recognise_entry(entry: Mapping[str, Any], user_message_id: str | None) -> HistoryFailure | None:
    """One transcript entry → the failure it stored, or None: a usage-limit message is a typed
    record, a "run /login" message is replayed as text only (`typed=False`)."""
    message = entry.get("message")
    if entry.get("type") != "assistant" or not isinstance(message, Mapping):
        return None
    if message.get("model") != classify.SYNTHETIC_MODEL:
        return None
    text, uuid = _text(_blocks(message)), str(entry.get("uuid") or "")
    if classify.is_usage_limit_text(text):
        return HistoryFailure(classify.failure(FailureKind.QUOTA_EXHAUSTED, "usage_limit", text),
                              message_id=uuid, user_message_id=user_message_id, legacy_updates=(agent_text(text),))
    if classify.is_login_text(text):
        return HistoryFailure(classify.failure(FailureKind.AUTH_REQUIRED, "authentication_failed", text),
                              message_id=uuid, user_message_id=user_message_id,
                              legacy_updates=(agent_text(text),), typed=False)
    return None


def recognise(entries: Sequence[Mapping[str, Any]], session_id: str = "") -> list[tuple[str, str | None]]:
    """(message id, preceding user message id) of every replayable failure, in order."""
    return [(event.message_id, event.user_message_id) for event in replay(entries, session_id)
            if isinstance(event, HistoryFailure)]


def replay(entries: Iterable[Mapping[str, Any]], session_id: str = "", cwd: str | None = None,
           recogniser: Recogniser = recognise_entry) -> list[Event]:
    """The transcript as replay events; only the latest unrecovered typed failure stays active."""
    replayer = Replayer(cwd, recogniser)
    events = [event for entry in entries for event in replayer.feed(entry)]
    return events + replayer.finish()


class Replayer:
    """`replay`, one entry at a time, so `session/load` sends updates as the transcript is read.
    After a typed failure the events are held back until a real model answer (it recovered) or
    the end (it stays active)."""

    def __init__(self, cwd: str | None = None, recogniser: Recogniser = recognise_entry) -> None:
        self.cwd, self.recogniser = cwd, recogniser
        self.user_message_id: str | None = None
        self.tools: dict[str, str] = {}
        self.inputs: dict[str, Mapping[str, Any]] = {}  # the task tools' and ExitPlanMode's (their plans)
        self.tasks = TaskPlan()  # the task tools replay as the plan they built, as they showed live
        self.held: list[Event] = []  # from the latest typed failure on, until it is settled
        self.boundary: Mapping[str, Any] = {}  # the last compaction boundary's facts

    def feed(self, entry: Mapping[str, Any]) -> list[Event]:
        """The replay events of one transcript entry (none while a failure is held back)."""
        holding = self.held
        events = self._events(entry)
        if self.held and self.held is holding:  # the same failure is still unsettled
            self.held.extend(events)
            return []
        return events

    def finish(self) -> list[Event]:
        """The end of the transcript: a held failure is the latest, and stays active."""
        held, self.held = self.held, []
        if held:
            failure = held[0]
            assert isinstance(failure, HistoryFailure)
            held[0] = attrs.evolve(failure, active=True)
        return held

    def _settle(self) -> list[Event]:
        """A real model answer: the held failure recovered and is replayed inactive."""
        held, self.held = self.held, []
        return held

    def _compaction(self, uuid: str, blocks: Sequence[Mapping[str, Any]]) -> Compaction:
        """The summary message a compaction stored (`isCompactSummary`): the compaction, completed,
        with its summary and the boundary's facts; never the user's message (it is the CLI's
        continuation prompt to the model). Keyed by the summary's uuid, as claude-agent-acp keys it."""
        facts, self.boundary = self.boundary, {}

        def count(key: str) -> int | None:
            value = facts.get(key)
            return value if is_count(value) else None

        trigger = facts.get("trigger")
        return Compaction(f"compact-{uuid}", "completed", trigger=trigger if isinstance(trigger, str) else None,
                          tokens_before=count("preTokens"), tokens_after=count("postTokens"),
                          summary=content.compaction_summary(_text(blocks)), duration_ms=count("durationMs"))

    def _events(self, entry: Mapping[str, Any]) -> list[Event]:
        events: list[Event] = []
        kind, uuid = entry.get("type"), str(entry.get("uuid") or "")
        message = entry.get("message") or {}
        blocks = _blocks(message)
        if kind == "compact_boundary":
            self.boundary = entry.get("compactMetadata") or {}
            return events
        if kind == "user" and entry.get("isCompactSummary"):
            return [self._compaction(uuid, blocks)]
        if kind == "user":
            text_blocks = [b for b in blocks if b.get("type") == "text" and b.get("text")]
            for block in blocks:
                if block.get("type") == "tool_result":
                    tool_id = str(block.get("tool_use_id", ""))
                    if self.tools.get(tool_id) in TASK_TOOLS:
                        plan = self.tasks.apply(self.tools[tool_id], self.inputs.get(tool_id, {}),
                                                block.get("content"), None, bool(block.get("is_error")))
                        events.extend([plan] if plan is not None else [])
                        continue
                    result = content.tool_result(tool_id, block.get("content"), bool(block.get("is_error")),
                                                 self.tools.get(tool_id))
                    if self.tools.get(tool_id) == content.EXIT_PLAN_TOOL:  # the review, as it showed live
                        events.extend(content.plan_reviewed(result, self.inputs.get(tool_id, {}),
                                                            entry.get("toolUseResult"),
                                                            bool(block.get("is_error")), main=True))
                        continue
                    events.append(SubagentLaunch(tool_id, result) if self.tools.get(tool_id) in LAUNCH_TOOLS
                                  else result)
            if text_blocks:
                self.user_message_id = uuid or self.user_message_id
                events.extend(user_text(str(b["text"]), uuid or None) for b in text_blocks)
            return events
        if kind != "assistant":
            return events
        recognised = self.recogniser(entry, self.user_message_id)
        if recognised is not None:
            failure = attrs.evolve(recognised, active=False)
            if recognised.typed:  # the latest so far: held until it is settled
                settled, self.held = self._settle(), [failure]
                return settled
            return [failure]
        text = _text(blocks)
        message_id = _message_id(entry)
        if message.get("model") == classify.SYNTHETIC_MODEL:
            return [agent_text(text, message_id)] if text else []
        events.extend(self._settle())  # a real model answer: the quota recovered
        for block in blocks:
            block_type = block.get("type")
            if block_type == "text" and block.get("text"):
                events.append(agent_text(str(block["text"]), message_id))
            elif block_type == "thinking" and block.get("thinking"):
                events.append(thought_text(str(block["thinking"]), message_id))
            elif block_type == "tool_use":
                tool_id, name = str(block.get("id", "")), str(block.get("name", ""))
                self.tools[tool_id] = name
                raw_input = block.get("input")
                tool_input: Mapping[str, Any] = raw_input if isinstance(raw_input, Mapping) else {}
                if name in TASK_TOOLS:
                    self.inputs[tool_id] = tool_input
                elif name == content.EXIT_PLAN_TOOL:
                    self.inputs[tool_id] = tool_input
                    events.append(content.plan_review(content.tool_call(tool_id, name, tool_input, self.cwd),
                                                      tool_input))
                elif name in LAUNCH_TOOLS:  # its subagent's own history replays after its result
                    self.inputs[tool_id] = tool_input
                    events.append(SubagentLaunch(tool_id, content.tool_call(tool_id, name, tool_input, self.cwd)))
                else:
                    events.append(content.tool_call(tool_id, name, tool_input, self.cwd))
        return events


class TranscriptReader:
    """One pass over a stored transcript (JSONL): its visible entries (the SDK's: user and
    assistant records, not meta, sidechain or team ones) in batches as they are read, and the
    stored permission mode (the last user record's). It keeps nothing it has handed on, so
    memory stays flat, and every branch the file holds is replayed (a rewound one too)."""

    def __init__(self, chunk: int = 1 << 18, *, entries: bool = True, sidechain: bool = False) -> None:
        self.chunk, self.entries = chunk, entries  # entries=False: only the mode (a resume)
        self.sidechain = sidechain  # a subagent's own transcript: all its records are the sidechain
        self.mode: str | None = None

    def read(self, handle: BinaryIO, deliver: Callable[[list[dict[str, Any]]], None]) -> None:
        """Read `handle` to its end, handing the entries of each chunk read to `deliver`, none too
        (a chunk is what the source has, up to `chunk` bytes: each is progress, so a slow source
        shows each step it makes); a corrupt line is skipped."""
        rest, read = b"", getattr(handle, "read1", handle.read)  # read1: what is there, not a full chunk
        while chunk := read(self.chunk):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            if not self.entries:
                lines = [line for line in lines if b'"permissionMode"' in line]
            deliver([entry for line in lines if (entry := self._entry(line)) is not None])
        last = self._entry(rest) if rest.strip() else None
        if last is not None:
            deliver([last])

    def _entry(self, line: bytes) -> dict[str, Any] | None:
        try:
            record = json.loads(line)
        except ValueError:
            return None
        if isinstance(record, dict) and record.get("subtype") == "compact_boundary" and record.get("type") == "system":
            if (record.get("isSidechain") and not self.sidechain) or not isinstance(record.get("compactMetadata"), dict):
                return None
            return {"type": "compact_boundary", "uuid": str(record.get("uuid") or ""),
                    "compactMetadata": record["compactMetadata"]}
        if not isinstance(record, dict) or record.get("type") not in ("user", "assistant"):
            return None
        if record["type"] == "user" and isinstance(record.get("permissionMode"), str):
            self.mode = record["permissionMode"]
        if not isinstance(record.get("uuid"), str) or not isinstance(record.get("message"), Mapping):
            return None
        if record.get("isMeta") or (record.get("isSidechain") and not self.sidechain) or record.get("teamName"):
            return None
        entry = {"type": record["type"], "uuid": record["uuid"], "sessionId": record.get("sessionId", ""),
                 "message": record["message"]}
        if record["type"] == "user" and record.get("isCompactSummary") is True:
            entry["isCompactSummary"] = True
        return entry


def fork_point(handle: BinaryIO, message_id: str) -> str | None:
    """The transcript entry a fork at `message_id` keeps up to (claude-agent-acp's rule): for an
    API message id (the `messageId` of agent and thought chunks) the last entry of that message
    on the main conversation, for an entry's own uuid (a user message's) that entry. None when no
    entry has it."""
    found: str | None = None
    for line in handle:
        if message_id.encode() not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("isSidechain") or not isinstance(record.get("uuid"), str):
            continue
        message = record.get("message")
        if record.get("type") == "assistant" and isinstance(message, Mapping) and message.get("id") == message_id:
            found = record["uuid"]  # the message's last entry wins
        elif record["uuid"] == message_id and record.get("type") in ("user", "assistant"):
            return message_id
    return found

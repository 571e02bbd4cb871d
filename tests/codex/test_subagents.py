"""`acp_agent_codex.subagents`: codex's child threads folded into the core's subagent events, over
notifications shaped as codex app-server 0.163 sends them (seen with the fake Responses API)."""

from __future__ import annotations

from typing import Any

from acp_agent.provider import (
    AgentMessageChunk,
    OfSubagent,
    SubagentFinished,
    SubagentStarted,
    TerminalStarted,
    agent_text,
)
from acp_agent_codex.subagents import Children

ROOT, CHILD, GRANDCHILD = "root-thread-0001", "child-thread-aaaa1111", "grand-thread-bbbb2222"


def _collab(sender: str, tool: str, receivers: list[str], states: dict[str, str], method: str = "item/completed",
            prompt: str | None = "Count the files") -> tuple[str, dict[str, Any]]:
    item = {"type": "collabAgentToolCall", "id": f"call-{tool}", "tool": tool, "status": "completed",
            "senderThreadId": sender, "receiverThreadIds": receivers, "prompt": prompt, "model": "gpt-5.5",
            "reasoningEffort": "medium", "agentsStates": {k: {"status": v, "message": None} for k, v in states.items()}}
    return method, {"item": item, "threadId": sender, "turnId": f"turn-of-{sender}"}


def _turn(thread: str, method: str, status: str = "inProgress") -> tuple[str, dict[str, Any]]:
    return method, {"threadId": thread, "turn": {"id": f"turn-of-{thread}", "status": status, "items": [],
                                                 "error": {"message": "boom", "codexErrorInfo": "other"}
                                                 if status == "failed" else None}}


def _message(thread: str, text: str) -> tuple[str, dict[str, Any]]:
    return "item/completed", {"threadId": thread, "turnId": f"turn-of-{thread}",
                              "item": {"type": "agentMessage", "id": f"msg-{thread}", "text": text}}


def _run(children: Children, *notifications: tuple[str, dict[str, Any]]) -> list[Any]:
    """The reader's pass (`spawned`) and the session's fold (`fold`) over each notification."""
    events: list[Any] = []
    for method, params in notifications:
        children.spawned(method, params)
        events.extend(children.fold(method, params))
    return events


def test_a_spawned_child_is_announced_shown_and_ended_by_its_turn() -> None:
    children = Children()
    events = _run(children,
                  _collab(ROOT, "spawnAgent", [], {}, method="item/started"),
                  _collab(ROOT, "spawnAgent", [CHILD], {CHILD: "pendingInit"}),
                  _turn(CHILD, "turn/started"),
                  ("warning", {"threadId": CHILD, "message": "Model metadata for `x` not found."}),
                  ("item/started", {"threadId": CHILD, "turnId": f"turn-of-{CHILD}",
                                    "item": {"type": "commandExecution", "id": "cmd-1", "command": "ls",
                                             "cwd": "/w", "status": "inProgress"}}),
                  _message(CHILD, "child report"),
                  ("thread/tokenUsage/updated", {"threadId": CHILD, "turnId": f"turn-of-{CHILD}", "tokenUsage": {
                      "total": {"totalTokens": 9}, "last": {"totalTokens": 9}, "modelContextWindow": 100}}),
                  _turn(CHILD, "turn/completed", "completed"),
                  _collab(ROOT, "wait", [CHILD], {CHILD: "completed"}))
    assert children.root_of(CHILD) == ROOT and children.root_of(ROOT) is None
    started, *shown, ended, reported = events
    assert started == SubagentStarted(CHILD, "Agent aaaa1111", "Count the files", within=None)
    assert ended == reported == SubagentFinished(CHILD, "completed")  # (the core ends a child once)
    assert all(isinstance(event, OfSubagent) and event.subagent_id == CHILD and event.legacy == () for event in shown)
    child_events = [e for event in shown for e in event.child]
    assert [type(e) for e in child_events] == [TerminalStarted, AgentMessageChunk]  # no notice, no usage
    assert child_events[1] == agent_text("child report", f"msg-{CHILD}")


def test_a_failed_turn_fails_the_child_and_a_closed_one_ends_failed() -> None:
    children = Children()
    events = _run(children, _collab(ROOT, "spawnAgent", [CHILD], {CHILD: "pendingInit"}, prompt=None),
                  _turn(CHILD, "turn/started"), _turn(CHILD, "turn/completed", "failed"))
    assert events == [SubagentStarted(CHILD, "Agent aaaa1111", "Delegated task"), SubagentFinished(CHILD, "failed")]
    closed = _run(Children(), _collab(ROOT, "spawnAgent", [CHILD], {CHILD: "pendingInit"}),
                  _collab(ROOT, "closeAgent", [CHILD], {CHILD: "shutdown"}))
    assert closed[-1] == SubagentFinished(CHILD, "failed")


def test_a_childs_own_child_is_announced_within_it() -> None:
    children = Children()
    events = _run(children, _collab(ROOT, "spawnAgent", [CHILD], {}), _turn(CHILD, "turn/started"),
                  _collab(CHILD, "spawnAgent", [GRANDCHILD], {}, prompt="  Dig deeper  "),
                  _message(GRANDCHILD, "found it"))
    assert children.root_of(GRANDCHILD) == ROOT
    assert SubagentStarted(GRANDCHILD, "Agent bbbb2222", "Dig deeper", within=CHILD) in events
    assert isinstance(events[-1], OfSubagent) and events[-1].subagent_id == GRANDCHILD
    children.forget(ROOT)
    assert children.root_of(CHILD) is None and children.root_of(GRANDCHILD) is None


def test_the_sessions_own_notifications_make_no_subagent_events() -> None:
    children = Children()
    assert _run(children, _turn(ROOT, "turn/started"), _message(ROOT, "hello"),
                _collab(ROOT, "spawnAgent", [ROOT, ""], {})) == []  # (a self-reference or a blank id is no child)
    assert children.by_thread == {}


def _activity(sender: str, child: str, path: str, kind: str = "started") -> tuple[str, dict[str, Any]]:
    item = {"type": "subAgentActivity", "model": "gpt-5.5", "reasoningEffort": None, "id": f"act-{child}-{kind}",
            "kind": kind, "agentThreadId": child, "agentPath": path}
    return "item/started", {"item": item, "threadId": sender, "turnId": f"turn-of-{sender}"}


def test_multi_agent_v2_children_are_named_and_placed_by_their_agent_path() -> None:
    children = Children()
    events = _run(children, _activity(ROOT, CHILD, "/root/file_counter/"), _activity(ROOT, ROOT, "/root"),
                  _activity(ROOT, GRANDCHILD, "/root/file_counter/deep--dig"),
                  _activity(ROOT, GRANDCHILD, "/root/file_counter/deep--dig", "interrupted"))
    assert events == [SubagentStarted(CHILD, "File counter", "Delegated task for File counter"),
                      SubagentStarted(GRANDCHILD, "Deep dig", "Delegated task for Deep dig", within=CHILD),
                      SubagentFinished(GRANDCHILD, "cancelled")]

"""A subagent's progress (an Agent/Task call's own messages, `parent_tool_use_id` set).

As claude-agent-acp renders them: the subagent's tool calls are tool calls of their own that
name the Agent call in `_meta.claudeCode.parentToolUseId`, and its text shows on the Agent call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import attrs

from acp_agent.provider import TextContent, ToolCall, ToolCallUpdate, ToolContent

Call = TypeVar("Call", ToolCall, ToolCallUpdate)


def mark(call: Call, parent: str) -> Call:
    """The subagent's tool call (or its update), naming the Agent call that runs it."""
    meta = dict(call.meta) if isinstance(call.meta, dict) else {}
    meta["claudeCode"] = {**meta.get("claudeCode", {}), "parentToolUseId": parent}
    return attrs.evolve(call, meta=meta)


def progress(parent: str, texts: Sequence[str]) -> ToolCallUpdate:
    """The Agent call with what its subagent said so far (content replaces, so all of it)."""
    return ToolCallUpdate(tool_call_id=parent, content=[ToolContent(TextContent("\n\n".join(texts)))])

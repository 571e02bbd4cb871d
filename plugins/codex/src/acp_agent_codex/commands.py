"""Codex's own slash commands: what `available_commands_update` lists and what each prompt runs.

A prompt whose first text block starts with `/name` is one of these commands. `/compact` and the
`/review` family run a Codex turn through their own app-server request (`thread/compact/start`,
`review/start`), whose notifications stream like any turn's; `/status` and `/mcp` have no turn
and are answered by the agent itself from what it and app-server know (`answer`). Names follow
codex-acp.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from attrs import frozen

from acp_agent.provider import (
    AvailableCommand,
    AvailableCommandInput,
    ContentBlock,
    Phase,
    PhaseClock,
    TextContent,
)
from acp_agent_codex import modes, settings
from acp_agent_codex.threads import call_in

if TYPE_CHECKING:
    from acp_agent_codex.appserver import AppServer
    from acp_agent_codex.threads import ThreadState


@frozen
class Command:
    name: str
    rest: str


COMMANDS: Final = (
    AvailableCommand(name="compact", description="Summarize the conversation to free up context."),
    AvailableCommand(name="review", description="Review uncommitted changes, or review with your instructions.",
                     input=AvailableCommandInput(hint="optional review instructions")),
    AvailableCommand(name="review-branch", description="Review changes against a base branch.",
                     input=AvailableCommandInput(hint="branch name")),
    AvailableCommand(name="review-commit", description="Review the changes of one commit.",
                     input=AvailableCommandInput(hint="commit sha")),
    AvailableCommand(name="status", description="Show the session's model, settings and workspace."),
    AvailableCommand(name="mcp", description="Show the MCP servers and their tools."),
)
_NAMES: Final = frozenset(command.name for command in COMMANDS) | {"goal"}
"""`/goal` runs AIR's `_session/goal` (the core sends it as this prompt); it is not listed, so a
client without AIR's `goal` sees the commands it always saw."""
LOCAL: Final = frozenset({"status", "mcp"})
"""Commands the agent answers itself (app-server has no turn for them)."""
_NEEDS_ARGUMENT: Final = {"review-branch": "a branch name", "review-commit": "a commit sha"}


def parse(prompt: Sequence[ContentBlock]) -> Command | None:
    """The command a prompt runs, if its first block is text starting with one of ours."""
    first = prompt[0] if prompt else None
    if not isinstance(first, TextContent):
        return None
    text = first.text.strip()
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    name = name.strip().lower()
    return Command(name, rest.strip()) if name in _NAMES else None


GOAL_LOCAL: Final = frozenset({"pause", "clear"})
"""`/goal` arguments that run no turn (`/goal <objective>` and `/goal resume` run the goal's turn)."""
MAX_GOAL_TEXT: Final = 4000


def local(command: Command) -> bool:
    """Whether the agent answers the command itself, with no Codex turn."""
    if command.name == "goal":
        return command.rest.lower() in GOAL_LOCAL or usage_problem(command) is not None
    return command.name in LOCAL or usage_problem(command) is not None


def usage_problem(command: Command) -> str | None:
    """What is missing from the command, in the words shown to the user."""
    if command.name == "goal" and not command.rest:
        return "`/goal` needs an objective, or `pause`, `resume` or `clear`."
    if command.name == "goal" and len(command.rest) > MAX_GOAL_TEXT:
        return f"`/goal` takes an objective of at most {MAX_GOAL_TEXT} characters."
    needed = _NEEDS_ARGUMENT.get(command.name)
    if needed is not None and not command.rest:
        return f"`/{command.name}` needs {needed}, e.g. `/{command.name} main`."
    return None


def request(command: Command, thread_id: str) -> tuple[str, dict[str, Any]]:
    """The app-server request that runs a turn command (a goal's: codex starts the goal's turn
    once the goal is active)."""
    if command.name == "goal":
        if command.rest.lower() == "resume":
            return "thread/goal/set", {"threadId": thread_id, "status": "active"}
        return "thread/goal/set", {"threadId": thread_id, "objective": command.rest, "status": "active"}
    if command.name == "compact":
        return "thread/compact/start", {"threadId": thread_id}
    if command.name == "review-branch":
        target: dict[str, Any] = {"type": "baseBranch", "branch": command.rest}
    elif command.name == "review-commit":
        target = {"type": "commit", "sha": command.rest, "title": None}
    elif command.rest:
        target = {"type": "custom", "instructions": command.rest}
    else:
        target = {"type": "uncommittedChanges"}
    return "review/start", {"threadId": thread_id, "target": target, "delivery": "inline"}


def status_text(*, thread_id: str, cwd: str, roots: Sequence[str], mode: str, model: str | None,
                effort: str | None, fast: bool | None, usage: Mapping[str, Any] | None) -> str:
    lines = ["**Codex session status**", "", f"- Session: `{thread_id}`", f"- Workspace: `{cwd}`"]
    lines.extend(f"- Also writable: `{root}`" for root in roots)
    lines.append(f"- Mode: {mode}")
    lines.append(f"- Model: {model or 'Codex default'}")
    if effort:
        lines.append(f"- Reasoning effort: {effort}")
    if fast is not None:
        lines.append(f"- Fast mode: {'on' if fast else 'off'}")
    total = usage.get("total") if isinstance(usage, Mapping) else None
    if isinstance(total, Mapping) and isinstance(total.get("totalTokens"), int):
        window = usage.get("modelContextWindow") if isinstance(usage, Mapping) else None
        used = f"{total['totalTokens']:,} tokens used"
        lines.append(f"- Context: {used}" + (f" of {window:,}" if isinstance(window, int) else ""))
    return "\n".join(lines)


def mcp_text(servers: Sequence[Mapping[str, Any]]) -> str:
    """`mcpServerStatus/list` as a short list: each server, its state and its tools."""
    if not servers:
        return "No MCP servers are configured for this session."
    lines = ["**MCP servers**", ""]
    for server in servers:
        name = str(server.get("name") or "?")
        status = server.get("runtimeStatus")
        state = status.get("status") if isinstance(status, Mapping) else status
        tools = server.get("tools")
        tool_names = sorted(str(tool.get("name") or key) for key, tool in tools.items()
                            if isinstance(tool, Mapping)) if isinstance(tools, Mapping) else []
        line = f"- `{name}`"
        if isinstance(state, str) and state:
            line += f" ({state})"
        if server.get("toolsError"):
            line += f": tools unavailable ({server['toolsError']})"
        elif tool_names:
            line += ": " + ", ".join(f"`{tool}`" for tool in tool_names)
        else:
            line += ": no tools"
        lines.append(line)
    return "\n".join(lines)


async def answer(clock: PhaseClock, server: AppServer, thread: ThreadState, models: Sequence[Mapping[str, Any]],
                 command: Command) -> str:
    """The agent's own answer to a command that runs no Codex turn (`LOCAL`, or a usage problem)."""
    problem = usage_problem(command)
    if problem is not None:
        return problem
    if command.name == "goal":  # pause or clear: codex reports the goal (`thread/goal/*`)
        pause = command.rest.lower() == "pause"
        method = "thread/goal/set" if pause else "thread/goal/clear"
        params = {"threadId": thread.codex_id, **({"status": "paused"} if pause else {})}
        async with clock.phase(Phase.SUBMITTING, label=method):
            await call_in(server, method, params, Phase.SUBMITTING)
        return ""
    if command.name == "mcp":
        async with clock.phase(Phase.READING, label="mcpServerStatus/list"):
            result = await call_in(server, "mcpServerStatus/list", {"threadId": thread.codex_id,
                                                                   "detail": "toolsAndAuthOnly"}, Phase.READING)
        data = result.get("data") if isinstance(result, Mapping) else None
        return mcp_text([entry for entry in data or [] if isinstance(entry, Mapping)])
    choices = thread.choices
    fast = choices.fast if settings.fast_tier(models, choices.model) is not None else None
    return status_text(thread_id=thread.thread_id, cwd=thread.cwd, roots=thread.roots, mode=modes.mode_name(thread.mode),
                       model=choices.model, effort=choices.effort, fast=fast, usage=thread.usage)

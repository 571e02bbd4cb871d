"""Neutral events: what a provider's classification turns native backend events into.

The core folds these into ACP updates, failure records and baseline errors. Content updates are
ACP session updates (`acp_agent.wire.acp`) and pass through unchanged; the rest are defined here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from attrs import field

from acp_agent.failures.protocol import Category, FailureKind, FailureObservation
from acp_agent.wire.records import frozen

if TYPE_CHECKING:  # the session wire types load on first use (`acp_agent.wire.acp`), not with these
    from acp_agent.wire.acp import (
        AsyncTaskProgress,
        AsyncTaskSpawned,
        AsyncTaskStateUpdate,
        SessionUpdate,
        StopReason,
        ToolCall,
        ToolCallUpdate,
    )


@frozen
class RetryProgress:
    """The backend is retrying the turn; a warning on the turn's incident, titled by the vendor."""

    title: str
    kind: FailureKind = FailureKind.PROVIDER_ERROR
    category: Category | None = None


@frozen
class Notice:
    """A warning or information for the user that is not a failure of a turn: an ACP `notice`
    (clients with `session.notices`), else an advisory record (clients of the failure extension),
    else `legacy_text` as agent text (None: nothing)."""

    title: str
    details: str | None = None
    legacy_text: str | None = None
    severity: Literal["info", "warning", "error"] = field(default="warning", kw_only=True)


@frozen
class SessionFailure:
    """A failure outside the active turn (or of another turn): a session-scoped record."""

    observation: FailureObservation


@frozen
class AttemptBoundary:
    """The backend confirmed a new attempt; ends retry incidents.

    Model content in a live turn (text, thought, a tool call) is already that evidence and the
    core treats it so: emit this only for progress that carries no content.
    """


@frozen
class RuntimeReplaced:
    """The provider replaced its backend process; ends transport-loss incidents."""


@frozen
class AuthConfirmed:
    """The backend confirmed the credentials work."""


@frozen
class TurnEnd:
    """The turn finished normally with an ACP stop reason."""

    stop_reason: StopReason = "end_turn"


@frozen
class TurnUsage:
    """The tokens the running turn used (the last report wins), for `PromptResponse.usage`. Leave
    a count the backend does not report as None."""

    input_tokens: int
    output_tokens: int
    thought_tokens: int | None = None
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None
    total_tokens: int | None = None
    """None: input + output (+ thought, cached read and write where given)."""


@frozen
class HistoryFailure:
    """A failure recognised in stored history, replayed in place of its transcript text.

    `user_message_id` is the preceding user message's id (the live turn id), `message_id` the
    failing message's own id; `legacy_updates` is what a client without the extension sees instead.
    `typed=False` marks a failure that is not replayed as a record (capable clients see nothing).
    """

    observation: FailureObservation
    message_id: str
    user_message_id: str | None
    active: bool = False
    legacy_updates: Sequence[SessionUpdate] = field(factory=tuple)
    typed: bool = True


@frozen
class SessionTitle:
    """The backend named or renamed the session (`None`: it cleared the name).

    Published as `session_info_update` with the title and `updated_at` (ISO 8601; `None`: now), so
    an editor's thread list follows without a `session/list`.
    """

    title: str | None
    updated_at: str | None = None


@frozen
class TerminalStarted:
    """A tool call that runs a shell command. `call` is the tool call as clients that render no
    terminal see it (today's rendering); clients that opt in see a terminal instead."""

    call: ToolCall
    cwd: str | None = None


@frozen
class TerminalOutput:
    """Output the command wrote (`data`: only what is new; empty for a change of title or status).
    `legacy` is the update clients without terminals get for it (None: nothing); terminal clients
    get its fields other than `content`."""

    tool_call_id: str
    data: str
    legacy: ToolCallUpdate | None = None


@frozen
class TerminalExited:
    """The command ended. `update` finishes the tool call (status, text, raw output) as clients
    without terminals see it, unless `legacy` is False (they saw the end already); `output` is its
    whole output, sent to a terminal once if nothing streamed."""

    tool_call_id: str
    update: ToolCallUpdate
    exit_code: int | None = None
    output: str = ""
    legacy: bool = True


@frozen
class Compaction:
    """The backend compacts (or compacted) the conversation's context, shown to every client.

    One `compaction_id` per compaction; reports may repeat (the first one opens it, the first
    that is not `in_progress` ends it). `trigger`: the backend's word for what started it
    (`auto`/`automatic`, `manual`, `idle`); `summary`: the summary the context was compacted to,
    where the backend gives it.
    """

    compaction_id: str
    status: Literal["in_progress", "completed", "failed", "cancelled"]
    trigger: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    error: str | None = None
    summary: str | None = field(default=None, kw_only=True)
    duration_ms: int | None = field(default=None, kw_only=True)


@frozen
class CompactionSummaryChunk:
    """A piece of a running compaction's summary as the model writes it (`session.compaction`
    clients get it as `compaction_summary_chunk`; others nothing)."""

    compaction_id: str
    text: str


@frozen
class PlanFileCall:
    """A tool call that asks the user to review a plan the backend keeps in a file (Claude's
    ExitPlanMode), or its result. `update` is the call or its update as every client sees it;
    `tool_input` the call's input, `path` the plan file the backend names (None: none).

    A client of AIR's `planFile` reads the plan from the file: its `rawInput` names the file
    (`planFilePath`) instead of holding the plan's text; `released` (the plan was approved, plan
    mode is over) adds a call of its own whose blank `planFilePath` clears the file from the
    client's plan, as claude-agent-acp reports it."""

    update: ToolCall | ToolCallUpdate
    tool_input: Mapping[str, Any]
    path: str | None
    released: bool = False


@frozen
class PlanDocument:
    """A plan as markdown: the plan the user approved (Claude's ExitPlanMode), or a plan the
    backend writes as it streams (Codex's plan items). A client that declares ACP's unstable
    `plan` gets it as `plan_update` (type `markdown`) under `plan_id`, joined to the call that
    reviewed it (`review_call_id`) for a client of AIR; other clients `otherwise` (None: nothing;
    Claude's review tool call shows the plan).

    `streamed`: `text` is the whole plan so far, reported again as it grows: a plan client is
    sent nothing when it did not change, and a client of AIR's `planContentDelta` only the new
    text (`_meta.jetbrains.air.contentDelta`, an empty `content`), as codex-acp's plan stream;
    `partial`: more of it is to come (a client sent it whole gets a partial plan throttled)."""

    plan_id: str
    text: str
    review_call_id: str | None = None
    streamed: bool = False
    otherwise: SessionUpdate | None = None
    partial: bool = False



@frozen
class GoalSnapshot:
    """The session's goal as the backend now reports it (None: cleared), in AIR's shape
    (`objective`, `status`, `tokenBudget`, `tokensUsed`, `timeUsedSeconds`, `createdAt`,
    `updatedAt` in ms, `controlMethod`); sent only to a client that declared `goal`."""

    goal: Mapping[str, Any] | None


@frozen
class AsyncTask:
    """A background task's lifecycle (Claude Code's background commands), as AIR's `asyncTasks`
    carries it: `update` is the wire update claude-agent-acp sends (`async_task_spawned`,
    `async_task_progress`, `async_task_state_update`), sent only to a client that declared
    `asyncTasks`; other clients get nothing (the tool call that started it shows as before)."""

    update: AsyncTaskSpawned | AsyncTaskProgress | AsyncTaskStateUpdate


@frozen
class BackgroundedCall:
    """The result of a tool call whose command went on in the background (`event`, today's
    rendering): a client of `asyncTasks` gets its `tool_call_update` marked
    `_meta.jetbrains.air.asyncTasks.backgrounded: true` (its task's lifecycle comes as `AsyncTask`
    events), every other client the event as it is."""

    tool_call_id: str
    event: TerminalExited | ToolCallUpdate


Presented = (SessionTitle | TerminalStarted | TerminalOutput | TerminalExited | Compaction | CompactionSummaryChunk
             | PlanFileCall | PlanDocument | GoalSnapshot | AsyncTask | BackgroundedCall)
"""Events whose wire form depends on what the client negotiated (`acp_agent.sessions.presentation`)."""

SubagentState = Literal["completed", "failed", "cancelled", "disconnected"]


@frozen
class SubagentStarted:
    """A subagent the model delegated to started (Claude's Agent/Task call): a child session
    `subagent_id` for a client that takes child sessions (AIR's `subagent_spawned`, ACP's
    `subagent_update`), nothing for others (they see the launching tool call). `within`: the
    subagent whose session made the launch (None: the session itself)."""

    subagent_id: str
    name: str
    """What the client shows it as (the call's name, else its short description, else its role)."""
    task: str
    """What it was asked (the prompt, else the short description)."""
    prompt: str | None = None
    role: str | None = None
    """Its kind of agent (Claude's `subagent_type`)."""
    tool_call_id: str | None = None
    """The tool call that launched it."""
    within: str | None = None


@frozen
class SubagentFinished:
    """The subagent `subagent_id` ended (once; later updates of it are dropped)."""

    subagent_id: str
    state: SubagentState


@frozen
class SubagentLaunch:
    """An update of the tool call that launches a subagent (`event`, today's rendering): a client
    that takes child sessions is not shown it (the child session stands for it), unless the launch
    failed before any child started."""

    tool_call_id: str
    event: Event
    within: str | None = None
    """The subagent that made the call (None: the session itself)."""


@frozen
class OfSubagent:
    """What the subagent `subagent_id` showed: `child`, the events as its own session shows them
    (a client that takes child sessions gets them under the child's id), `legacy`, what every
    other client sees in the parent session (today's rendering)."""

    subagent_id: str
    child: Sequence[Event]
    legacy: Sequence[Event]


Subagent = SubagentStarted | SubagentFinished | SubagentLaunch | OfSubagent
"""Events of subagents, rendered for the client's form of child sessions (`acp_agent.sessions.subagents`)."""
Signal = AttemptBoundary | RuntimeReplaced | AuthConfirmed
if TYPE_CHECKING:
    Event: TypeAlias = (SessionUpdate | RetryProgress | Notice | SessionFailure | Signal | HistoryFailure | Presented
                        | TurnUsage | Subagent)
    """Everything a provider emits: ACP session updates pass through, the rest is folded by the core."""


def __getattr__(name: str) -> Any:
    """`Event` at run time (its union holds the session wire types, loaded on first use)."""
    if name == "Event":
        from acp_agent.wire.acp import SessionUpdate

        event = (SessionUpdate | RetryProgress | Notice | SessionFailure | Signal | HistoryFailure | Presented
                 | TurnUsage | Subagent)
        globals()["Event"] = event
        return event
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


MODEL_ANSWER_UPDATES = frozenset({"agent_message_chunk", "agent_thought_chunk", "tool_call"})


def is_model_answer(event: object) -> bool:
    """Content that only a real model answer produces (ends quota and retry incidents)."""
    return getattr(event, "session_update", None) in MODEL_ANSWER_UPDATES

"""Neutral events: what a provider's classification turns native backend events into.

The core folds these into ACP updates, failure records and baseline errors. Content updates are
ACP session updates (`acp_agent.acp`) and pass through unchanged; the rest are defined here.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import field, frozen

from acp_agent.acp import SessionUpdate, StopReason
from acp_agent.failures import Category, FailureKind, FailureObservation


@frozen
class RetryProgress:
    """The backend is retrying the turn; a warning on the turn's incident, titled by the vendor."""

    title: str
    kind: FailureKind = FailureKind.PROVIDER_ERROR
    category: Category | None = None


@frozen
class Notice:
    """A non-fatal advisory. `legacy_text` is what clients without the extension see (None: nothing)."""

    title: str
    details: str | None = None
    legacy_text: str | None = None


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


Signal = AttemptBoundary | RuntimeReplaced | AuthConfirmed
Event = SessionUpdate | RetryProgress | Notice | SessionFailure | Signal | HistoryFailure


MODEL_ANSWER_UPDATES = frozenset({"agent_message_chunk", "agent_thought_chunk", "tool_call"})


def is_model_answer(event: object) -> bool:
    """Content that only a real model answer produces (ends quota and retry incidents)."""
    return getattr(event, "session_update", None) in MODEL_ANSWER_UPDATES

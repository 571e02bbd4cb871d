"""The questions a backend asks the user, and their answers: what a provider hands the core's
`TurnChannel.ask` (`acp_agent.sessions.questions` asks them the way the client can answer).

A `Question` is a form (`fields`, or the backend's own JSON `schema`); a `UrlQuestion` sends the
user to a page. The `Answer`'s action is the user's: accept, decline, or cancel (dismissed, or the
turn was cancelled); the provider turns decline and cancel into its backend's refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from attrs import field

from acp_agent.wire.records import frozen

Action = Literal["accept", "decline", "cancel"]


@frozen
class Choice:
    label: str
    description: str | None = None


@frozen
class QuestionField:
    """One question of a form. Without choices it takes free text (then a client without
    elicitation cannot answer it)."""

    id: str
    question: str
    header: str = ""
    choices: tuple[Choice, ...] = ()
    multiple: bool = False


@frozen
class Question:
    """A form: `fields`, or the backend's own JSON `schema` handed to the client as it is."""

    message: str
    fields: tuple[QuestionField, ...] = ()
    schema: Mapping[str, Any] | None = None
    tool_call_id: str | None = None
    """A tool call the client already shows, which the question belongs to."""


@frozen
class UrlQuestion:
    """The user must visit `url` (an OAuth page, a form the backend serves)."""

    message: str
    url: str
    elicitation_id: str
    tool_call_id: str | None = None


@frozen
class Answer:
    """`values`: each answered field's chosen labels or text; `content`: the client's accepted form
    content as it sent it (for a `schema` question)."""

    action: Action
    values: Mapping[str, tuple[str, ...]] = field(factory=dict)
    content: Mapping[str, Any] = field(factory=dict)


CANCELLED = Answer("cancel")

"""The questions a backend asks the user, and their answers: what a provider hands the core's
`TurnChannel.ask` (`acp_agent.sessions.questions` asks them the way the client can answer).

A `Question` is a form (`fields`, or the backend's own JSON `schema`); a `UrlQuestion` sends the
user to a page. The `Answer`'s action is the user's: accept, decline, or cancel (dismissed, or the
turn was cancelled); the provider turns decline and cancel into its backend's refusal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


def question_form(entries: Any, message: str,
                  multiple: Callable[[Mapping[str, Any]], bool] = lambda entry: False) -> Question:
    """A backend's list of questions (`{id, question, header, options: [{label, description}]}`,
    the shape Codex's and Muse's both take) as one form; an entry without an id is left out.
    One question is asked in its own words, several under `message`."""
    fields = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str) or not entry["id"]:
            continue
        options = entry.get("options")
        choices = tuple(Choice(option["label"], _text(option.get("description")) or None)
                        for option in (options if isinstance(options, list) else [])
                        if isinstance(option, Mapping) and _text(option.get("label")))
        fields.append(QuestionField(entry["id"], _text(entry.get("question")), _text(entry.get("header")),
                                    choices, multiple(entry)))
    single = fields[0].question if len(fields) == 1 else ""
    return Question(single or message, tuple(fields))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""

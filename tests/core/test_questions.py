"""Questions as ACP elicitation forms, and answers read back (pure parts of acp_agent.sessions.questions)."""

from __future__ import annotations

from typing import Any

import pytest
from acp import schema
from pydantic import TypeAdapter

from acp_agent.backends.questions import Answer, Choice, Question, QuestionField
from acp_agent.sessions.questions import _elicitation_answer, ask, form_schema

COLOR = QuestionField("color", "Which color?", "Color", (Choice("Blue", "cool"), Choice("Red")))
TAGS = QuestionField("tags", "Which tags?", "", (Choice("a"), Choice("b")), multiple=True)
NOTE = QuestionField("note", "Anything else?")


def valid(params: dict[str, Any]) -> None:
    TypeAdapter(schema.CreateElicitationRequest).validate_python(params)


def test_one_question_uses_the_message_and_a_titled_one_of() -> None:
    built = form_schema(Question("Which color?", (COLOR,)))
    assert built == {"type": "object", "properties": {"color": {
        "type": "string", "title": "Color",
        "oneOf": [{"const": "Blue", "title": "Blue", "description": "cool"}, {"const": "Red", "title": "Red"}]}}}
    valid({"sessionId": "s", "mode": "form", "message": "Which color?", "requestedSchema": built})


def test_several_questions_describe_each_field_multi_select_and_free_text() -> None:
    built = form_schema(Question("Answer these.", (COLOR, TAGS, NOTE)))
    assert built["properties"]["color"]["description"] == "Which color?"
    assert built["properties"]["tags"] == {"type": "array", "description": "Which tags?",
                                           "items": {"anyOf": [{"const": "a", "title": "a"},
                                                               {"const": "b", "title": "b"}]}}
    assert built["properties"]["note"] == {"type": "string", "description": "Anything else?"}
    valid({"sessionId": "s", "mode": "form", "message": "Answer these.", "requestedSchema": built})


def test_a_backends_schema_passes_through() -> None:
    own = {"properties": {"token": {"type": "string"}}, "required": ["token"]}
    assert form_schema(Question("Log in", schema=own)) == {**own, "type": "object"}


def test_answers_read_back() -> None:
    question = Question("Answer these.", (COLOR, TAGS, NOTE))
    accepted = _elicitation_answer({"action": "accept", "content": {"color": "Red", "tags": ["a", "b"], "note": ""}},
                                   question)
    assert accepted.values == {"color": ("Red",), "tags": ("a", "b")}
    assert accepted.content == {"color": "Red", "tags": ["a", "b"], "note": ""}
    assert _elicitation_answer({"action": "decline"}, question) == Answer("decline")
    assert _elicitation_answer({"action": "cancel"}, question) == Answer("cancel")
    assert _elicitation_answer(None, question) == Answer("cancel")  # withdrawn or failed
    assert _elicitation_answer({"action": "_custom"}, question) == Answer("cancel")


class _ScriptedOutbox:
    """An outbox for a client without elicitation whose user picks `picks` in order."""

    def __init__(self, picks: list[str | None]) -> None:
        self.picks = picks
        self.asked: list[tuple[str, list[str]]] = []
        self.updates: list[Any] = []
        self.features = type("Features", (), {"elicitation_form": False, "elicitation_url": False})()
        self.connection = None

    async def send_update(self, session_id: str, update: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], turn: Any) -> str | None:
        self.asked.append((tool_call.title, [o.name for o in options]))
        pick = self.picks.pop(0)
        return next((o.option_id for o in options if o.name == pick), None) if pick is not None else None


async def _ask(question: Question, picks: list[str | None]) -> tuple[Answer, _ScriptedOutbox]:
    outbox = _ScriptedOutbox(picks)
    answer = await ask(outbox, "s", question, None)  # type: ignore[arg-type]
    assert outbox.picks == []  # every scripted pick was asked for
    return answer, outbox


@pytest.mark.anyio
async def test_a_multi_select_field_takes_several_answers_by_permission() -> None:
    tags = QuestionField("tags", "Which tags?", "", (Choice("a"), Choice("b"), Choice("c")), multiple=True)
    answer, outbox = await _ask(Question("Answer these.", (tags, COLOR)), ["c", "a", "Done", "Red"])
    assert answer == Answer("accept", {"tags": ("c", "a"), "color": ("Red",)})
    assert outbox.asked == [
        ("Which tags?", ["a", "b", "c", "Decline"]),
        ("Which tags? (chosen: c)", ["a", "b", "Done", "Decline"]),
        ("Which tags? (chosen: c, a)", ["b", "Done", "Decline"]),
        ("Which color?", ["Blue", "Red", "Decline"]),
    ]
    # picking every answer ends the field without a Done
    answer, _ = await _ask(Question("Which tags?", (tags,)), ["b", "a", "c"])
    assert answer == Answer("accept", {"tags": ("b", "a", "c")})


@pytest.mark.anyio
async def test_a_multi_select_field_declined_or_dismissed_midway() -> None:
    answer, _ = await _ask(Question("Which tags?", (TAGS,)), ["a", "Decline"])
    assert answer == Answer("decline")
    answer, outbox = await _ask(Question("Which tags?", (TAGS,)), ["a", None])
    assert answer == Answer("cancel")
    assert outbox.updates[-1].status == "failed"  # the question's own call ends failed

"""Questions as ACP elicitation forms, and answers read back (pure parts of acp_agent.questions)."""

from __future__ import annotations

from typing import Any

from acp import schema
from pydantic import TypeAdapter

from acp_agent.questions import Answer, Choice, Question, QuestionField, _elicitation_answer, form_schema

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

"""The translation of Claude Code's asking tools (asking.py), without a CLI."""

from __future__ import annotations

from acp_agent.backends.questions import Answer, UrlQuestion
from acp_agent_claude import asking

INPUT = {"questions": [
    {"question": "Which color?", "header": "Color", "multiSelect": False,
     "options": [{"label": "Blue", "description": "cool"}, {"label": "Red"}]},
    {"question": "Which sizes?", "header": "Size", "multiSelect": True,
     "options": [{"label": "S"}, {"label": "M"}, {"label": "L"}]},
    {"question": "No options", "options": []},
]}


def test_questions_become_one_form_of_valid_questions() -> None:
    question = asking.question(INPUT)
    assert question is not None and question.message == asking.ASK_MESSAGE
    assert [(f.id, f.header, f.multiple, [c.label for c in f.choices]) for f in question.fields] == [
        ("question_0", "Color", False, ["Blue", "Red"]), ("question_1", "Size", True, ["S", "M", "L"])]
    assert question.fields[0].choices[0].description == "cool"
    assert asking.question({"questions": [{"question": "x", "options": []}]}) is None
    assert asking.question({}) is None


def test_answers_are_keyed_by_question_text_and_multi_select_joins() -> None:
    answer = Answer("accept", {"question_0": ("Red",), "question_1": ("S", "L")})
    assert asking.answered_input(INPUT, answer)["answers"] == {"Which color?": "Red", "Which sizes?": "S, L"}
    assert asking.answered_input(INPUT, Answer("decline"))["answers"] == {}
    assert asking.answered_input(INPUT, answer)["questions"] == INPUT["questions"]
    # a label the join would split is quoted, as the CLI and claude-agent-acp write it
    quoted = Answer("accept", {"question_1": ("S, small", 'the "M"', "L")})
    assert asking.answered_input(INPUT, quoted)["answers"] == {"Which sizes?": '"S, small", "the \\"M\\"", L'}
    assert asking.answered_input(INPUT, Answer("accept", {"question_1": ("S, small",)}))["answers"] == {
        "Which sizes?": '"S, small"'}


def test_exit_plan_options_follow_the_offered_modes() -> None:
    ids = [o.option_id for o in asking.exit_plan_options(["default", "acceptEdits", "plan"])]
    assert ids == ["exit-plan-accept-edits", "exit-plan-default", "reject"]
    ids = [o.option_id for o in asking.exit_plan_options(["default", "acceptEdits", "plan", "bypassPermissions"])]
    assert ids[0] == "exit-plan-bypass"
    assert asking.exit_plan_approval({"plan": "p"}, "acceptEdits")["updatedPermissions"] == [
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"}]


def test_mcp_elicitations() -> None:
    form = asking.elicitation_question({"message": "m", "mode": "form", "requested_schema": {"properties": {}}})
    assert form is not None and not isinstance(form, UrlQuestion) and form.schema == {"properties": {}}
    url = asking.elicitation_question({"message": "m", "mode": "url", "url": "https://x", "elicitation_id": "e"})
    assert url == UrlQuestion("m", "https://x", "e")
    assert asking.elicitation_question({"message": "m", "mode": "url"}) is None
    assert asking.elicitation_result(Answer("accept", content={"a": 1})) == {"action": "accept", "content": {"a": 1}}
    assert asking.elicitation_result(Answer("cancel")) == {"action": "cancel"}

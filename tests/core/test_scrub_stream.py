"""A secret streamed in pieces: masked as in the whole text, with only what could start one held back.

`StreamScrubber` is checked against the frame scrubber on the whole text for any split of it;
through an agent, a turn's text chunks come out scrubbed as one text, in order, with the held
tail ahead of whatever follows it (another update, another kind of chunk, the prompt's answer).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_agent.failures.redaction import MASK, Redactor
from acp_agent.failures.scrub import FrameScrubber, StreamScrubber
from acp_agent.testing.conformance import play
from acp_agent.wire import acp

pytestmark = pytest.mark.timeout(60)

KEY = "sk-ant-stream-0123456789abcdef"
ENV = {"PROVIDER_API_KEY": KEY}


def redactor(*secrets: str) -> Redactor:
    holder = Redactor()
    holder.add(*secrets)
    return holder


def scrubbed_whole(text: str, holder: Redactor) -> str:
    """The whole text as the frame scrubber leaves it in a frame."""
    data = json.dumps({"text": text}, ensure_ascii=False).encode() + b"\n"
    value: str = json.loads(FrameScrubber(holder)(data))["text"]
    return value


def pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(cut, len(text)) for cut in cuts})
    return [text[start:end] for start, end in zip([0, *points], [*points, len(text)], strict=True)]


def streamed(parts: list[str], holder: Redactor) -> tuple[list[str], list[str]]:
    """What goes out per piece (the last entry: the end's), and what is held after each piece."""
    stream = StreamScrubber(holder)
    held, out, helds = "", [], []
    for part in parts:
        released, held = stream.feed(held, part)
        out.append(released)
        helds.append(held)
    out.append(stream.end(held))
    return out, helds


def proper_prefix_of_a_secret(held: str, secrets: set[str]) -> bool:
    return held == "" or any(len(secret) > len(held) and secret.startswith(held) for secret in secrets)


# A small alphabet, so secrets overlap, contain each other and begin inside one another.
SECRETS = st.sets(st.text("abc", min_size=4, max_size=7), min_size=1, max_size=3)
TEXTS = st.text("abcx-", max_size=40)
CUTS = st.lists(st.integers(0, 40), max_size=8)


@settings(max_examples=400, deadline=None)
@given(SECRETS, TEXTS, CUTS)
def test_any_split_of_a_text_comes_out_as_the_whole_text_scrubbed(secrets: set[str], text: str,
                                                                  cuts: list[int]) -> None:
    holder = redactor(*secrets)
    out, helds = streamed(pieces(text, cuts), holder)
    assert "".join(out) == scrubbed_whole(text, holder)
    longest = max(map(len, secrets))
    for held in helds:
        # Held back: only a start of a secret, so at most one character less than the longest.
        assert len(held) < longest
        assert proper_prefix_of_a_secret(held, secrets)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), CUTS)
def test_without_secrets_nothing_is_held_back(text: str, cuts: list[int]) -> None:
    parts = pieces(text, cuts)
    out, helds = streamed(parts, Redactor())
    assert out == [*parts, ""]
    assert set(helds) <= {""}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30), CUTS)
def test_a_real_key_in_any_split_is_masked_and_the_rest_kept(before: str, after: str, cuts: list[int]) -> None:
    text = f"{before}{KEY}{after}"
    out, _ = streamed(pieces(text, cuts), redactor(KEY))
    assert "".join(out) == scrubbed_whole(text, redactor(KEY))
    assert KEY not in "".join(out)


@pytest.mark.parametrize(("parts", "expected"), [
    # (pieces, what goes out for each piece and then at the end)
    (["The key is sk-ant-str", "eam-0123456789abcdef."], ["The key is ", f"{MASK}.", ""]),
    (["sk-", "ant-", "nothing"], ["", "", "sk-ant-nothing", ""]),
    (["ends with sk-ant"], ["ends with ", "sk-ant"]),
    ([f"{KEY[:-1]}", f"{KEY[-1]} and {KEY[:5]}"], ["", f"{MASK} and ", KEY[:5]]),
    (["plain text only"], ["plain text only", ""]),
    (["a task: ", "skip it"], ["a task: ", "skip it", ""]),
])
def test_what_goes_out_per_piece(parts: list[str], expected: list[str]) -> None:
    out, _ = streamed(parts, redactor(KEY))
    assert out == expected


def test_a_secret_added_while_a_text_streams_is_found_from_then_on() -> None:
    holder = Redactor()
    stream = StreamScrubber(holder)
    assert stream.feed("", "first sk-ant-") == ("first sk-ant-", "")
    holder.add(KEY)
    out, held = stream.feed("", "then sk-ant-str")
    assert (out, held) == ("then ", "sk-ant-str")
    assert stream.feed(held, "eam-0123456789abcdef!") == (f"{MASK}!", "")


# -- through an agent: a turn's chunks --------------------------------------------------------------


def chunk_frames(client: Any) -> list[tuple[str, str]]:
    """Every session update in wire order as (kind, text), and the prompt's answer as ("answer", "")."""
    out: list[tuple[str, str]] = []
    for frame in client.frames:
        if frame.get("method") == "session/update":
            update = frame["params"]["update"]
            kind = update["sessionUpdate"]
            if kind in ("agent_message_chunk", "agent_thought_chunk"):
                out.append((kind, update["content"]["text"]))
            elif kind != "session_info_update":
                out.append((kind, ""))
        elif isinstance(frame.get("result"), dict) and "stopReason" in frame["result"]:
            out.append(("answer", ""))
    return out


MESSAGE, THOUGHT = "agent_message_chunk", "agent_thought_chunk"


@pytest.mark.anyio
@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_turn_streams_its_text_scrubbed_across_chunks_in_order(capable: bool) -> None:
    steps: list[Any] = [
        acp.thought_text("thinking of sk-ant-"), acp.thought_text("str"),
        acp.agent_text("The key is "), acp.agent_text(KEY[:10]), acp.agent_text(KEY[10:]),
        acp.agent_text(" and sk-ant-"),
        acp.ToolCall(tool_call_id="t1", title="A tool"),
        acp.agent_text("Again sk-ant-"), acp.agent_text("stream"),
    ]
    outcome, client = await play("streamy", steps, capable=capable, environ=ENV)
    assert outcome["stopReason"] == "end_turn"
    assert chunk_frames(client) == [
        (THOUGHT, "thinking of "),  # "sk-ant-" and then "str" could begin the key: held
        (THOUGHT, "sk-ant-str"),  # the thought ended: its held tail goes before the message
        (MESSAGE, "The key is "), (MESSAGE, MASK), (MESSAGE, " and "),
        (MESSAGE, "sk-ant-"),  # before the tool call
        ("tool_call", ""),
        (MESSAGE, "Again "),
        (MESSAGE, "sk-ant-stream"),  # the turn ended: before its answer
        ("answer", ""),
    ]
    assert KEY not in json.dumps(client.frames)


@pytest.mark.anyio
async def test_without_secrets_every_chunk_goes_out_as_emitted() -> None:
    parts = ["The key is ", KEY[:10], KEY[10:], " as printed"]
    outcome, client = await play("plain", [acp.agent_text(part) for part in parts], capable=True, environ={})
    assert outcome["stopReason"] == "end_turn"
    assert chunk_frames(client) == [*((MESSAGE, part) for part in parts), ("answer", "")]


@pytest.mark.anyio
async def test_the_held_tail_goes_before_a_permission_request() -> None:
    from acp_agent.testing import run_in_process
    from acp_agent_scripted import make_spec

    script = {"turns": [[{"text": "I will use sk-ant-"}, {"permission": "Run it"}]]}
    async with run_in_process(make_spec(script), environ=ENV) as client:
        await client.initialize(capable=True)
        session_id = await client.new_session("/")
        await client.prompt(session_id, "go")
    order = []  # the chunks' texts and the permission request, in wire order
    for frame in client.frames:
        if frame.get("method") == "session/request_permission":
            order.append("<asked>")
        elif frame.get("method") == "session/update" and frame["params"]["update"]["sessionUpdate"] == MESSAGE:
            order.append(frame["params"]["update"]["content"]["text"])
    assert order == ["I will use ", "sk-ant-", "<asked>", "permission: allow"]

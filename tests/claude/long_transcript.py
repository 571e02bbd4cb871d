"""Long stored Claude transcripts for `session/load`: N turns, each as the real CLI writes one.

Each turn is the lines the CLI 2.1.332 wrote for a prompt that ran one tool (fixture
`transcript_session_multi_turn.jsonl`: the queue operations, the user prompt, the assistant's
`tool_use`, the user `tool_result`, the assistant's text), with the tool made a Bash call, fresh
uuids chained by `parentUuid`, and the texts numbered so a replay can be checked complete and in
order. Used by the tests and by `bench/bench_long_history.py`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

FIXTURE = Path(__file__).parent / "fixtures" / "transcript_session_multi_turn.jsonl"


def _template() -> dict[str, dict[str, Any]]:
    """The real lines of the fixture's second turn, by role."""
    lines = [json.loads(line) for line in FIXTURE.read_text().splitlines()[1:] if line.strip()]
    start = next(i for i, r in enumerate(lines) if r.get("type") == "user" and r["message"]["content"] == "Write notes.txt.")
    turn = lines[start - 2:]
    pick = {"enqueue": next(r for r in turn if r.get("operation") == "enqueue"),
            "dequeue": next(r for r in turn if r.get("operation") == "dequeue"),
            "prompt": turn[2],
            "call": next(r for r in turn if r.get("type") == "assistant" and r["message"]["content"][0]["type"] == "tool_use"),
            "result": next(r for r in turn if r.get("type") == "user" and isinstance(r["message"]["content"], list)),
            "answer": next(r for r in turn if r.get("type") == "assistant" and r["message"]["content"][0]["type"] == "text")}
    return json.loads(json.dumps(pick))


TEMPLATE = _template()


def prompt_text(n: int) -> str:
    return f"Prompt {n}: list the files."


def answer_text(n: int) -> str:
    return f"Answer {n}: there are two files."


def turn_records(n: int, parent: str | None, session_id: str, cwd: str,
                 mode: str = "default") -> Iterator[dict[str, Any]]:
    """Turn `n`'s records, the first chained to `parent`; the last one's uuid is the next parent."""
    def fill(key: str, parent_uuid: str | None) -> dict[str, Any]:
        record = json.loads(json.dumps(TEMPLATE[key]))
        record["sessionId"] = session_id
        if "uuid" in record:
            record["uuid"], record["parentUuid"], record["cwd"] = str(uuid.uuid4()), parent_uuid, cwd
        return record

    yield fill("enqueue", None) | {"content": prompt_text(n)}
    yield fill("dequeue", None)
    prompt = fill("prompt", parent)
    prompt["message"]["content"], prompt["permissionMode"] = prompt_text(n), mode
    yield prompt
    call = fill("call", prompt["uuid"])
    tool_id = f"toolu_{n:08d}"
    call["message"]["id"] = f"msg_call_{n}"
    call["message"]["content"] = [{"type": "tool_use", "id": tool_id, "name": "Bash",
                                   "input": {"command": "ls", "description": f"List files ({n})"}}]
    yield call
    result = fill("result", call["uuid"])
    result["message"]["content"] = [{"type": "tool_result", "tool_use_id": tool_id,
                                     "content": f"a.txt\nb.txt ({n})", "is_error": False}]
    result["toolUseResult"] = {"stdout": f"a.txt\nb.txt ({n})", "stderr": "", "interrupted": False}
    result["sourceToolAssistantUUID"] = call["uuid"]
    yield result
    answer = fill("answer", result["uuid"])
    answer["message"]["id"] = f"msg_answer_{n}"
    answer["message"]["content"] = [{"type": "text", "text": answer_text(n)}]
    yield answer


def write_turns(handle: BinaryIO, first: int, count: int, parent: str | None, session_id: str, cwd: str,
                mode: str = "default") -> str | None:
    """Write turns `first`..`first+count-1`; the uuid the next turn chains to."""
    for n in range(first, first + count):
        for record in turn_records(n, parent, session_id, cwd, mode):
            handle.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")
            parent = record.get("uuid", parent)
    return parent


def project_dir(config_dir: Path, cwd: Path) -> Path:
    """Where the CLI keeps the transcripts of `cwd` (a path short enough not to be hashed)."""
    return config_dir / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))


def install(config_dir: Path, cwd: Path, turns: int, *, mode: str = "default",
            last_mode: str | None = None) -> str:
    """A transcript of `turns` turns for `cwd` in the CLI's store; its session id. `last_mode`: the
    permission mode of the last turn (the stored mode a load goes on in)."""
    session_id = str(uuid.uuid4())
    project = project_dir(config_dir, cwd)
    project.mkdir(parents=True, exist_ok=True)
    with (project / f"{session_id}.jsonl").open("wb") as handle:
        parent = write_turns(handle, 1, turns - 1, None, session_id, str(cwd), mode)
        write_turns(handle, turns, 1, parent, session_id, str(cwd), last_mode or mode)
    return session_id

"""`acp_agent_claude.store`: the session list answers as claude-agent-sdk's `list_sessions` does on
a clean store (a project, its git worktree, a path past the key's length, all projects), and
leaves out what is not a regular file, at once."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from claude_agent_sdk import list_sessions as sdk_list_sessions
from claude_agent_sdk import project_key_for_directory

from acp_agent.backends.files import UnsafeFile
from acp_agent_claude import store

pytestmark = pytest.mark.timeout(60)


def transcript(directory: Path, project: Path, prompt: str, mtime: int) -> str:
    session_id = str(uuid.uuid4())
    record = {"type": "user", "sessionId": session_id, "cwd": str(project), "uuid": str(uuid.uuid4()),
              "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": prompt}}
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{session_id}.jsonl"
    path.write_text(json.dumps(record) + "\n")
    os.utime(path, (mtime, mtime))
    return session_id


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


@pytest.fixture
def populated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    config = tmp_path / "config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    projects = config / "projects"
    repo, worktree, plain = tmp_path / "repo", tmp_path / "repo-wt", tmp_path / "plain"
    deep = tmp_path.joinpath(*(["d" * 50] * 5))
    for path in (repo, plain, deep):
        path.mkdir(parents=True)
    git("init", "-q", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "0", cwd=repo)
    git("worktree", "add", "-q", str(worktree), cwd=repo)
    mtime = 1_700_000_000
    for index, project in enumerate((repo, worktree, plain, deep, repo)):
        transcript(projects / project_key_for_directory(project), project, f"prompt {index}", mtime + index)
    return {"repo": repo, "worktree": worktree, "plain": plain, "deep": deep, "projects": projects}


def summary(infos: list[object]) -> list[tuple[object, ...]]:
    return [(i.session_id, i.summary, i.cwd, i.last_modified) for i in infos]  # type: ignore[attr-defined]


def test_the_list_is_the_sdks_on_a_clean_store(populated: dict[str, Path]) -> None:
    for directory in (None, *(str(populated[k]) for k in ("repo", "worktree", "plain", "deep"))):
        ours = store.list_sessions(directory, limit=100)
        assert summary(ours) == summary(sdk_list_sessions(directory=directory, limit=100)), directory
        assert ours
    assert len(store.list_sessions(None, limit=100)) == 5
    assert len(store.list_sessions(str(populated["repo"]), limit=100)) == 3  # and its worktree's
    everything = summary(store.list_sessions(None, limit=100))
    assert summary(store.list_sessions(None, limit=2, offset=1)) == everything[1:3]


def test_what_is_no_regular_file_is_left_out(populated: dict[str, Path]) -> None:
    directory = populated["projects"] / project_key_for_directory(populated["plain"])
    fifo = directory / f"{uuid.uuid4()}.jsonl"
    os.mkfifo(fifo)
    (directory / f"{uuid.uuid4()}.jsonl").symlink_to("/dev/zero")
    (directory / f"{uuid.uuid4()}.jsonl").mkdir()
    assert len(store.list_sessions(str(populated["plain"]), limit=100)) == 1
    assert len(store.list_sessions(None, limit=100)) == 5
    with pytest.raises(UnsafeFile):
        store.check_transcript(fifo.name[:-len(".jsonl")], str(populated["plain"]))
    real = store.list_sessions(str(populated["plain"]), limit=1)[0].session_id
    store.check_transcript(real, str(populated["plain"]))  # a regular one passes
    store.check_transcript(str(uuid.uuid4()), str(populated["plain"]))  # an absent one too


def test_a_transcript_is_found_where_the_sdk_finds_it_without_its_private_locator(
        populated: dict[str, Path]) -> None:
    """The load's streamed replay finds transcripts past the plain key (a hashed long path, a git
    worktree's) by the store's search, not through claude-agent-sdk's private resolver."""
    from claude_agent_sdk import get_session_info

    for name in ("deep", "worktree", "repo"):
        directory = populated["projects"] / project_key_for_directory(populated[name])
        for path in directory.glob("*.jsonl"):
            session_id = path.stem
            asked_from = populated["repo"] if name == "worktree" else populated[name]
            assert get_session_info(session_id, directory=str(asked_from)) is not None
            assert store.transcript_path(session_id, str(asked_from)) == str(path)
    assert store.transcript_path(str(uuid.uuid4()), str(populated["repo"])) is None
    assert store.transcript_path("../../etc/passwd", str(populated["repo"])) is None

"""AIR's session index: the archive store and the filtered, bounded listing (`acp_agent.sessions.index`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_agent.backends.contract import SessionListing
from acp_agent.sessions.index import ArchiveStore, ListOptions, SessionIndex, list_options
from acp_agent.wire.rpc import RpcError

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


def test_the_store_persists_atomically_and_survives_a_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "state" / "session-index" / "claude.json"
    store = ArchiveStore(str(path))
    store.set_archived("a", True)
    store.set_forked_from("b", "a")
    again = ArchiveStore(str(path))
    assert again.archived("a") and not again.archived("b") and again.forked_from("b") == "a"
    assert [p.name for p in path.parent.iterdir()] == ["claude.json"]  # no temporary left
    path.write_text("{not json")
    broken = ArchiveStore(str(path))
    assert not broken.archived("a")
    broken.set_archived("c", True)
    assert json.loads(path.read_text())["sessions"]["c"]["archived"] is True
    again.set_archived("c", False)
    assert not ArchiveStore(str(path)).archived("c")


def test_the_store_is_bounded(tmp_path: Path) -> None:
    store = ArchiveStore(str(tmp_path / "s.json"), max_entries=3)
    for name in "abcde":
        store.set_archived(name, True)
    assert len(json.loads((tmp_path / "s.json").read_text())["sessions"]) == 3


def test_list_options_defaults_clamps_and_refuses() -> None:
    assert list_options(None) == ListOptions(50, "unarchived", False)
    meta = {"jetbrains": {"air": {"list": {"limit": 1000, "archived": "all", "includeWorktrees": True}}}}
    assert list_options(meta) == ListOptions(200, "all", True)
    for bad in ({"limit": 0}, {"limit": "3"}, {"archived": "yes"}, {"includeWorktrees": 1}):
        with pytest.raises(RpcError) as refused:
            list_options({"jetbrains": {"air": {"list": bad}}})
        assert refused.value.code == -32602


async def test_the_listing_filters_archived_rows_and_pages_with_a_cursor(tmp_path: Path) -> None:
    rows = [{"sessionId": f"s{i}", "cwd": "/w", "updatedAt": "2026-01-01T00:00:00Z"} for i in range(5)]

    async def fetch(cwd: str | None, cursor: str | None) -> SessionListing:
        start = int(cursor or 0)
        return SessionListing(rows[start:start + 2], str(start + 2) if start + 2 < len(rows) else None)

    async def notify(changes: dict[str, Any]) -> None:
        return None

    store = ArchiveStore(str(tmp_path / "s.json"))
    store.set_archived("s1", True)
    index = SessionIndex(fetch=fetch, fetch_archived=None, store=store, notify=notify)
    first = await index.page("/w", None, ListOptions(limit=2), lambda x: x)
    assert [r["sessionId"] for r in first["sessions"]] == ["s0", "s2"]
    rest = await index.page("/w", first["nextCursor"], ListOptions(limit=2), lambda x: x)
    assert [r["sessionId"] for r in rest["sessions"]] == ["s3", "s4"] and "nextCursor" not in rest
    archived = await index.page("/w", None, ListOptions(archived="archived"), lambda x: x)
    assert [(r["sessionId"], r["_meta"]["jetbrains"]["air"]["archived"]) for r in archived["sessions"]] == [
        ("s1", True)]
    with pytest.raises(RpcError):
        await index.page("/w", first["nextCursor"], ListOptions(archived="all"), lambda x: x)
    got = await index.batch_get(["s4", "nope", "s1"], lambda x: x)
    assert [r["sessionId"] for r in got["sessions"]] == ["s4", "s1"]


def test_a_row_names_a_positive_cost_of_a_session_open_here_only() -> None:
    from acp_agent.sessions.index import OwnSession, row
    from acp_agent.wire import acp

    info = {"sessionId": "s", "cwd": "/w", "updatedAt": "2026-12-02T00:00:00.000Z"}

    def cost_of(own: OwnSession | None) -> Any:
        return row(info, False, None, own)["_meta"]["jetbrains"]["air"].get("cost")

    assert cost_of(OwnSession("/w", cost=acp.Cost(0.25))) == {"amount": 0.25, "currency": "USD"}
    assert cost_of(OwnSession("/w", cost=acp.Cost(0.0))) is None
    assert cost_of(OwnSession("/w", cost=acp.Cost(float("nan")))) is None
    assert cost_of(OwnSession("/w")) is None
    assert cost_of(None) is None

"""One turn's compaction as Claude Code reports it: the compacting status opens it, the API's
compaction block streams its summary, `compact_result` and the `compact_boundary` end it (the
boundary with its trigger, token counts and duration), the PostCompact hook hands the summary
over before the end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import define

from acp_agent.provider import Compaction, CompactionSummaryChunk, Event, is_count


@define
class CompactionFold:
    compaction_id: str | None = None
    summary: str | None = None
    """The summary of the compaction running (the PostCompact hook's, which comes before its end)."""

    def streamed(self, fallback_id: str, text: Any) -> list[Event]:
        """The API's compaction block streams the retained summary (`content` is null on the
        opening block): it opens the compaction if nothing did, and each piece is a summary chunk."""
        events: list[Event] = []
        if self.compaction_id is None:
            self.compaction_id = f"compact-{fallback_id}"
            events.append(Compaction(self.compaction_id, "in_progress"))
        if isinstance(text, str) and text:
            events.append(CompactionSummaryChunk(self.compaction_id, text))
        return events

    def status(self, data: Mapping[str, Any]) -> list[Event]:
        """`status: compacting` opens a compaction; `compact_result` ends it."""
        if data.get("status") == "compacting":
            self.compaction_id = f"compact-{data.get('uuid')}"
            return [Compaction(self.compaction_id, "in_progress")]
        result = data.get("compact_result")
        if result not in ("success", "failed"):
            return []
        compaction_id = self.compaction_id or f"compact-{data.get('uuid')}"
        if result == "failed":
            self.compaction_id = self.summary = None
            error = data.get("compact_error")
            return [Compaction(compaction_id, "failed", error=error if isinstance(error, str) and error else None)]
        self.compaction_id = compaction_id  # the boundary that follows adds its numbers
        summary, self.summary = self.summary, None
        return [Compaction(compaction_id, "completed", summary=summary)]

    def boundary(self, data: Mapping[str, Any]) -> Compaction:
        """The compacted history's boundary: the compaction, completed, with its facts."""
        compaction_id, self.compaction_id = self.compaction_id or f"compact-{data.get('uuid')}", None
        meta = data.get("compact_metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        trigger = meta.get("trigger")
        summary, self.summary = self.summary, None
        return Compaction(compaction_id, "completed", trigger=trigger if isinstance(trigger, str) and trigger else None,
                          tokens_before=_count(meta.get("pre_tokens")), tokens_after=_count(meta.get("post_tokens")),
                          summary=summary, duration_ms=_count(meta.get("duration_ms")))


def _count(value: Any) -> int | None:
    """A token count or duration as given, None for anything that is not a count."""
    return value if is_count(value) else None

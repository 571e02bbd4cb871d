"""The installed `acp_agent` entry points, found without importing `importlib.metadata`.

Importing `importlib.metadata` and scanning with it would delay every `initialize` answer
(bench/README.md has the figure), though a provider's entry point is a line of one small file.
This module reads the same files in the same order for the layout virtually every installation
has (`*.dist-info` directories in plain directories on `sys.path`) and hands anything else to
`importlib.metadata`: a zip or egg on `sys.path`, a legacy `.egg-info`, a finder of its own that
lists distributions, or a file it cannot parse. It must agree with
`importlib.metadata.entry_points(group=...)` on which entry points there are and in what order
(`tests/core/test_entry_points.py` checks).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import re
import sys
from collections.abc import Callable
from functools import reduce
from typing import Any

_ENTRY_POINT = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")
"""`importlib.metadata.EntryPoint.pattern`."""


class PluginEntryPoint:
    """One entry point: its name, how to load it, and the distribution that declares it."""

    def __init__(self, name: str, value: str, distribution: Callable[[], tuple[str, str]],
                 load: Callable[[], Any] | None = None) -> None:
        self.name = name
        self.value = value
        self._distribution = distribution
        self._load = load

    def load(self) -> Any:
        """Import the module and resolve the attribute path, as `EntryPoint.load` does."""
        if self._load is not None:
            return self._load()
        match = _ENTRY_POINT.match(self.value)
        if match is None:
            raise ValueError(f"malformed entry point value {self.value!r}")
        module = importlib.import_module(match.group("module"))
        return reduce(getattr, filter(None, (match.group("attr") or "").split(".")), module)

    def distribution(self) -> tuple[str, str]:
        """(name, version) from the distribution's metadata; "unknown" where it has none."""
        return self._distribution()


def entry_points(group: str) -> list[PluginEntryPoint]:
    """The group's entry points, in `importlib.metadata`'s order (first distribution of a name wins)."""
    found = scan(group)
    return found if found is not None else _from_importlib_metadata(group)


def scan(group: str) -> list[PluginEntryPoint] | None:
    """The fast path; None when the installation has something only `importlib.metadata` reads."""
    for finder in sys.meta_path:
        if finder is not importlib.machinery.PathFinder and hasattr(finder, "find_distributions"):
            return None
    seen: set[str] = set()
    found: list[PluginEntryPoint] = []
    for root in sys.path:
        directory = root or "."
        try:
            children = os.listdir(directory)
        except OSError:
            if os.path.isfile(directory):  # a zip or an egg file: read through zipfile
                return None
            continue
        infos: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                if not child.endswith(".dist-info"):  # legacy metadata, or a spelling only it reads
                    return None
                infos.setdefault(_normalize(low.rpartition(".")[0].partition("-")[0]), []).append(child)
            elif low == "egg-info" and os.path.basename(directory).lower().endswith(".egg"):
                return None
        for name, paths in infos.items():
            for path in paths:
                if name in seen:
                    continue
                seen.add(name)
                dist_info = os.path.join(directory, path)
                points = _entry_points_of(dist_info, group)
                if points is None:
                    return None
                found.extend(points)
    return found


def _normalize(name: str) -> str:
    """`importlib.metadata.Prepared.normalize`: PEP 503 plus dashes as underscores."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


def _entry_points_of(dist_info: str, group: str) -> list[PluginEntryPoint] | None:
    """The group's entry points in one `entry_points.txt`, parsed as `importlib.metadata` does
    (stripped lines, `#` comments, `[section]` headers, `name = value`); None if it cannot."""
    text = _read(os.path.join(dist_info, "entry_points.txt"))
    if not text:
        return []
    section = None
    points = []
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        name, equals, value = line.partition("=")
        if not equals:
            return None  # importlib.metadata raises here: let it
        if section == group:
            points.append(PluginEntryPoint(name.strip(), value.strip(), lambda: _distribution(dist_info)))
    return points


def _distribution(dist_info: str) -> tuple[str, str]:
    """Name and Version from the METADATA headers (as `email` reads them: the first of each)."""
    headers: dict[str, str] = {}
    for line in (_read(os.path.join(dist_info, "METADATA")) or "").splitlines():
        if not line.strip():
            break
        key, colon, value = line.partition(":")
        if colon and not line[0].isspace():
            headers.setdefault(key.strip().lower(), value.strip())
    return headers.get("name") or "unknown", headers.get("version") or "unknown"


def _from_importlib_metadata(group: str) -> list[PluginEntryPoint]:
    from importlib import metadata

    def distribution_of(entry_point: metadata.EntryPoint) -> Callable[[], tuple[str, str]]:
        def read() -> tuple[str, str]:
            dist = entry_point.dist
            if dist is None:
                return "unknown", "unknown"
            return dist.metadata["Name"] or "unknown", dist.version or "unknown"
        return read

    return [PluginEntryPoint(entry_point.name, entry_point.value, distribution_of(entry_point), entry_point.load)
            for entry_point in metadata.entry_points(group=group)]

"""`acp_agent.startup.entry_points` agrees with `importlib.metadata.entry_points(group=...)`: the same
entry points, in the same order, from the same distributions; anything unusual goes to it."""

from __future__ import annotations

import importlib.machinery
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from acp_agent.startup import entry_points


def reference(group: str) -> list[tuple[str, str, tuple[str, str]]]:
    found = []
    for point in metadata.entry_points(group=group):
        dist = point.dist
        assert dist is not None
        found.append((point.name, point.value, (dist.metadata["Name"] or "unknown", dist.version or "unknown")))
    return found


def scanned(group: str) -> list[tuple[str, str, tuple[str, str]]] | None:
    points = entry_points.scan(group)
    return None if points is None else [(point.name, point.value, point.distribution()) for point in points]


@pytest.fixture
def standard_finders(monkeypatch: pytest.MonkeyPatch) -> None:
    """The meta path of a fresh `acp-agent` process. Earlier tests may have imported keyring, which
    loads the `importlib_metadata` backport: it adds a finder of its own and takes the stdlib's
    `PathFinder.find_distributions` away (the scan then rightly defers to importlib.metadata)."""
    monkeypatch.setattr(sys, "meta_path", [finder for finder in sys.meta_path
                                           if type(finder).__module__ != "importlib_metadata"])
    if not hasattr(importlib.machinery.PathFinder, "find_distributions"):
        monkeypatch.setattr(importlib.machinery.PathFinder, "find_distributions",
                            staticmethod(metadata.MetadataPathFinder.find_distributions), raising=False)


@pytest.mark.parametrize("group", ["acp_agent", "console_scripts", "pytest11"])
def test_the_installed_entry_points_as_importlib_metadata_reads_them(group: str, standard_finders: None) -> None:
    found = scanned(group)
    assert found is not None, "this environment's layout should take the fast path"
    assert found == reference(group)
    if group == "acp_agent":
        assert ("scripted", "acp_agent_scripted", ("acp-agent-scripted-test", "0.0.1")) in found


def dist_info(root: Path, directory: str, metadata_text: str, entry_points_text: str | None) -> None:
    path = root / directory
    path.mkdir(parents=True)
    (path / "METADATA").write_text(metadata_text)
    if entry_points_text is not None:
        (path / "entry_points.txt").write_text(entry_points_text)


def test_order_duplicates_comments_and_metadata_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       standard_finders: None) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    dist_info(first, "Foo_Bar-1.0.dist-info", "Metadata-Version: 2.1\nName: Foo-Bar\nVersion: 1.0\n\nName: body\n",
              "# a comment\n[console_scripts]\nfoo = foo.cli:main\n\n  [acp_agent]  \n"
              "  alpha =  foo.plugin : hooks.inner [extra]\nbeta=foo.other\n[acp_agent.more]\ngamma = x\n")
    dist_info(first, "no_points-2.0.dist-info", "Name: no-points\nVersion: 2.0\n", None)
    dist_info(first, "unversioned-3.dist-info", "Name: unversioned\n", "[acp_agent]\ndelta = d\n")
    # The same distribution again, later on the path: importlib.metadata keeps the first only.
    dist_info(second, "foo.bar-9.9.dist-info", "Name: foo.bar\nVersion: 9.9\n", "[acp_agent]\nshadowed = s\n")
    dist_info(second, "zeta-1.dist-info", "Name: zeta\nVersion: 1\n", "[acp_agent]\nzeta = z.plugin:x\n")
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(second)])
    found = scanned("acp_agent")
    assert found is not None
    assert found == reference("acp_agent")
    by_name = {name: (value, distribution) for name, value, distribution in found}
    assert sorted(by_name) == ["alpha", "beta", "delta", "zeta"]  # "shadowed" is not: first foo-bar wins
    assert by_name["alpha"] == ("foo.plugin : hooks.inner [extra]", ("Foo-Bar", "1.0"))
    assert by_name["delta"][1] == ("unversioned", "unknown")


def test_load_resolves_the_attribute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          standard_finders: None) -> None:
    dist_info(tmp_path, "demo-1.dist-info", "Name: demo\nVersion: 1\n",
              "[acp_agent]\nmodule = json\nattribute = json.decoder:JSONDecoder.decode\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    points = {point.name: point for point in entry_points.entry_points("acp_agent")}
    import json
    import json.decoder

    assert points["module"].load() is json
    assert points["attribute"].load() is json.decoder.JSONDecoder.decode


class ListingFinder:
    """A meta-path finder with distributions of its own (as the importlib_metadata backport has)."""

    def find_spec(self, *args: object) -> None:
        return None

    def find_distributions(self, *args: object) -> list[object]:
        return []


@pytest.mark.parametrize("layout", ["egg-info", "zip", "unparsable", "finder"])
def test_unusual_layouts_are_read_by_importlib_metadata(layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        standard_finders: None) -> None:
    dist_info(tmp_path / "plain", "plain-1.dist-info", "Name: plain\nVersion: 1\n", "[acp_agent]\nplain = p\n")
    path = [str(tmp_path / "plain")]
    if layout == "egg-info":
        legacy = tmp_path / "legacy" / "legacy-1.egg-info"
        legacy.mkdir(parents=True)
        (legacy / "PKG-INFO").write_text("Name: legacy\nVersion: 1\n")
        (legacy / "entry_points.txt").write_text("[acp_agent]\nlegacy = l\n")
        path.append(str(tmp_path / "legacy"))
    elif layout == "zip":
        archive = tmp_path / "zipped.zip"
        with zipfile.ZipFile(archive, "w") as bundle:
            bundle.writestr("zipped-1.dist-info/METADATA", "Name: zipped\nVersion: 1\n")
            bundle.writestr("zipped-1.dist-info/entry_points.txt", "[acp_agent]\nzipped = z\n")
        path.append(str(archive))
    elif layout == "finder":
        monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, ListingFinder()])
    else:
        (tmp_path / "plain" / "plain-1.dist-info" / "entry_points.txt").write_text("[acp_agent]\nno equals sign\n")
    monkeypatch.setattr(sys, "path", path)
    assert entry_points.scan("acp_agent") is None
    if layout == "unparsable":
        with pytest.raises(TypeError):  # importlib.metadata's own error, unchanged
            entry_points.entry_points("acp_agent")
        return
    found = [(point.name, point.value, point.distribution()) for point in entry_points.entry_points("acp_agent")]
    assert found == reference("acp_agent")
    assert len(found) == (1 if layout == "finder" else 2)

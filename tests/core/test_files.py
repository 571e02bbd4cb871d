"""`acp_agent.backends.files`: a file an untrusted project or store holds is read only when it is a regular
file within the bound; a FIFO, a device or a link to one is refused at once, never waited on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_agent.backends.files import UnsafeFile, read_regular_file, regular_file_stat

pytestmark = pytest.mark.timeout(10)  # a blocking open would hang: the timeout fails it


def test_a_regular_file_and_a_link_to_one_are_read(tmp_path: Path) -> None:
    real = tmp_path / "settings.json"
    real.write_bytes(b'{"model": "m"}')
    link = tmp_path / "linked.json"
    link.symlink_to(real)
    assert read_regular_file(str(real)) == b'{"model": "m"}'
    assert read_regular_file(str(link)) == b'{"model": "m"}'
    assert regular_file_stat(str(link)).st_size == len(b'{"model": "m"}')


def test_an_absent_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(str(tmp_path / "absent.json"))
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError):
        read_regular_file(str(dangling))


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    os.mkfifo(path)
    link = tmp_path / "to-fifo.json"
    link.symlink_to(path)
    for candidate in (path, link):
        with pytest.raises(UnsafeFile, match="not a regular file") as refused:
            read_regular_file(str(candidate))
        assert str(candidate) in str(refused.value)
        with pytest.raises(UnsafeFile):
            regular_file_stat(str(candidate))


@pytest.mark.parametrize("target", ["/dev/zero", "/proc/self/fd/0", "/dev/null"])
def test_a_link_to_a_device_or_stdin_is_refused(tmp_path: Path, target: str) -> None:
    read, write = os.pipe()  # this test's stdin as a pipe: reading it would wait for good
    saved = os.dup(0)
    os.dup2(read, 0)
    try:
        link = tmp_path / "settings.json"
        link.symlink_to(target)
        with pytest.raises(UnsafeFile, match="not a regular file"):
            read_regular_file(str(link))
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read, write):
            os.close(fd)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsafeFile):
        read_regular_file(str(tmp_path))


def test_a_file_past_the_bound_is_refused_and_one_at_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 101)
    with pytest.raises(UnsafeFile, match="larger than 100 bytes"):
        read_regular_file(str(path), limit=100)
    assert read_regular_file(str(path), limit=101) == b"x" * 101


def test_a_fifo_swapped_in_after_the_check_still_opens_at_once(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The race the open's O_NONBLOCK and fstat cover: the stat saw a regular file, the open
    meets a FIFO (no writer ever comes) and returns at once, refused."""
    path = tmp_path / "settings.json"
    os.mkfifo(path)
    regular = tmp_path / "regular.json"
    regular.write_bytes(b"{}")
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: real_stat(regular if str(p) == str(path) else p, *a, **k))
    with pytest.raises(UnsafeFile, match="not a regular file"):
        read_regular_file(str(path))

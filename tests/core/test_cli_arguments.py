"""The command line an editor runs (`acp-agent --provider NAME` and the serving options) is parsed
without building the parsers of the commands (`auth`, `login`, ...): that building is most of
argparse's time on the way to the backend's early spawn. Every command line still means what the
whole parser says it means, and anything else is left to the whole parser."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from acp_agent import cli

pytestmark = pytest.mark.timeout(60)

SERVING = [
    [],
    ["--provider", "codex"],
    ["--provider=codex"],
    ["--prov", "codex"],
    ["--provider", "codex", "--log-level", "DEBUG"],
    ["--log-file", "/tmp/agent.log", "--provider", "claude"],
    ["--max-line-bytes", "100", "--provider", "muse"],
    ["--m", "5", "--provider", "a", "--provider", "b"],
    ["--log-f", "x.log", "--log-level=info"],
]
"""Command lines that only serve a provider."""

OTHERS = [
    ["--max-line-bytes", "x"], ["--log-level", "bogus"], ["--l", "x"], ["--provider"],
    ["providers"], ["--provider", "c", "auth", "status"], ["auth", "set", "--provider", "c", "--stdin"],
    ["--cli", "a", "b"], ["--provider", "c", "--cli", "login"], ["--help"], ["-h"], ["--version"],
    ["--stdin"], ["--provider", "c", "--", "x"], ["--provider", "--cli"], ["--s"], ["-x"],
    ["login", "--help"], ["editor-config", "--provider", "c"], ["--provider", "c", "extra"],
]
"""Command lines that do something else, or are mistakes."""

MEANT = ("provider", "log_file", "log_level", "max_line_bytes", "command", "cli")


def outcome(parse: Callable[[list[str]], Any], argv: Sequence[str]) -> tuple[object, str, str]:
    """What parsing `argv` gives: the options the command reads (or the exit code), and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parse(list(argv))
        result: object = sorted((name, value) for name, value in vars(args).items() if name in MEANT)
    except SystemExit as exc:
        result = ("exit", exc.code)
    return result, out.getvalue(), err.getvalue()


def whole(argv: list[str]) -> Any:
    return cli._parser().parse_args(argv)


@pytest.mark.parametrize("argv", SERVING, ids=" ".join)
def test_a_serving_command_line_is_parsed_without_the_commands_parsers(
        argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    expected = outcome(whole, argv)

    def no_whole_parser() -> None:
        raise AssertionError("the whole parser was built for a serving command line")

    monkeypatch.setattr(cli, "_parser", no_whole_parser)
    args = cli._arguments(argv)
    assert args.command is None and args.cli is None
    monkeypatch.undo()
    assert outcome(cli._arguments, argv) == expected


@pytest.mark.parametrize("argv", OTHERS, ids=" ".join)
def test_any_other_command_line_means_what_the_whole_parser_says(argv: list[str]) -> None:
    assert outcome(cli._arguments, argv) == outcome(whole, argv)


def test_the_serving_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_AGENT_PROVIDER", "muse")
    monkeypatch.setenv("ACP_AGENT_LOG_LEVEL", "debug")
    monkeypatch.setenv("ACP_AGENT_LOG_FILE", "/tmp/from-env.log")
    args = cli._arguments([])
    assert (args.provider, args.log_level, args.log_file) == ("muse", "debug", "/tmp/from-env.log")
    assert outcome(cli._arguments, []) == outcome(whole, [])

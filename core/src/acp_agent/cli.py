"""The `acp-agent` command: run the agent for one provider, list providers, manage the keyring entry.

Stdout belongs to the protocol: everything meant for a person goes to stderr (or a log file).
"""

from __future__ import annotations

import os
import sys

from acp_agent import __version__

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: nothing is imported before the backend's spawn
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, NoReturn

    from acp_agent.backends.plugins import ProviderRegistry
    from acp_agent.startup.prestart import Prestarted

EDITOR_HINT = """\
acp-agent speaks the Agent Client Protocol on stdin/stdout; an editor starts it, not a person.
Point your editor's agent settings at this command, for example in Zed's settings.json:

  "agent_servers": {entry}

Waiting for JSON-RPC messages on stdin (Ctrl-D to quit).
"""


def editor_entry(title: str | None, provider: str | None) -> dict[str, dict[str, object]]:
    """Zed's `agent_servers` entry that starts this agent (for one provider, or None: every one):
    the command by its absolute path (an editor started from a desktop does not see the virtual
    environment this runs from)."""
    from acp_agent.terminal_auth import agent_command

    program, *rest = agent_command()
    if provider is None:
        return {"acp-agent": {"command": program, "args": rest}}
    return {f"{title} (acp-agent)": {"command": program, "args": [*rest, "--provider", provider]}}


def _setup_logging(log_file: str | None, level: str, redact: object) -> None:
    import logging

    class RedactingFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return redact(super().format(record))  # type: ignore[operator,no-any-return]

    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper(), logging.WARNING))


LOG_LEVELS = ("debug", "info", "warning", "error")
ENV_DEFAULTS = {"--provider": ("ACP_AGENT_PROVIDER", None), "--log-file": ("ACP_AGENT_LOG_FILE", None),
                "--log-level": ("ACP_AGENT_LOG_LEVEL", "warning"),
                "--default-provider": ("ACP_AGENT_DEFAULT_PROVIDER", None)}
"""Where a serving option's default comes from: a variable of the environment, else a value."""


def _default(option: str, environ: Mapping[str, str]) -> str | None:
    variable, fallback = ENV_DEFAULTS[option]
    return environ.get(variable, fallback)


def _serving_options(parser: argparse.ArgumentParser) -> None:
    """The options of serving a provider on stdin/stdout (what an editor runs)."""
    parser.add_argument("--provider", default=_default("--provider", os.environ),
                        help="the provider to run (see `acp-agent providers`; env ACP_AGENT_PROVIDER); "
                             "without it, or `all`: every installed provider whose backend can run")
    parser.add_argument("--default-provider", default=_default("--default-provider", os.environ),
                        help="with every provider: the one a new session starts with (env "
                             "ACP_AGENT_DEFAULT_PROVIDER; default: the first with credentials)")
    parser.add_argument("--log-file", default=_default("--log-file", os.environ),
                        help="write logs here instead of stderr (env ACP_AGENT_LOG_FILE)")
    parser.add_argument("--log-level", default=_default("--log-level", os.environ),
                        choices=LOG_LEVELS, type=str.lower,
                        help="log level (env ACP_AGENT_LOG_LEVEL, default warning)")
    parser.add_argument("--max-line-bytes", type=int, default=None,
                        help="largest accepted input line in bytes (default 50 MiB)")


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    """The command line, parsed. One that only serves a provider (the serving options and nothing
    else) is read by a parser of those options alone: building every command's parser is most of
    argparse's time on the way to the backend's early spawn. Anything else (a command, `--cli`,
    `--help`, `--version`, a mistake) is read by the whole parser, which gives its usage and errors."""
    import argparse

    class NotServing(Exception):
        pass

    class ServingParser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise NotServing(message)

    serving = ServingParser(prog="acp-agent", add_help=False)
    _serving_options(serving)
    serving.set_defaults(command=None, cli=None, stdin=False)
    try:
        args, rest = serving.parse_known_args(argv)
    except NotServing:
        return _parser().parse_args(argv)
    return _parser().parse_args(argv) if rest else args


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="acp-agent",
        description="An Agent Client Protocol agent hosting coding agents from several vendors. "
                    "`acp-agent --provider NAME` with no command serves ACP (JSON-RPC 2.0, one JSON "
                    "object per line) on stdin/stdout until stdin closes: that is how an editor starts "
                    "it (`acp-agent editor-config --provider NAME` prints the editor entry). "
                    "`acp-agent` alone serves every installed provider in one agent (`editor-config` "
                    "alone prints that entry).",
        epilog="Run `acp-agent COMMAND --help` for a command's own help.",
    )
    _serving_options(parser)
    parser.add_argument("--cli", nargs=argparse.REMAINDER, default=None, metavar="ARGS",
                        help="run the provider's own CLI with the remaining arguments and the agent's "
                             "environment (e.g. `--provider claude --cli auth login`)")
    parser.add_argument("--stdin", action="store_true", help=argparse.SUPPRESS)  # `auth set --stdin`
    parser.add_argument("--version", action="version", version=f"acp-agent {__version__}")
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    commands.add_parser("providers", help="list the installed providers and whether their backends run",
                        description="List the installed providers, whether each one's backend can run "
                                    "here, hook plugins and plugins that failed to load.")
    auth = commands.add_parser("auth", help="manage a provider's API key in the keyring",
                               description="Manage the API key acp-agent keeps in the system keyring "
                                           "(service acp-agent, user = the provider name) and hands to "
                                           "the backend through its environment.")
    auth.set_defaults(auth_parser=auth)
    actions = auth.add_subparsers(dest="auth_action", title="actions", metavar="ACTION")
    for action, summary in (("set", "store a key (prompted without echo, or one line with --stdin)"),
                            ("status", "say whether credentials are configured and where they come from"),
                            ("clear", "delete the stored key")):
        sub = actions.add_parser(action, help=summary, description=summary[0].upper() + summary[1:] + ".")
        _provider_option(sub)
        if action == "set":
            sub.add_argument("--stdin", action="store_true", default=argparse.SUPPRESS,
                             help="read the key from one line of standard input")
    login = commands.add_parser("login", help="sign in with the provider's own CLI", add_help=False,
                                description="Run the provider CLI's own sign-in in this terminal (Claude: "
                                            "`claude auth login`, Codex: `codex login`, Muse: `muse login`). "
                                            "Over SSH or with NO_BROWSER set, the sign-in that needs no "
                                            "local browser.")
    login.add_argument("-h", "--help", action=_login_help_action(), help="show this help message and exit")
    _provider_option(login)
    login.add_argument("--method", help="the sign-in to run, by its auth method id (default: the first "
                                        "one offered on this machine; listed below)")
    editor = commands.add_parser("editor-config", help="print the editor entry that starts this agent",
                                 description="Print the `agent_servers` entry for Zed's settings.json "
                                             "that starts this acp-agent by its absolute path (an editor "
                                             "does not see a virtual environment's PATH), for one "
                                             "provider or, without --provider, for every one.")
    _provider_option(editor)
    return parser


def _login_help_action() -> type[argparse.Action]:
    """`login --help`: the usual help, then each installed provider's sign-in method ids (read
    from the plugins only when that help is asked for)."""
    import argparse

    class LoginHelp(argparse.Action):
        def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
            super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                     values: object, option_string: str | None = None) -> None:
            parser.print_help()
            print(f"\n{_login_methods_text(_registry())}")
            parser.exit()

    return LoginHelp


def _login_methods_text(registry: ProviderRegistry) -> str:
    lines = ["sign-in methods (--method ID):"]
    for name in registry.names():
        spec = registry.providers[name].spec
        logins = spec.credentials.terminal_logins
        if not logins:
            lines.append(f"  {name}: none of its own; store a key with `acp-agent auth set --provider {name}`")
        for login in logins:
            where = {"local": " (needs a browser on this machine)",
                     "remote": " (no local browser needed: SSH, NO_BROWSER)"}.get(login.where, "")
            lines.append(f"  {name}: {login.id}  {login.name}{where}")
    return "\n".join(lines)


def _provider_option(parser: argparse.ArgumentParser) -> None:
    import argparse

    # SUPPRESS: when absent here, the value given before the command (or ACP_AGENT_PROVIDER) stays.
    parser.add_argument("--provider", default=argparse.SUPPRESS, help="the provider (see `acp-agent providers`)")


def command() -> NoReturn:
    """The `acp-agent` command (and `python -m acp_agent.cli`): `main`, then out without the
    interpreter's teardown. When `main` returns, every child has been stopped and every frame
    written; freeing each module and object one by one would only keep an editor that closed our
    stdin waiting for the exit. What the exit handlers would still do is done here: logging is
    shut down (its handlers flushed, the log file closed) and the standard streams are flushed. A
    failure or `SystemExit` (argparse errors, `--help`) leaves the usual way."""
    code = main()
    if "logging" in sys.modules:  # every command that logs has imported it
        import logging

        logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or its reader is gone: nothing more can be said
            pass
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    from acp_agent.startup.collector import defer_collection

    settle = defer_collection()  # until the imports are done (`_serve`)
    from acp_agent.startup.prestart import Prestarted

    prestarted = Prestarted()
    try:
        args = _arguments(sys.argv[1:] if argv is None else list(argv))
        if args.command:
            return _subcommand(args)
        if args.cli is None and args.provider and args.provider != ALL:
            # Serving one provider: its backend (if its spec declared a prestart the last time it
            # was loaded) boots while we import.
            from acp_agent.startup.declared import recorded

            prestarted.start(args.provider, os.environ, recorded(args.provider, os.environ))
        return _run(args, prestarted, settle)
    finally:
        settle()
        prestarted.stop_unclaimed()


def _registry() -> ProviderRegistry:
    from acp_agent.backends.plugins import discover

    return discover()


def _unknown_provider(name: str | None, registry: ProviderRegistry) -> int:
    installed = ", ".join(registry.names()) or "none"
    if name:
        print(f"acp-agent: unknown provider {name!r}. Installed providers: {installed}.", file=sys.stderr)
    else:
        print(f"acp-agent: choose a provider with --provider NAME. Installed providers: {installed}.",
              file=sys.stderr)
    for broken in registry.broken:
        print(f"  broken plugin {broken.plugin} ({broken.distribution} {broken.version}): {broken.reason}",
              file=sys.stderr)
    return 2


ALL = "all"
"""`--provider all`: every installed provider (as without `--provider`)."""


def _run(args: argparse.Namespace, prestarted: Prestarted, settle: Callable[[], None]) -> int:
    from acp_agent.failures.redaction import Redactor

    redactor = Redactor.from_environment()
    _setup_logging(args.log_file, args.log_level, redactor)
    registry = _registry()
    if args.cli is None and args.provider in (None, ALL):
        from acp_agent.federation.serving import every_provider_front

        front = every_provider_front(registry, args, redactor)
        if isinstance(front, int):
            return front
        if sys.stdin.isatty():
            import json

            print(EDITOR_HINT.format(entry=json.dumps(editor_entry(None, None))), file=sys.stderr)
        import anyio

        anyio.run(serve_stdio, front, args.max_line_bytes, settle, b"")
        return 0
    loaded = registry.get(args.provider) if args.provider else None
    if loaded is None:
        return _unknown_provider(args.provider, registry)
    for name in registry.secret_env_vars:
        redactor.add(os.environ.get(name))
    from acp_agent.backends.phases import DeadlineConfigError, Deadlines

    try:
        deadlines = Deadlines.from_environment(os.environ, loaded.spec.deadline_aliases)
    except DeadlineConfigError as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return 2
    if args.cli is not None:
        return _passthrough(loaded.spec, args.cli)
    prestarted.declared(loaded.spec.name, loaded.spec.prestart, os.environ)
    if sys.stdin.isatty():
        import json

        entry = json.dumps(editor_entry(loaded.spec.title, loaded.spec.name))
        print(EDITOR_HINT.format(entry=entry), file=sys.stderr)
    import anyio

    from acp_agent.agent import Agent, AgentSettings
    from acp_agent.backends.phases import PhaseClock
    from acp_agent.failures.auth_status import KeyringStore
    from acp_agent.terminal_auth import agent_command

    settings = AgentSettings(
        provider=loaded.spec,
        environ=dict(os.environ),
        clock=PhaseClock(deadlines, loaded.spec.title),
        redact=redactor,
        keyring=KeyringStore(),
        agent_version=loaded.version,
        hooks=registry.hooks,
        agent_command=agent_command(),
        prestarted=prestarted,
    )
    agent = Agent(settings)
    from acp_agent.startup.early import answer_waiting_initialize
    from acp_agent.wire.rpc import DEFAULT_MAX_LINE_BYTES

    preread = answer_waiting_initialize(agent, sys.stdin.fileno(), sys.stdout.fileno(),
                                        args.max_line_bytes or DEFAULT_MAX_LINE_BYTES)
    anyio.run(serve_stdio, agent, args.max_line_bytes, settle, preread)
    return 0


async def serve_stdio(agent: Any, max_line_bytes: int | None, settle: Callable[[], None],
                      preread: bytes) -> None:
    """Serve stdin/stdout with `agent` (an `Agent`, or the front of every provider) until EOF;
    the first SIGTERM, SIGINT or SIGHUP stops it in order, a second (or the stop budget) at once."""
    import anyio

    from acp_agent.wire.stdio import stdio_streams

    receive, send = stdio_streams(preread=preread)
    settle()  # everything start-up imports is loaded: the collector runs again, without those objects
    async with anyio.create_task_group() as task_group:

        async def watch_signals() -> None:
            import logging
            import signal

            log = logging.getLogger("acp_agent")
            from acp_agent.agent import STOP_BUDGET_S

            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                async for signum in signals:
                    log.info("received signal %d, shutting down", signum)
                    agent.stop()  # running prompts are answered, then `serve` returns as at EOF
                    break
                with anyio.move_on_after(STOP_BUDGET_S):
                    async for signum in signals:  # a second signal: at once
                        log.info("received signal %d again, exiting now", signum)
                        break
                task_group.cancel_scope.cancel()

        task_group.start_soon(watch_signals)
        await agent.serve(receive, send, max_line_bytes=max_line_bytes)
        task_group.cancel_scope.cancel()


def _passthrough(spec: object, argv: list[str]) -> int:
    """Run the provider's own CLI in this terminal, with the environment its backend would get."""
    from acp_agent.backends.contract import ProviderSpec

    assert isinstance(spec, ProviderSpec)
    find = spec.credentials.vendor_cli
    program = find(os.environ) if find is not None else None
    if not program:
        detail = spec.check_backend().detail if find is not None else "it has no command of its own"
        print(f"acp-agent: cannot pass through to the {spec.title} CLI: {detail}", file=sys.stderr)
        return 2
    environ = _vendor_environ(spec)
    import shutil

    # A path is run as it is (what keeps it from running is execve's to say).
    resolved = program if os.sep in program else shutil.which(program, path=environ.get("PATH", os.defpath))
    if resolved is None:
        print(f"acp-agent: cannot pass through to the {spec.title} CLI: no `{program}` on PATH", file=sys.stderr)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        # Become the CLI: it owns the terminal and its signals (Ctrl-C), and its exit status is ours.
        try:
            os.execve(resolved, [resolved, *argv], environ)
        except OSError as exc:
            print(f"acp-agent: cannot run the {spec.title} CLI at {resolved}: {exc.strerror}", file=sys.stderr)
            return 126
    import subprocess

    code = subprocess.call([resolved, *argv], env=environ)
    return code if code >= 0 else 128 - code


def _vendor_environ(spec: object) -> dict[str, str]:
    """This environment plus a keyring key, exactly as the agent hands it to the backend."""
    from acp_agent.backends.contract import ProviderSpec
    from acp_agent.failures.auth_status import KeyringStore, resolve_credentials, with_keyring_credential

    assert isinstance(spec, ProviderSpec)
    state = resolve_credentials(spec.name, spec.credentials, os.environ, KeyringStore())
    return with_keyring_credential(os.environ, state, spec.credentials)


def _subcommand(args: argparse.Namespace) -> int:
    command = args.command
    if command == "providers":
        return _providers()
    if command == "login":
        return _login(args.provider, args.method)
    if command == "editor-config":
        return _editor_config(args.provider)
    if args.auth_action is None:  # `acp-agent auth` alone: its usage, not an error about a command
        args.auth_parser.print_help(sys.stderr)
        return 2
    return _auth(args.auth_action, args.provider, read_stdin=args.stdin)


def _editor_config(provider: str | None) -> int:
    import json

    registry = _registry()
    if provider in (None, ALL):  # one entry for every installed provider
        entry = editor_entry(None, None)
    else:
        loaded = registry.get(provider)
        if loaded is None:
            return _unknown_provider(provider, registry)
        entry = editor_entry(loaded.spec.title, loaded.spec.name)
    print(json.dumps({"agent_servers": entry}, indent=2))
    return 0


def _login(provider: str | None, method: str | None) -> int:
    from acp_agent.terminal_auth import vendor_logins

    registry = _registry()
    loaded = registry.get(provider) if provider else None
    if loaded is None:
        return _unknown_provider(provider, registry)
    spec = loaded.spec
    offered = vendor_logins(spec, os.environ)
    if not offered:
        print(f"acp-agent: {spec.title} has no sign-in of its own; store a key with "
              f"`acp-agent auth set --provider {spec.name}`.", file=sys.stderr)
        return 2
    chosen = offered[0] if method is None else next((login for login in offered if login.id == method), None)
    if chosen is None:
        ids = ", ".join(login.id for login in offered)
        print(f"acp-agent: unknown sign-in {method!r} for {spec.title} on this machine; choose one of: {ids}.",
              file=sys.stderr)
        return 2
    return _passthrough(spec, list(chosen.args))


def _providers() -> int:
    registry = _registry()
    if not registry.providers:
        print("No providers installed. Install one, e.g. `pip install acp-agent-claude`.")
    for name in registry.names():
        loaded = registry.providers[name]
        try:
            status = loaded.spec.check_backend()
            usable = "usable" if status.usable else "NOT usable"
            detail = status.detail
        except Exception as exc:
            usable, detail = "NOT usable", f"backend check failed: {type(exc).__name__}"
        print(f"{name:10} {loaded.distribution} {loaded.version}  backend {usable}{': ' + detail if detail else ''}")
    for plugin in registry.hook_plugins:  # e.g. a company's failure rules for every provider
        hooks = ", ".join(plugin.hooks)
        print(f"hooks      {plugin.plugin} ({plugin.distribution} {plugin.version}): {hooks}")
    for broken in registry.broken:
        print(f"broken     {broken.plugin} ({broken.distribution} {broken.version}): {broken.reason}")
    return 0


def _auth(action: str, provider: str | None, *, read_stdin: bool) -> int:
    from acp_agent.failures.auth_status import KeyringStore, KeyringUnavailable, resolve_credentials

    registry = _registry()
    loaded = registry.get(provider) if provider else None
    if loaded is None:
        return _unknown_provider(provider, registry)
    store = KeyringStore()
    name = loaded.spec.name
    try:
        if action == "set":
            if read_stdin:
                secret = sys.stdin.readline().strip()
            else:
                import getpass  # only `auth set` asks a person for anything

                secret = getpass.getpass(f"{loaded.spec.title} API key (input hidden): ").strip()
            if not secret:
                print("acp-agent: no key given; nothing stored.", file=sys.stderr)
                return 2
            store.set(name, secret)
            kept = store.get(name)
            if kept != secret:  # some backends (keyring's null backend) accept a key and forget it
                found = "nothing" if kept is None else "a different value"
                print(f"acp-agent: the keyring ({store.backend_name()}) did not keep the key: reading it "
                      f"back gave {found}, so nothing is stored. {_env_hint(loaded.spec)}", file=sys.stderr)
                return 1
            print(f"Stored the {loaded.spec.title} key in the keyring (service acp-agent, user {name}).")
        elif action == "clear":
            deleted = store.delete(name)
            print("Deleted the keyring entry." if deleted else "There was no keyring entry to delete.")
        else:
            store.get(name)  # says plainly when no keyring backend works, before resolving
            state = resolve_credentials(name, loaded.spec.credentials, os.environ, store)
            print(f"provider {name}: configured={str(state.configured).lower()} source={state.source}")
    except KeyringUnavailable as exc:
        if action == "status":
            state = resolve_credentials(name, loaded.spec.credentials, os.environ, None)
            print(f"provider {name}: configured={str(state.configured).lower()} source={state.source} "
                  f"(keyring unavailable: {exc})")
            return 0
        print(f"acp-agent: {exc}. {_env_hint(loaded.spec)}", file=sys.stderr)
        return 1
    return 0


def _env_hint(spec: object) -> str:
    from acp_agent.backends.contract import ProviderSpec

    assert isinstance(spec, ProviderSpec)
    variables = " or ".join(spec.credentials.env_vars) or "the provider variables"
    return f"Set {variables} in the environment instead."


if __name__ == "__main__":
    command()

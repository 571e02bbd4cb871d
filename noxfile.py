"""Sessions: tests (everything), plugin_alone(name), lint, typecheck, bench, build.

`nox` with no arguments runs the default sessions: tests, lint and typecheck.
"""

from __future__ import annotations

import glob
import os
import pathlib
import zipfile

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.default_venv_backend = "virtualenv"  # needs no ensurepip (Debian: python3-venv)
nox.options.reuse_existing_virtualenvs = True

ROOT = pathlib.Path(__file__).parent
PYPROJECT = nox.project.load_toml("pyproject.toml")
PLUGINS = sorted(path.parent.name for path in ROOT.glob("plugins/*/pyproject.toml"))
TEST_PROVIDER = "tests/scripted_provider"
EXAMPLE_PROVIDER = "tests/example_provider"
"""The plugin guide's example (docs/plugin-guide.md), installed so its conformance tests run."""
TEST_HOOKS_PLUGIN = "tests/corp_rules"  # implements only the failure hooks, for every provider
CONSTRAINTS = ("-c", "tests/constraints.txt")


def install_group(session: nox.Session, group: str) -> None:
    session.install(*CONSTRAINTS, *nox.project.dependency_groups(PYPROJECT, group))


def editable(*paths: str) -> list[str]:
    return [*CONSTRAINTS, *[arg for path in paths for arg in ("-e", path)]]


@nox.session
def tests(session: nox.Session) -> None:
    """Core, every plugin and the test-only plugins installed editable; every test."""
    install_group(session, "test")
    session.install(*editable("core", TEST_PROVIDER, EXAMPLE_PROVIDER, TEST_HOOKS_PLUGIN,
                              *[f"plugins/{name}" for name in PLUGINS]))
    session.run("pytest", *session.posargs)


@nox.session
@nox.parametrize("name", PLUGINS)
def plugin_alone(session: nox.Session, name: str) -> None:
    """The core and one plugin, nothing else: that plugin's tests pass on their own."""
    install_group(session, "test")
    session.install(*editable("core", f"plugins/{name}"))
    session.run("pytest", f"tests/{name}", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    install_group(session, "lint")
    session.run("ruff", "check", "core", "plugins", "tests", "bench", "tools", "noxfile.py")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the core, then on each plugin's package and the guide's example."""
    install_group(session, "typecheck")
    session.install(*editable("core", EXAMPLE_PROVIDER, *[f"plugins/{name}" for name in PLUGINS]))
    session.run("mypy")
    for name in PLUGINS:
        session.run("mypy", "--strict", f"plugins/{name}/src")
    session.run("mypy", "--strict", "-p", "acp_agent_example")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: they report numbers, they assert nothing."""
    install_group(session, "bench")
    # Installed as users get them (built wheels, byte-compiled), not editable: an editable install
    # puts each source tree on sys.path, which costs start-up time the benchmarks would report.
    session.install(*CONSTRAINTS, "./core", f"./{TEST_PROVIDER}", *[f"./plugins/{name}" for name in PLUGINS])
    for script in sorted(glob.glob("bench/bench_*.py")):
        session.run("python", script, *session.posargs)


@nox.session
def build(session: nox.Session) -> None:
    """Wheels of every distribution; each plugin wheel must carry its `acp_agent` entry point."""
    session.install("build")
    out = ROOT / "dist"
    for project in ["core", *[f"plugins/{name}" for name in PLUGINS]]:
        session.run("python", "-m", "build", "--wheel", "--outdir", str(out), project)
    for name in PLUGINS:
        wheels = glob.glob(str(out / f"acp_agent_{name}-*.whl"))
        if not wheels:
            session.error(f"no wheel for plugin {name}")
        with zipfile.ZipFile(sorted(wheels)[-1]) as wheel:
            entry_points = [n for n in wheel.namelist() if n.endswith("entry_points.txt")]
            text = wheel.read(entry_points[0]).decode() if entry_points else ""
        if "[acp_agent]" not in text or f"{name} = acp_agent_{name}" not in text:
            session.error(f"plugin {name}'s wheel has no acp_agent entry point")
    session.log(f"wheels in {os.path.relpath(out)}")

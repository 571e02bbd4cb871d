"""The README's test command runs on a fresh Debian or Ubuntu machine (issue 25, item 13): with
the distribution's own python3 (which refuses `pip install` and may lack ensurepip), whatever its
version is from 3.11 on, and `.ci/run` runs it as written."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_test_command() -> str:
    text = (ROOT / "README.md").read_text()
    after = text.split("Run every test, the linter and the type checker", 1)[1]
    block = re.search(r"```sh\n(?P<command>.+?)\n```", after)
    assert block, "README.md shows no test command"
    return block["command"].strip()


def test_the_readme_command_needs_no_pip_install_into_the_system_python() -> None:
    command = readme_test_command()
    assert "pip install" not in command  # Debian/Ubuntu: externally-managed-environment
    assert command == "python3 tools/nox.py"


def test_ci_runs_the_readme_command_as_written() -> None:
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert readme_test_command() in lines


def test_no_nox_session_is_pinned_to_one_python_and_none_needs_ensurepip() -> None:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "nox.session":
            assert not [kw for kw in node.keywords if kw.arg == "python"], ast.unparse(node)
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "nox.options.default_venv_backend":
            assert ast.literal_eval(node.value) == "virtualenv"  # bundles pip; `venv` needs ensurepip


def test_the_bootstrap_uses_only_the_standard_library() -> None:
    """`tools/nox.py` runs before anything is installed: it must import with a bare interpreter."""
    probe = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('b', 'tools/nox.py'); "
             "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); "
             "print(module.VENV.name)")
    result = subprocess.run([sys.executable, "-I", "-S", "-c", probe], cwd=ROOT, capture_output=True, text=True,
                            timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ".nox-venv"

"""Run nox from a virtual environment of its own, making that environment first if need be.

`python3 tools/nox.py [nox arguments]` works with the python3 a Debian or Ubuntu machine comes
with: such a python3 refuses `pip install` ("externally-managed-environment") and may lack pip
and ensurepip (python3-pip and python3-venv are separate packages there). The environment is
`.nox-venv/` beside this folder; pip comes from ensurepip where the interpreter has it, else its
wheel is fetched from PyPI and checked against the digest PyPI publishes for it. Only the
standard library is used here.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".nox-venv"
NOX = "nox>=2025.2.9"
PYPI_PIP = "https://pypi.org/pypi/pip/json"
DOWNLOAD_TIMEOUT_S = 120


def venv_python() -> Path:
    return VENV / "bin" / "python"


def has_nox(python: Path) -> bool:
    if not python.exists():
        return False
    found = subprocess.run([str(python), "-c", "import nox"], capture_output=True, check=False)
    return found.returncode == 0


def make_venv() -> None:
    """The environment with pip in it: through ensurepip, or from pip's wheel when the
    interpreter has no ensurepip (Debian's and Ubuntu's python3 without python3-venv)."""
    made = subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], capture_output=True, text=True,
                          check=False)
    if made.returncode == 0 and pip_works():
        return
    print("tools/nox.py: this python3 has no ensurepip; fetching pip's wheel from PyPI", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(VENV)], check=True)
    with tempfile.TemporaryDirectory() as folder:
        wheel = fetch_pip_wheel(Path(folder))
        subprocess.run([str(venv_python()), f"{wheel}/pip", "install", "--quiet", "--no-index", str(wheel)],
                       check=True)


def pip_works() -> bool:
    run = subprocess.run([str(venv_python()), "-m", "pip", "--version"], capture_output=True, check=False)
    return run.returncode == 0


def fetch_pip_wheel(folder: Path) -> Path:
    with urllib.request.urlopen(PYPI_PIP, timeout=DOWNLOAD_TIMEOUT_S) as answer:
        release = json.load(answer)
        base = answer.geturl()
    wheel = next(url for url in release["urls"] if url["packagetype"] == "bdist_wheel")
    url = urllib.parse.urljoin(base, wheel["url"])  # a mirror may answer with relative links
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as answer:
        data = answer.read()
    if hashlib.sha256(data).hexdigest() != wheel["digests"]["sha256"]:
        sys.exit("tools/nox.py: pip's wheel from PyPI does not match its published sha256; not installed")
    path = folder / wheel["filename"]
    path.write_bytes(data)
    return path


def main() -> None:
    python = venv_python()
    if not has_nox(python):
        if not python.exists() or not pip_works():
            make_venv()
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", NOX], check=True)
    os.chdir(ROOT)
    os.execv(str(python), [str(python), "-m", "nox", *sys.argv[1:]])


if __name__ == "__main__":
    main()

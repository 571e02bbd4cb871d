"""A stand-in for a vendor's own CLI (`claude`, `codex`, `muse`) as sign-in and sign-out see it.

Every run appends `{"argv": [...], "env": {name: present?}}` to `$STANDIN_CLI_LOG`. A sign-in
(`login`, `auth login ...`, or no arguments: the interactive CLI) writes `$STANDIN_CREDENTIALS`
(with `$STANDIN_CREDENTIALS_JSON` when set: the real CLI's own format) unless
`STANDIN_LOGIN_FAIL=1`, then it exits 1 having stored nothing; a sign-out (`logout`, `auth
logout`) deletes it; a status check (`auth status`, `login status`) exits 0 only while it exists.
`--version` prints `STANDIN_VERSION`. Anything else exits 3. `STANDIN_HANG=1`: write the PID to
`$STANDIN_PID_FILE` and never answer (what a deadline must bound).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

WATCHED = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "META_API_KEY", "STANDIN_MARKER")


def main(argv: list[str]) -> int:
    with open(os.environ["STANDIN_CLI_LOG"], "a") as log:
        log.write(json.dumps({"argv": argv, "env": {name: name in os.environ for name in WATCHED}}) + "\n")
    if os.environ.get("STANDIN_HANG") == "1":
        Path(os.environ["STANDIN_PID_FILE"]).write_text(str(os.getpid()))
        threading.Event().wait()
    credentials = Path(os.environ["STANDIN_CREDENTIALS"])
    words = [arg for arg in argv if not arg.startswith("-")]
    if argv == ["--version"]:
        print(os.environ.get("STANDIN_VERSION", "stand-in 1.0"))
        return 0
    if words in (["login"], ["auth", "login"], []):
        if os.environ.get("STANDIN_LOGIN_FAIL") == "1":
            print("Sign-in was cancelled.", file=sys.stderr)
            return 1
        credentials.parent.mkdir(parents=True, exist_ok=True)
        credentials.write_text(os.environ.get("STANDIN_CREDENTIALS_JSON")
                               or json.dumps({"token": "stand-in-signed-in-0123456789"}))
        print("Signed in.")
        return 0
    if words in (["logout"], ["auth", "logout"]):
        credentials.unlink(missing_ok=True)
        print("Signed out.")
        return 0
    if words in (["auth", "status"], ["login", "status"]):
        signed_in = credentials.exists()
        print("Logged in" if signed_in else "Not logged in")
        return 0 if signed_in else 1
    print(f"stand-in: unknown arguments {argv}", file=sys.stderr)
    return 3


def write_executable(path: Path) -> Path:
    """An executable at `path` that runs this stand-in with the test interpreter."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\nimport runpy\nrunpy.run_path({__file__!r}, run_name='__main__')\n")
    path.chmod(0o755)
    return path


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

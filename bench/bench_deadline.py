"""Phase deadlines: time from the request to its error when the Claude CLI never answers.

A stand-in CLI (tests/claude/standin_cli.py) hangs in one phase and ignores SIGTERM and the end of
its input, so stopping it takes seconds; the error must not wait for that (issue 9: the client gets
it within the deadline plus 1 s). Deadlines are 400 ms. Reports median [min–max]; asserts nothing.

Run: `nox -s bench` or `python bench/bench_deadline.py [runs]`.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _agent import RawAgent, median

ROOT = Path(__file__).resolve().parent.parent
DEADLINE_MS = 400
INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}}


def standin_env(folder: Path, phase: str) -> dict[str, str]:
    script = folder / "claude-standin"
    script.write_text(f"#!{sys.executable}\nimport runpy\n"
                      f"runpy.run_path({str(ROOT / 'tests/claude/standin_cli.py')!r}, run_name='__main__')\n")
    script.chmod(0o755)
    return {"ACP_AGENT_CLAUDE_CLI": str(script), "STANDIN_HANG": phase, "STANDIN_STUBBORN": "1",
            "STANDIN_PID_FILE": str(folder / "pids"), "ACP_AGENT_STARTUP_TIMEOUT_MS": str(DEADLINE_MS),
            "ACP_AGENT_SUBMIT_TIMEOUT_MS": str(DEADLINE_MS), "ANTHROPIC_API_KEY": "bench-key-not-used",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "CLAUDE_CONFIG_DIR": str(folder / "config")}


def one_run(phase: str) -> float:
    """Seconds from sending the request that hits the deadline to its error."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        agent = RawAgent("claude", env=standin_env(folder, phase), cwd=name)
        try:
            agent.call("initialize", INITIALIZE)
            agent.call("session/list", {"cwd": name})  # the runtime is loaded before the clock starts
            if phase == "submitting":
                session = agent.call("session/new", {"cwd": name, "mcpServers": []})["result"]["sessionId"]
                started = time.perf_counter()
                answer = agent.call("session/prompt", {"sessionId": session,
                                                       "prompt": [{"type": "text", "text": "hi"}]})
            else:
                started = time.perf_counter()
                answer = agent.call("session/new", {"cwd": name, "mcpServers": []})
            elapsed = time.perf_counter() - started
            if "error" not in answer:
                raise SystemExit(f"{phase}: expected a deadline error, got {answer}")
            return elapsed
        finally:
            agent.close(timeout=30)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 5
    for phase in ("initializing", "preparing", "submitting"):
        times = [one_run(phase) for _ in range(runs)]
        print(f"deadline[claude {phase}, {DEADLINE_MS} ms]: error after median {median(times) * 1000:.0f} ms "
              f"[{min(times) * 1000:.0f}–{max(times) * 1000:.0f}], n={runs}")


if __name__ == "__main__":
    main()

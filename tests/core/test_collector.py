"""The garbage collector while the agent starts (`acp_agent.startup.collector`, issue 11)."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator

import pytest

from acp_agent.startup.collector import defer_collection
from tests.e2e.harness import run_command_script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector_restored")
def test_collection_stops_until_settled_then_resumes_without_the_objects_built_meanwhile() -> None:
    gc.enable()
    gc.unfreeze()
    settle = defer_collection()
    assert not gc.isenabled()
    built = [object() for _ in range(10)] + [[index] for index in range(1000)]
    settle()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(built) - 10  # the lists are tracked; plain objects are not
    settle()  # twice: nothing more happens
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_restored")
def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    settle = defer_collection()
    settle()
    assert not gc.isenabled()


def test_the_command_serves_with_the_collector_running_and_start_up_frozen() -> None:
    """Through the command: nothing collected while it imports, the usual collector once it serves."""
    script = ("import gc, sys\n"
              "collections = []\n"
              "gc.callbacks.append(lambda phase, info: phase == 'start' and collections.append(1))\n"
              "import json\n"
              "sys.argv = ['acp-agent', '--provider', 'scripted']\n"
              "from acp_agent import cli\n"
              "from acp_agent.startup import collector\n"
              "main = cli.main\n"
              "def reporting_main():\n"
              "    code = main()\n"
              "    print(json.dumps({'enabled': gc.isenabled(), 'frozen': gc.get_freeze_count()}),"
              " file=sys.stderr, flush=True)\n"
              "    return code\n"
              "cli.main = reporting_main\n"
              "defer = collector.defer_collection\n"
              "def deferred():\n"
              "    settle = defer()\n"
              "    collections.clear()  # the interpreter's own start-up is not the agent's to change\n"
              "    return settle\n"
              "collector.defer_collection = deferred\n"
              "serve = cli.serve_stdio\n"
              "async def counted(*args):\n"
              "    print(json.dumps({'collections_before_serving': len(collections)}), file=sys.stderr)\n"
              "    await serve(*args)\n"
              "cli.serve_stdio = counted\n"
              "cli.command()\n")
    result = run_command_script(script)
    assert result.returncode == 0, result.stderr
    reports = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert reports[0] == {"collections_before_serving": 0}
    assert reports[1]["enabled"] is True
    assert reports[1]["frozen"] > 10_000  # the modules, classes and functions start-up built

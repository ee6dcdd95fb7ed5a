"""What an xdist worker imports: the modules it needs to run an item, and those it must not pay for.

Shared by the test that keeps the deferred modules out of a worker and by the benchmark that
prints a worker's import CPU (`python -m bench import`).
"""

from __future__ import annotations

import json
import subprocess
import sys

from _pytest.config import default_plugins

#: What any xdist worker imports whatever its other plugins (pytest's default plugins, xdist's):
#: the benchmark's baseline.
PYTEST_WORKER = (
    "pytest",
    *(f"_pytest.{name}" for name in default_plugins),
    "xdist.plugin",
    "xdist.looponfail",
    "xdist.remote",
)

#: The plugin and the modules a worker imports to collect and run an item on Pi: what a worker
#: of the common case pays (the parallel benchmark's suite is Pi's). The plugin's entry imports
#: only the declared options; its hooks import the glue below once --skill-eval enables them. A
#: worker imports a host's modules only when it runs a group on that host (the registry loads
#: implementations by `module:attr` on use); a real Pi worker's imports of the plugin and its
#: dependencies are checked against this list (`tests/plugin/test_worker_imports.py`).
WORKER_MODULES = (
    "pytest_skill_eval.plugin",
    "pytest_skill_eval.options.settings",
    "pytest_skill_eval.session",
    "pytest_skill_eval.items",
    "pytest_skill_eval.subresults",
    "pytest_skill_eval.xdist",
    "pytest_skill_eval.run.group",
    "pytest_skill_eval.run.prestart",
    "pytest_skill_eval.hosts.subject",
    "pytest_skill_eval.hosts.pi.host",
    "pytest_skill_eval.hosts.pi.tools",
    "pytest_skill_eval.hosts.pi.offered",
    "pytest_skill_eval.grading",
    "pytest_skill_eval.workspace.materialise",
    "pytest_skill_eval.evidence.summary",
)

#: Top-level names of the plugin and the packages it depends on: what a worker's own imports are
#: compared by (not pytest's, xdist's or other plugins').
OWN_PACKAGES = (
    "pytest_skill_eval", "pydantic", "pydantic_core", "annotated_types", "typing_inspection",
    "jinja2", "markupsafe", "jsonpointer", "psutil", "yaml",
)  # fmt: skip


def own(modules: set[str]) -> set[str]:
    """The modules of `modules` that belong to the plugin or the packages it depends on."""
    return {name for name in modules if name.partition(".")[0] in OWN_PACKAGES}


#: Modules a worker never needs, each with the reason: they load at their first use.
DEFERRED = {
    "jinja2": "the HTML report's templates",
    "markupsafe": "the HTML report's escaping",
    "pytest_skill_eval.views.html": "the HTML report",
    "pytest_skill_eval.views.text": "the text view",
    "pytest_skill_eval.views.terminal": "the controller's terminal summary",
    "pytest_skill_eval.views.summary": "the controller's Markdown step summary",
    "pytest_skill_eval.views.statistics": "statistics rendering",
    "pytest_skill_eval.commands.cli": "the console script",
    "pytest_skill_eval.commands.review": "the advisory review",
    "pytest_skill_eval.commands.compare": "comparing two results",
    "pytest_skill_eval.scale.models": "validating a plan, which runs with a plan load",
    "pytest_skill_eval.modelserver.record": "recording, which runs that record load",
    "urllib.request": "recording's HTTP client",
    "pytest_skill_eval.hosts.codex.tools": "rendering a script's calls for Codex",
    "pytest_skill_eval.hosts.claude_code.binary": "finding Claude Code, for a group on it",
    "pytest_skill_eval.hosts.codex.binary": "finding Codex, for a group on it",
    "pytest_skill_eval.hosts.codex.config": "configuring Codex, for a group on it",
    "pytest_skill_eval.hosts.gemini_cli.binary": "finding Gemini CLI, for a group on it",
    "pytest_skill_eval.hosts.opencode.binary": "finding opencode, for a group on it",
    "pytest_skill_eval.hosts.opencode.config": "configuring opencode, for a group on it",
    "pytest_skill_eval.budget.estimate": "the cost forecast, the controller's",
    "pytest_skill_eval.budget.forecast": "the cost forecast, the controller's",
    "pytest_skill_eval.analysis.gate": "the statistical gate, the controller's",
    "pytest_skill_eval.analysis.significance": "the statistical gate, the controller's",
    "tomllib": "reading an ini file to find an earlier result named by id",
    "configparser": "reading an ini file to find an earlier result named by id",
}

#: The reader's pydantic adapters (`evidence.shapes`), built at the first read of a result.
ADAPTERS = (
    "SUMMARY", "GROUP", "RUN", "GRADE", "INVOCATION", "AGGREGATE", "MANIFEST", "SEAL",
    "DEFINITION", "OBJECT",
)  # fmt: skip

_REPORT = """
import json, sys
from pytest_skill_eval.evidence import shapes
built = [name for name in {adapters!r} if name in vars(shapes)]
print(json.dumps({{"modules": sorted(sys.modules), "adapters": built}}))
"""


def loaded_after(modules: tuple[str, ...], then: str = "") -> tuple[set[str], list[str]]:
    """In a fresh interpreter that imports `modules` (then runs the code `then`): every module
    loaded, and which of the reader's adapters were built."""
    imports = "\n".join(f"import {name}" for name in modules)
    code = f"{imports}\n{then}\n{_REPORT.format(adapters=ADAPTERS)}"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )  # fmt: skip
    found = json.loads(done.stdout)
    return set(found["modules"]), list(found["adapters"])

"""A lighter plugin: an xdist worker imports only what running an item needs; views, Jinja2, the
review, the CLI, statistics rendering and the reader's adapters load at their first use, which
for the terminal summary is the controller's alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.imports import ADAPTERS, DEFERRED, WORKER_MODULES, loaded_after, own
from tests.support.roots import answers_root
from tests.support.runs import results, run

# Written into the run's directory: each process of the run (the controller, each worker)
# writes, as it ends, every module it imported and which adapters it built.
PROBE = """
import gc, json, os, sys

ADAPTERS = {adapters!r}


def pytest_unconfigure(config):
    shapes = sys.modules.get("pytest_skill_eval.evidence.shapes")
    built = [n for n in ADAPTERS if shapes is not None and n in vars(shapes)]
    # Not PYTEST_XDIST_WORKER: under an outer `-n`, the run's own controller inherits it.
    worker = getattr(config, "workerinput", None)
    name = worker["workerid"] if worker is not None else "controller"
    with open(os.path.join({out!r}, name + ".json"), "w") as out:
        json.dump(
            {{"modules": sorted(sys.modules), "adapters": built, "frozen": gc.get_freeze_count()}},
            out,
        )
"""


def test_importing_what_a_worker_runs_leaves_each_deferred_module_unloaded() -> None:
    loaded, adapters = loaded_after(WORKER_MODULES)
    assert set(WORKER_MODULES) <= loaded
    assert sorted(set(DEFERRED) & loaded) == [], "imported by a worker: " + ", ".join(
        f"{name} ({DEFERRED[name]})" for name in sorted(set(DEFERRED) & loaded)
    )
    assert adapters == []


def test_the_views_and_the_adapters_load_at_their_first_use() -> None:
    code = (
        "from pytest_skill_eval.views import render_html, render_text\n"
        "from pytest_skill_eval.evidence import shapes\n"
        "assert shapes.RUN is shapes.RUN\n"
    )
    loaded, adapters = loaded_after(("pytest_skill_eval.plugin",), then=code)
    assert {"jinja2", "pytest_skill_eval.views.html", "pytest_skill_eval.views.text"} <= loaded
    assert adapters == ["RUN"]


@pytest.mark.pi
def test_a_worker_that_ran_a_pi_group_imported_what_the_benchmark_measures_and_no_more(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    out = tmp_path / "imports"
    out.mkdir()
    pytester.makeconftest(PROBE.format(adapters=ADAPTERS, out=str(out)))
    root = answers_root(tmp_path / "root", {"g0/baseline": "no", "g0/candidate": "yes"}, host="pi")
    result = run(pytester, root, "-n", "1")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    (result_dir,) = results(root)
    assert (result_dir / "groups" / "g0" / "group.json").is_file()
    worker = json.loads((out / "gw0.json").read_text())
    modules = set(worker["modules"])
    # The worker ran the group on Pi: it imported what the benchmark's worker imports, and of
    # the plugin and its dependencies nothing the benchmark leaves out.
    assert set(WORKER_MODULES) <= modules
    measured, _ = loaded_after(WORKER_MODULES)
    assert sorted(own(modules) - own(measured)) == [], "not measured by bench import"
    # It paid for nothing it did not use: of the reader's adapters, only the invocation's (its
    # sub-results read the flaky checks).
    assert sorted(set(DEFERRED) & modules) == []
    assert worker["adapters"] == ["INVOCATION"]
    # The controller paid for the terminal summary's views, once.
    controller = json.loads((out / "controller.json").read_text())
    assert "pytest_skill_eval.views.terminal" in controller["modules"]
    assert "jinja2" not in controller["modules"]
    # The worker froze what it had collected, which lives until it exits (`xdist.settle_worker`);
    # the controller, which may share its process with whatever started the run, froze nothing.
    assert worker["frozen"] > 0
    assert controller["frozen"] == 0

"""pytest without --skill-eval: it says how to evaluate the definitions at hand, and costs next
to nothing (the plugin loads in every pytest run of a project that installs it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.imports import OWN_PACKAGES

SUITE = {"schema_version": 1, "kind": "suite", "id": "s", "groups": ["g.json"]}


def test_definitions_in_the_invocation_directory_are_named(pytester: pytest.Pytester) -> None:
    pytester.makefile(".json", suite=json.dumps(SUITE), other=json.dumps({"kind": "other"}))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "skill-eval: nothing evaluated; to evaluate suite.json, run: "
            "pytest --skill-eval suite.json"
        ]
    )


def test_skill_eval_ini_keys_without_definitions_are_named(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nskill_eval_trials = 2\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "skill-eval: nothing evaluated: *tox.ini sets skill_eval_trials but names no "
            "definitions; run pytest --skill-eval <file>*"
        ]
    )


def test_a_loop_features_own_ini_key_without_definitions_is_named(
    pytester: pytest.Pytester,
) -> None:
    # The no-harm gate declares its margin itself (`features/no_harm.py`), not `options/`.
    pytester.makeini("[pytest]\nskill_eval_margin = 0.1\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["skill-eval: nothing evaluated: *tox.ini sets skill_eval_margin but names no definitions*"]
    )


def test_without_definitions_nothing_is_said(pytester: pytest.Pytester) -> None:
    pytester.makefile(".json", data=json.dumps({"kind": "suite-ish"}))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert "nothing evaluated" not in result.stdout.str()


# Written into the run's directory: each process (the controller, each worker) writes, as it
# ends, every module it imported.
PROBE = """
import json, os, sys


def pytest_unconfigure(config):
    worker = getattr(config, "workerinput", None)
    name = worker["workerid"] if worker is not None else "controller"
    with open(os.path.join({out!r}, name + ".json"), "w") as out:
        json.dump(sorted(sys.modules), out)
"""

# What the plugin's entry imports to declare its options and nothing else: the option tables,
# the loop features' declarations, the hosts' registrations (each names its binary option).
DECLARING = (
    "plugin", "rootdir", "errors", "nodeids", "options", "features", "hosts", "analysis", "common",
)  # fmt: skip


def _beyond_declaring(module: str) -> bool:
    """Whether `module` belongs to the plugin's layers or dependencies, past its declarations."""
    top, _, rest = module.partition(".")
    if top not in OWN_PACKAGES:
        return False
    return top != "pytest_skill_eval" or (rest != "" and rest.partition(".")[0] not in DECLARING)


def test_a_run_without_skill_eval_imports_only_what_declares_the_options(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    out = tmp_path / "imports"
    out.mkdir()
    pytester.makeconftest(PROBE.format(out=str(out)))
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    processes = sorted(path.stem for path in out.glob("*.json"))
    assert processes == ["controller", "gw0", "gw1"]
    for process in processes:
        modules = json.loads((out / f"{process}.json").read_text())
        assert "pytest_skill_eval.plugin" in modules, process
        layers = sorted(name for name in modules if _beyond_declaring(name))
        assert layers == [], f"{process} imported: {', '.join(layers)}"
        # Of the declaring packages, only what declares: no host's implementation, no gate.
        assert "pytest_skill_eval.hosts.pi.host" not in modules
        assert "pytest_skill_eval.analysis.adaptive" not in modules

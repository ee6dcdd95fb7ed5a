"""Pi's bundle is the same Pi: the example suite sends the same model requests and prints the
same events on stock Pi and on the bundle, both on the pinned Node (and the record says which).

This is the equivalence check the bundle rests on, for the pinned Pi, esbuild and Node: it runs
with the suite, so every change of the lock is checked by it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.pi.bundle import MANIFEST, cache_root
from pytest_skill_eval.hosts.runtime import PINNED
from tests.support import runs
from tests.support.files import read_json
from tests.support.roots import answers_root
from tests.support.shared import SharedRun

pytestmark = pytest.mark.pi

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
VARIANTS = [
    (group, variant)
    for group in ("natural-activation", "changelog-entry")
    for variant in ("baseline", "candidate")
]


def _normalised(value: Any, result: Path) -> Any:
    """Ids, times and the result directory replaced; a request's digest (of its paths) dropped."""
    if isinstance(value, dict):
        return {
            key: "<time>" if key == "timestamp" else _normalised(item, result)
            for key, item in value.items()
            if key != "sha256"
        }
    if isinstance(value, list):
        return [_normalised(item, result) for item in value]
    if isinstance(value, str):
        return _ISO.sub("<iso>", _UUID.sub("<uuid>", value.replace(str(result), "<result>")))
    return value


def _lines(variant_dir: Path, name: str, result: Path) -> list[Any]:
    lines = (variant_dir / name).read_text(encoding="utf-8").splitlines()
    # `message_update` streams what `message_end` then holds, in chunks cut where the scripted
    # server cuts them: at byte counts, which differ with the length of the result's path.
    return [
        _normalised(record, result)
        for record in map(json.loads, filter(str.strip, lines))
        if record.get("type") != "message_update"
    ]


@pytest.fixture(scope="module")
def stock_root(tmp_path_factory: pytest.TempPathFactory, example_run: SharedRun) -> Path:
    """The example suite once more, on stock Pi (`--skill-eval-pi-bundle off`)."""
    root = tmp_path_factory.mktemp("stock") / "example"
    # The same suite as the shared run, copied from its root (its results left behind).
    shutil.copytree(example_run.root, root, ignore=shutil.ignore_patterns(".skill-eval"))
    done = runs.run_detached(root, "--skill-eval-pi-bundle", "off")
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def test_the_example_suite_runs_on_the_pinned_node_as_the_checked_bundle(
    example_run: SharedRun,
) -> None:
    for group, variant in VARIANTS:
        pi = runs.run_record(example_run.root, group, variant)["binary"]
        runtime = pi["runtime"]
        assert (runtime["kind"], runtime["version"]) == ("pinned", PINNED)
        assert Path(runtime["path"]).name == "node"
        assert pi["form"]["kind"] == "bundle"
        built = {
            read_json(m)["sha256"]: m.parent
            for m in cache_root().glob(f"pi-{pi['version']}-*/{MANIFEST}")
        }
        assert pi["form"]["sha256"] in built
    # Its module factories compile with their chunk (hosts/factories.py): none is left a method.
    bundle = built[pi["form"]["sha256"]] / "pkg" / "dist" / "core" / "bundle"
    text = "\n".join(path.read_text("utf-8") for path in bundle.glob("*.js"))
    assert len(re.findall(r'= __commonJS\(\{\n  "[^"\n]+": \(function\(', text)) > 100
    assert not re.findall(r'= __(?:commonJS|esm)\(\{\n  "[^"\n]+"\(', text)


def test_stock_pi_and_the_bundle_send_the_same_requests_and_print_the_same_events(
    example_run: SharedRun, stock_root: Path
) -> None:
    bundled, stock = runs.result_dir(example_run.root), runs.result_dir(stock_root)
    for group, variant in VARIANTS:
        record = read_json(stock / "groups" / group / variant / "run.json")
        assert record["binary"]["form"] == {"kind": "stock"}
        assert record["binary"]["runtime"]["version"] == PINNED
        for name in ("model-requests.jsonl", "events.jsonl"):
            ours = _lines(bundled / "groups" / group / variant, name, bundled)
            theirs = _lines(stock / "groups" / group / variant, name, stock)
            assert ours, f"{group}/{variant}/{name} is empty"
            assert ours == theirs, f"{group}/{variant}/{name} differs"


def test_the_operators_own_node_runs_pi_when_named_and_is_recorded_as_such(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    node = shutil.which("node")
    assert node is not None, "the tests need a node on PATH"
    root = answers_root(tmp_path / "root", {"answer/baseline": "no"}, host="pi")
    result = runs.run(pytester, root, "--skill-eval-node", node, "--skill-eval-variant", "baseline")
    assert result.ret == 0, result.stdout.str()
    pi = runs.run_record(root, "answer", "baseline")["binary"]
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    assert pi["runtime"] == {
        "kind": "option",
        "path": str(Path(node).resolve()),
        "version": version.stdout.strip().removeprefix("v"),
    }


TAMPER = """
import os
from pathlib import Path

def pytest_configure_node(node):
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "pytest-skill-eval" / "pi-bundle"
    for cli in cache.glob("*/pkg/dist/core/bundle/cli.js"):
        text = cli.read_text()
        cli.write_text(text.replace("node", "nope", 1))  # the same size: only its hash differs
"""


def test_a_bundle_changed_after_the_controller_checked_it_fails_each_run_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundle changes between the controller's check and a worker's (an xdist hook edits
    it): the worker does not crash; its run on Pi is infrastructure-failed, naming the file."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = answers_root(tmp_path / "root", {"answer/baseline": "no"}, host="pi")
    (root / "conftest.py").write_text(TAMPER, encoding="utf-8")
    done = runs.run_detached(root, "--skill-eval-variant", "baseline", "-n", "1")
    printed = done.stdout + done.stderr
    assert done.returncode == 1, printed
    assert "Traceback" not in printed
    assert "INTERNALERROR" not in printed
    run = runs.run_record(root, "answer", "baseline")
    assert run["state"] == "infrastructure-failed"
    message = run["error"]["message"]
    assert message.startswith("the pi binary the controller checked cannot be used here: ")
    assert "bundle/cli.js does not match its hash" in message

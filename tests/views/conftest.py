"""A fixed evidence directory for the view tests, built from the committed data under `data/`.

`data/result/` is a real result of a copy of the example suite (real Pi 0.73.1, scripted model)
whose baseline wrote files with hostile names and a hostile multi-line response, and whose
candidate made a failing tool call. Machine paths are replaced by `@RESULT@` (the result
directory) and `@ROOT@` (the definition root). Files whose names git cannot hold portably
(TAB, CR, LF, backslash, `<`) live in `data/odd-files.json` and are recreated here.
`semantic-grade.json` of `natural-activation` is written by hand (reference §9.5 shape).
`data/aggregate-*/aggregate.json` are real aggregates of 3 and 8 trials of the same suite.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.evidence import json_bytes, write_manifest, write_seal

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = Path(__file__).resolve().parent / "golden"
RESULT_ID = "20261130215313-7e60c21e"
AGGREGATES = {
    "aggregate-unresolved": "20261130215348-e00b1fbc",
    "aggregate-resolved": "20261130215418-5c1aeb5a",
}


def _fill_placeholders(path: Path, result: Path, root: Path) -> None:
    data = path.read_bytes()
    if b"@RESULT@" not in data and b"@ROOT@" not in data:
        return
    text = data.decode("utf-8").replace("@RESULT@", str(result)).replace("@ROOT@", str(root))
    path.write_bytes(text.encode("utf-8"))


def build_result(root: Path) -> Path:
    """Write the fixed result under `<root>/.skill-eval/runs/<id>` and return its directory."""
    __tracebackhide__ = True
    result = root / ".skill-eval" / "runs" / RESULT_ID
    shutil.copytree(DATA / "result", result)
    for directory, _, files in os.walk(result):
        for name in files:
            _fill_placeholders(Path(directory) / name, result, root)
    for entry in json.loads((DATA / "odd-files.json").read_text(encoding="utf-8")):
        (result / entry["path"]).write_bytes(base64.b64decode(entry["base64"]))
    for group_dir in sorted((result / "groups").iterdir()):
        # Rebind the grade to the run bytes as they are after the placeholders were filled in.
        grade_path = group_dir / "deterministic-grade.json"
        grade = json.loads(grade_path.read_text(encoding="utf-8"))
        for variant, evidence in grade["evidence"].items():
            run_bytes = (group_dir / variant / "run.json").read_bytes()
            evidence["sha256"] = hashlib.sha256(run_bytes).hexdigest()
        grade_path.write_bytes(json_bytes(grade))
        write_manifest(group_dir)
    write_seal(result)  # last, as a run seals a result
    return result


def build_aggregate(root: Path, name: str) -> Path:
    """Write one of the committed aggregates under `<root>/.skill-eval/runs/<id>`."""
    __tracebackhide__ = True
    directory = root / ".skill-eval" / "runs" / AGGREGATES[name]
    directory.mkdir(parents=True)
    shutil.copyfile(DATA / name / "aggregate.json", directory / "aggregate.json")
    _fill_placeholders(directory / "aggregate.json", directory, root)
    return directory


@pytest.fixture
def result_dir(tmp_path: Path) -> Path:
    """The fixed result (one description group, one body group) in a fresh directory."""
    return build_result(tmp_path / "root")


@pytest.fixture
def unresolved_aggregate(tmp_path: Path) -> Path:
    """A 3-trial aggregate whose differences the statistics cannot separate."""
    return build_aggregate(tmp_path / "root", "aggregate-unresolved")


@pytest.fixture
def resolved_aggregate(tmp_path: Path) -> Path:
    """An 8-trial aggregate whose differences the statistics separate."""
    return build_aggregate(tmp_path / "root", "aggregate-resolved")

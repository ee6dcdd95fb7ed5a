"""Each evidence file a real run writes is what its one description (`evidence/records.py`,
`evidence/aggregates.py`) says: the reader's validator built from it accepts the file, and every
field the writer put there is a field of the description (an open field another layer builds,
marked `Holds`, is described only as far as its readers rely on it)."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typing_extensions import is_typeddict

from pytest_skill_eval.analysis.trials import aggregate
from pytest_skill_eval.evidence import layout, shapes
from pytest_skill_eval.evidence.constraints import Holds
from pytest_skill_eval.evidence.read import check_shape
from tests.support import runs
from tests.support.shared import SharedRun

WRAPPERS = (typing.NotRequired, typing.Required)


def _fields(record: Any) -> dict[str, Any]:
    return typing.get_type_hints(record, include_extras=True)


def _bare(hint: Any) -> Any:
    """`hint` without NotRequired, and None when it is an open field (`Holds`)."""
    while typing.get_origin(hint) in WRAPPERS:
        (hint,) = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Annotated:
        if any(isinstance(meta, Holds) for meta in hint.__metadata__):
            return None
        return _bare(typing.get_args(hint)[0])
    return hint


def undescribed(value: Any, hint: Any, where: str = "") -> Iterator[str]:
    """The JSON pointer of each field of `value` its description `hint` does not name."""
    hint = _bare(hint)
    origin = typing.get_origin(hint)
    if hint is None:
        return
    if origin in (typing.Union, types.UnionType):
        members = [_bare(member) for member in typing.get_args(hint)]
        described = [m for m in members if m is not None and is_typeddict(m)]
        if isinstance(value, dict) and len(described) == 1 and dict not in members:
            yield from undescribed(value, described[0], where)
        elif isinstance(value, list):
            for member in members:
                if typing.get_origin(member) is list:
                    yield from undescribed(value, member, where)
                    return
        return
    if is_typeddict(hint) and isinstance(value, dict):
        fields = _fields(hint)
        for key, item in value.items():
            if key not in fields:
                yield f"{where}/{key}"
            else:
                yield from undescribed(item, fields[key], f"{where}/{key}")
    elif origin is list and isinstance(value, list):
        (item_hint,) = typing.get_args(hint)
        for index, item in enumerate(value):
            yield from undescribed(item, item_hint, f"{where}/{index}")
    elif origin is dict and isinstance(value, dict):
        _, item_hint = typing.get_args(hint)
        for key, item in value.items():
            yield from undescribed(item, item_hint, f"{where}/{key}")


def _record(adapter_name: str) -> Any:
    return shapes._RECORDS[adapter_name]


def _evidence_files(result_dir: Path) -> Iterator[tuple[Path, str]]:
    """Each JSON evidence file of a result and the name of its reader's adapter."""
    yield layout.summary_file(result_dir), "SUMMARY"
    yield layout.invocation_file(result_dir), "INVOCATION"
    yield layout.seal_file(result_dir), "SEAL"
    for group_dir in sorted(layout.groups_dir(result_dir).iterdir()):
        yield group_dir / layout.GROUP, "GROUP"
        yield group_dir / layout.MANIFEST, "MANIFEST"
        yield group_dir / layout.DEFINITION, "DEFINITION"
        yield group_dir / "deterministic-grade.json", "GRADE"
        for variant in ("baseline", "candidate"):
            yield group_dir / variant / layout.RUN, "RUN"


def _check(path: Path, value: Any, name: str) -> None:
    check_shape(path, value, getattr(shapes, name))
    if name == "DEFINITION":
        return  # the declaration as loaded: described whole by `definitions/`
    assert list(undescribed(value, _record(name))) == [], f"{path}: not in {name}'s description"


@pytest.mark.pi
def test_every_file_of_a_real_result_is_its_description(example_run: SharedRun) -> None:
    result_dir = runs.result_dir(example_run.root)
    checked = []
    for path, name in _evidence_files(result_dir):
        assert path.is_file(), path
        _check(path, json.loads(path.read_text(encoding="utf-8")), name)
        checked.append(name)
    assert sorted(set(checked)) == sorted(
        ["SUMMARY", "INVOCATION", "SEAL", "GROUP", "MANIFEST", "DEFINITION", "GRADE", "RUN"]
    )


@pytest.mark.pi
@pytest.mark.parametrize("adaptive", [False, True], ids=["fixed", "adaptive"])
def test_an_aggregate_over_a_real_result_is_its_description(
    example_run: SharedRun, adaptive: bool
) -> None:
    result_dir = runs.result_dir(example_run.root)
    record = aggregate("aggregate-id", [result_dir], 1, adaptive=adaptive)
    # As written: through JSON, so tuples and numbers are what a reader meets.
    _check(result_dir / layout.AGGREGATE, json.loads(json.dumps(record)), "AGGREGATE")


def test_a_field_the_description_lacks_is_named() -> None:
    run = {"state": "complete", "turns": [{"anything": 1}], "surplus": {"x": 1}}
    assert list(undescribed(run, _record("RUN"))) == ["/turns/0/anything", "/surplus"]
    grade = {"checks": [{"id": "a", "state": "pass", "details": 1}]}
    assert list(undescribed(grade, _record("GRADE"))) == ["/checks/0/details"]

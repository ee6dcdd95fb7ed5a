"""A declared fixture that cannot be used is a collection error, before any subject runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.roots import body_group, make_root


def _collect(pytester: pytest.Pytester, root: Path) -> tuple[int, str]:
    result = pytester.runpytest_inprocess(
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "--skill-eval",
        str(root / "suite.json"),
        "--skill-eval-root",
        str(root),
    )
    return result.ret, result.stdout.str() + result.stderr.str()


def _root(pytester: pytest.Pytester, fixture: str) -> Path:
    return make_root(pytester.path / "root", [body_group("g", fixture=fixture)], {})


def _assert_one_collection_error(ret: int, output: str, root: Path, *phrases: str) -> None:
    __tracebackhide__ = True
    assert ret != 0, output
    assert "Traceback" not in output, output
    group_file = (root / "groups" / "g.json").resolve()
    line = next((ln for ln in output.splitlines() if f"{group_file}: /fixture: " in ln), None)
    assert line is not None, output
    for phrase in phrases:
        assert phrase in line, (phrase, line)


def test_a_fixture_linking_out_of_the_root_is_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    root = _root(pytester, "linked")
    outside = pytester.path / "outside"
    outside.mkdir()
    (root / "linked").symlink_to(outside, target_is_directory=True)

    ret, output = _collect(pytester, root)

    _assert_one_collection_error(
        ret,
        output,
        root,
        "fixture linked resolves through a symlink to",
        str(outside.resolve()),
        f"outside the definition root {root.resolve()}",
        "copy the fixture into the root",
    )


def test_a_fixture_that_is_a_file_is_a_collection_error(pytester: pytest.Pytester) -> None:
    root = _root(pytester, "fixture/README.md")

    ret, output = _collect(pytester, root)

    _assert_one_collection_error(
        ret,
        output,
        root,
        "fixture fixture/README.md is a file, not a directory",
        "declare the directory that contains it",
    )


def test_a_missing_fixture_names_the_root_and_the_root_option(
    pytester: pytest.Pytester,
) -> None:
    root = _root(pytester, "fixtures/empty-repo")

    ret, output = _collect(pytester, root)

    _assert_one_collection_error(
        ret,
        output,
        root,
        "fixture fixtures/empty-repo does not exist",
        f"resolved against the definition root {root.resolve()}",
        "--skill-eval-root",
    )


def test_a_fixture_inside_the_root_through_a_symlink_is_accepted(
    pytester: pytest.Pytester,
) -> None:
    root = _root(pytester, "alias")
    (root / "alias").symlink_to("fixture", target_is_directory=True)

    ret, output = _collect(pytester, root)

    assert ret == 0, output
    assert "g[candidate]" in output
    assert json.loads((root / "groups" / "g.json").read_text())["fixture"] == "alias"

"""Loading files: containment, suites, symlinks, JSON errors."""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.definitions import DefinitionError, load_definition
from pytest_skill_eval.hosts.registry import registered

BASE = Path(__file__).parent / "data" / "base"


def _group_document(group_id: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((BASE / "description.json").read_text(encoding="utf-8"))
    document["id"] = group_id
    return document


def _write(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def _suite(path: Path, *groups: str, suite_id: str = "core") -> Path:
    return _write(
        path, {"schema_version": 1, "kind": "suite", "id": suite_id, "groups": list(groups)}
    )


def _load_error(path: Path, root: Path) -> DefinitionError:
    with pytest.raises(DefinitionError) as caught:
        load_definition(path, root, registered())
    return caught.value


def test_direct_group_records_path_hash_and_raw(tmp_path: Path) -> None:
    file = _write(tmp_path / "groups" / "a.json", _group_document("alpha"))
    loaded = load_definition(file, tmp_path, registered())
    assert (loaded.kind, loaded.id, loaded.path) == ("group", "alpha", file.resolve())
    (only,) = loaded.groups
    assert only.position == 1
    assert only.sha256 == hashlib.sha256(file.read_bytes()).hexdigest()
    assert only.raw == _group_document("alpha")
    assert type(only.raw) is dict


def test_relative_path_resolves_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path / "g.json", _group_document("alpha"))
    monkeypatch.chdir(tmp_path)
    assert load_definition(Path("g.json"), Path("."), registered()).id == "alpha"


def test_suite_references_resolve_from_the_suite_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path / "groups" / "a.json", _group_document("alpha"))
    _write(tmp_path / "suites" / "local" / "b.json", _group_document("beta"))
    suite = _suite(tmp_path / "suites" / "core.json", "../groups/a.json", "local/b.json")
    monkeypatch.chdir(tmp_path / "groups")  # the cwd must not matter
    loaded = load_definition(suite, tmp_path, registered())
    assert (loaded.kind, loaded.id) == ("suite", "core")
    assert [(g.position, g.group.id, g.path) for g in loaded.groups] == [
        (1, "alpha", (tmp_path / "groups" / "a.json").resolve()),
        (2, "beta", (tmp_path / "suites" / "local" / "b.json").resolve()),
    ]


def test_suite_reference_escaping_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _write(tmp_path / "x.json", _group_document("outside"))
    suite = _suite(root / "suite.json", "../x.json")
    error = _load_error(suite, root)
    assert (error.path, error.pointer) == (suite, "/groups/0")
    assert "outside the definition root" in error.message


def test_symlinked_group_file_pointing_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = _write(tmp_path / "elsewhere" / "g.json", _group_document("outside"))
    (root / "groups").mkdir(parents=True)
    (root / "groups" / "g.json").symlink_to(outside)
    suite = _suite(root / "suite.json", "groups/g.json")
    error = _load_error(suite, root)
    assert (error.path, error.pointer) == (suite, "/groups/0")
    assert "resolves through a symlink" in error.message
    direct = _load_error(root / "groups" / "g.json", root)
    assert (direct.pointer, "resolves through a symlink" in direct.message) == ("", True)


def test_symlinked_group_file_inside_the_root_is_fine(tmp_path: Path) -> None:
    real = _write(tmp_path / "real" / "g.json", _group_document("alpha"))
    (tmp_path / "link.json").symlink_to(real)
    loaded = load_definition(tmp_path / "link.json", tmp_path, registered())
    assert loaded.groups[0].path == real.resolve()


def test_root_reached_through_a_symlink_loads(tmp_path: Path) -> None:
    real_root = tmp_path / "real-root"
    _write(real_root / "groups" / "a.json", _group_document("alpha"))
    _suite(real_root / "suite.json", "groups/a.json")
    linked_root = tmp_path / "linked-root"
    linked_root.symlink_to(real_root, target_is_directory=True)
    # Root and file both spelled through the link, and the file spelled canonically.
    for suite in (linked_root / "suite.json", real_root / "suite.json"):
        loaded = load_definition(suite, linked_root, registered())
        assert loaded.path == (real_root / "suite.json").resolve()
        assert [g.group.id for g in loaded.groups] == ["alpha"]


def test_top_level_file_outside_the_root(tmp_path: Path) -> None:
    file = _write(tmp_path / "g.json", _group_document("alpha"))
    (tmp_path / "root").mkdir()
    error = _load_error(file, tmp_path / "root")
    assert (error.path, error.pointer) == (file, "")
    assert "outside the definition root" in error.message


def test_duplicate_group_ids_in_a_suite(tmp_path: Path) -> None:
    _write(tmp_path / "a.json", _group_document("same"))
    _write(tmp_path / "b.json", _group_document("same"))
    suite = _suite(tmp_path / "suite.json", "a.json", "b.json")
    error = _load_error(suite, tmp_path)
    assert (error.path, error.pointer) == (suite, "/groups/1")
    assert "group id 'same'" in error.message
    assert "/groups/0" in error.message


def test_duplicate_group_references_in_a_suite(tmp_path: Path) -> None:
    _write(tmp_path / "a.json", _group_document("alpha"))
    suite = _suite(tmp_path / "suite.json", "a.json", "a.json")
    error = _load_error(suite, tmp_path)
    assert (error.pointer, "duplicate group reference" in error.message) == ("/groups/1", True)


def test_json_syntax_error_reports_line_and_column(tmp_path: Path) -> None:
    file = tmp_path / "bad.json"
    file.write_text('{\n  "kind": "group",\n  "id": oops\n}\n', encoding="utf-8")
    error = _load_error(file, tmp_path)
    assert (error.path, error.pointer) == (file, "")
    assert "invalid JSON at line 3, column 9" in error.message


def test_group_file_syntax_error_names_the_group_file(tmp_path: Path) -> None:
    group = tmp_path / "groups" / "bad.json"
    group.parent.mkdir()
    group.write_text("{", encoding="utf-8")
    suite = _suite(tmp_path / "suite.json", "groups/bad.json")
    error = _load_error(suite, tmp_path)
    assert error.path == group
    assert "line 1, column 2" in error.message


def test_group_validation_error_names_the_group_file_not_the_suite(tmp_path: Path) -> None:
    document = _group_document("alpha")
    document["tools"] = ["bash"]
    group = _write(tmp_path / "groups" / "a.json", document)
    suite = _suite(tmp_path / "suite.json", "groups/a.json")
    error = _load_error(suite, tmp_path)
    assert (error.path, error.pointer) == (group, "/tools/0")


def test_missing_file(tmp_path: Path) -> None:
    error = _load_error(tmp_path / "nope.json", tmp_path)
    assert (error.path, error.pointer) == (tmp_path / "nope.json", "")
    assert "does not exist" in error.message
    assert "nope.json" in error.message


def test_missing_suite_reference(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite.json", "groups/gone.json")
    error = _load_error(suite, tmp_path)
    assert (error.path, error.pointer) == (suite, "/groups/0")
    assert str(tmp_path / "groups" / "gone.json") in error.message


def test_missing_root(tmp_path: Path) -> None:
    error = _load_error(tmp_path / "g.json", tmp_path / "no-root")
    assert "definition root does not exist" in error.message


def test_directory_instead_of_file(tmp_path: Path) -> None:
    (tmp_path / "dir.json").mkdir()
    assert "not a regular file" in _load_error(tmp_path / "dir.json", tmp_path).message


@pytest.mark.parametrize(
    ("text", "pointer", "fragment"),
    [
        ("[]", "", "must be a JSON object"),
        ('{"schema_version": 1}', "/kind", "missing required field 'kind'"),
        ('{"kind": "groups"}', "/kind", "must be 'group' or 'suite'"),
        ('{"kind": "group", "kind": "suite"}', "/kind", "duplicate key 'kind'"),
        ('{"kind": "group", "input": {"a": 1, "a": 2}}', "/input/a", "duplicate key"),
        ('{"kind": "group", "x": NaN}', "", "NaN is not a JSON value"),
        ('{"kind": "group", "x": 1e999}', "/x", "too large"),
        ('{"kind": "group", "x": "\\ud800"}', "/x", "unpaired"),
    ],
)
def test_document_level_errors(tmp_path: Path, text: str, pointer: str, fragment: str) -> None:
    file = tmp_path / "g.json"
    file.write_text(text, encoding="utf-8")
    error = _load_error(file, tmp_path)
    assert (error.pointer, fragment in error.message) == (pointer, True), error.message


def test_non_utf8_file(tmp_path: Path) -> None:
    file = tmp_path / "g.json"
    file.write_bytes(b'{"kind": "\xff"}')
    assert "not UTF-8" in _load_error(file, tmp_path).message


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    file = tmp_path / "g.json"
    file.write_bytes(b"\xef\xbb\xbf" + json.dumps(_group_document("alpha")).encode())
    assert load_definition(file, tmp_path, registered()).id == "alpha"


@pytest.mark.parametrize(
    ("suite", "pointer", "fragment"),
    [
        (
            {"schema_version": 1, "kind": "suite", "id": "s", "groups": []},
            "/groups",
            "not be empty",
        ),
        ({"schema_version": 1, "kind": "suite", "id": "s"}, "/groups", "missing"),
        ({"schema_version": 1, "kind": "suite", "id": "S", "groups": ["a"]}, "/id", "an ID"),
        (
            {"schema_version": 2, "kind": "suite", "id": "s", "groups": ["a"]},
            "/schema_version",
            "1",
        ),
        (
            {"schema_version": 1, "kind": "suite", "id": "s", "groups": ["/a.json"]},
            "/groups/0",
            "not absolute",
        ),
        (
            {"schema_version": 1, "kind": "suite", "id": "s", "groups": [""]},
            "/groups/0",
            "non-empty",
        ),
        ({"schema_version": 1, "kind": "suite", "id": "s", "groups": [1]}, "/groups/0", "string"),
        (
            {"schema_version": 1, "kind": "suite", "id": "s", "groups": ["a"], "x": 1},
            "/x",
            "unknown field",
        ),
    ],
)
def test_suite_shape_errors(
    tmp_path: Path, suite: dict[str, Any], pointer: str, fragment: str
) -> None:
    file = _write(tmp_path / "suite.json", suite)
    error = _load_error(file, tmp_path)
    assert (error.path, error.pointer, fragment in error.message) == (file, pointer, True)


def test_suites_cannot_nest(tmp_path: Path) -> None:
    _write(tmp_path / "a.json", _group_document("alpha"))
    inner = _suite(tmp_path / "inner.json", "a.json", suite_id="inner")
    outer = _suite(tmp_path / "outer.json", "inner.json")
    error = _load_error(outer, tmp_path)
    assert (error.path, error.pointer) == (inner, "/kind")
    assert "cannot nest" in error.message


def test_definition_error_is_one_line_and_picklable(tmp_path: Path) -> None:
    error = DefinitionError(tmp_path / "g.json", "", "first line\nsecond line")
    assert str(error) == f"{tmp_path / 'g.json'}: /: first line second line"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.pointer, copy.message, str(copy)) == (
        error.path,
        error.pointer,
        error.message,
        str(error),
    )


@pytest.mark.parametrize("depth", [300, 5000])
def test_deeply_nested_values_are_a_definition_error(tmp_path: Path, depth: int) -> None:
    document = _group_document("alpha")
    text = json.dumps(document).replace('"fixture": null', f'"fixture": {"[" * depth}{"]" * depth}')
    file = tmp_path / "g.json"
    file.write_text(text, encoding="utf-8")
    assert _load_error(file, tmp_path).message == "invalid JSON: nested too deeply"

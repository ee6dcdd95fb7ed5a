"""A script read twice in one process: each reader gets its own copy, and a change is seen."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_skill_eval.modelserver.scriptparse import _Parsed, load_script

SCRIPT = """\
version: 1
interactions:
  - response:
      tool_calls:
        - name: read
          arguments: {path: README.md, range: {from: 1}}
  - response: {text: done}
"""


def test_a_reader_changing_its_script_does_not_change_the_next_readers(tmp_path: Path) -> None:
    path = tmp_path / "candidate.yaml"
    path.write_text(SCRIPT, encoding="utf-8")
    first = load_script(path)
    arguments = first.interactions[0].response.tool_calls[0].arguments
    arguments["path"] = "elsewhere.md"  # type: ignore[index]
    arguments["range"]["from"] = 9
    again = load_script(path)
    assert again.interactions[0].response.tool_calls[0].arguments == {
        "path": "README.md",
        "range": {"from": 1},
    }


def test_a_changed_file_is_read_anew_even_with_the_same_size_and_time(tmp_path: Path) -> None:
    path = tmp_path / "candidate.yaml"
    path.write_text(SCRIPT, encoding="utf-8")
    before = path.stat()
    first = load_script(path)
    path.write_text(SCRIPT.replace("text: done", "text: gone"), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    second = load_script(path)
    assert first.interactions[1].response.text == "done"
    assert second.interactions[1].response.text == "gone"
    assert second.sha256 != first.sha256


def test_the_oldest_scripts_are_dropped_past_the_byte_limit(tmp_path: Path) -> None:
    kept = _Parsed(limit=2 * len(SCRIPT))
    paths = [tmp_path / f"{name}.yaml" for name in ("a", "b", "c")]
    for path in paths:
        path.write_text(SCRIPT, encoding="utf-8")
        kept.keep((path, "digest"), load_script(path), len(SCRIPT))
    kept.keep((tmp_path / "huge.yaml", "digest"), load_script(paths[0]), 3 * len(SCRIPT))
    assert [kept.get((path, "digest")) is not None for path in paths] == [False, True, True]
    assert kept.get((tmp_path / "huge.yaml", "digest")) is None

"""Gemini CLI's eager copy: the build and its checks (the change and its proof:
tests/hosts/test_factories.py).

That the copy is the same Gemini CLI end to end (the same requests, activity and files) is
tests/hosts/test_gemini_eager_e2e.py.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_skill_eval.evidence import verified
from pytest_skill_eval.hosts.binaries import esbuild_binary
from pytest_skill_eval.hosts.gemini_cli import binary as gemini_binary
from pytest_skill_eval.hosts.gemini_cli import eager
from pytest_skill_eval.hosts.gemini_cli.eager import (
    MANIFEST,
    EagerCopy,
    EagerError,
    checked_copy,
    eager_copy,
)
from pytest_skill_eval.hosts.gemini_cli.registration import PINNED
from pytest_skill_eval.hosts.runtime import node_runtime
from tests.support.files import write
from tests.support.paths import REPO

INSTALLED = REPO / "node_modules" / "@google" / "gemini-cli"
ENTRY = INSTALLED / "bundle" / "gemini.js"
ESBUILD = esbuild_binary(INSTALLED)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EagerCopy]:
    """The installed Gemini CLI's copy, built once into a cache of the module's own."""
    assert ESBUILD is not None
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(cache))
        checked_copy.cache_clear()
        yield eager_copy(ENTRY, PINNED, esbuild=ESBUILD, node=node_runtime(None, REPO).path)
    checked_copy.cache_clear()


@pytest.fixture
def home(built: EagerCopy, tmp_path: Path) -> Iterator[Path]:
    """A copy of the built copy, to change (its link to node_modules as it was)."""
    copied = tmp_path / "home"
    shutil.copytree(built.entry.parents[2], copied, symlinks=True)
    checked_copy.cache_clear()
    yield copied
    checked_copy.cache_clear()


@pytest.mark.pi
@pytest.mark.gemini
def test_the_installed_gemini_cli_is_copied_changed_proven_and_started_once(
    built: EagerCopy, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ESBUILD is not None
    home = built.entry.parents[2]
    monkeypatch.setenv("XDG_CACHE_HOME", str(home.parents[2]))
    assert home.parent == home.parents[2] / "pytest-skill-eval" / "gemini-eager"
    assert built.entry == home / "pkg" / "bundle" / "gemini.js"
    manifest = json.loads((home / MANIFEST).read_text("utf-8"))
    assert manifest["sha256"] == built.sha256
    assert sum(manifest["changed"].values()) > 1000  # the factories of every chunk it loads
    assert os.readlink(home / "pkg" / "node_modules") == str(INSTALLED.parents[1])
    assert not (home / "printed").exists()  # esbuild's printing for the proof is not kept
    unchanged = [name for name in manifest["files"] if name.startswith("bundle/builtin/")]
    assert unchanged
    for name in unchanged:
        assert (home / "pkg" / name).read_bytes() == (INSTALLED / name).read_bytes()
    stamp = (home / MANIFEST).stat().st_mtime_ns
    checked_copy.cache_clear()
    again = eager_copy(ENTRY, PINNED, esbuild=ESBUILD, node=node_runtime(None, REPO).path)
    assert again == built  # not built again
    assert (home / MANIFEST).stat().st_mtime_ns == stamp
    assert not [p for p in home.parent.iterdir() if p.name.startswith(".") and p.is_dir()]


@pytest.mark.pi
@pytest.mark.gemini
def test_a_changed_file_is_refused_by_its_hash_and_in_a_worker_by_its_size(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(home.parent / "cache"))
    monkeypatch.setattr(verified, "_SETTLED_S", 0.0)  # copied just now: remembered at once
    target = home / "pkg" / "bundle" / "gemini.js"
    assert checked_copy(home).entry == target  # remembered as matching
    checked_copy.cache_clear()
    target.write_text(target.read_text("utf-8").replace("node", "nope", 1), "utf-8")
    with pytest.raises(EagerError, match=f"does not match .*; delete {home} to build it again"):
        checked_copy(home)
    assert checked_copy(home, hashed=False).entry == target  # the same size
    with target.open("a") as appended:
        appended.write("\n")
    checked_copy.cache_clear()
    with pytest.raises(EagerError, match="does not match"):
        checked_copy(home, hashed=False)


@pytest.mark.pi
@pytest.mark.gemini
def test_a_planted_file_or_a_replaced_link_is_refused(home: Path) -> None:
    (home / "pkg" / "bundle" / "planted.js").write_text("x", "utf-8")
    with pytest.raises(EagerError, match="its files differ"):
        checked_copy(home, hashed=False)
    (home / "pkg" / "bundle" / "planted.js").unlink()
    link = home / "pkg" / "node_modules"
    link.unlink()
    write(link / "node-pty" / "index.js", "module.exports = {}\n")
    checked_copy.cache_clear()
    with pytest.raises(EagerError, match=r"is not the link to .* it was built with"):
        checked_copy(home, hashed=False)


@pytest.mark.pi
@pytest.mark.gemini
@pytest.mark.parametrize("files", ['{"a": 2}', '["a"]', '{"a": ["x", 1]}'])
def test_a_malformed_manifest_is_one_error_not_a_traceback(home: Path, files: str) -> None:
    manifest = json.loads((home / MANIFEST).read_text("utf-8"))
    text = json.dumps({**manifest, "files": "FILES"}).replace('"FILES"', files)
    (home / MANIFEST).write_text(text, "utf-8")
    with pytest.raises(EagerError, match="the copy's manifest cannot be read"):
        checked_copy(home)


@pytest.mark.pi
@pytest.mark.gemini
def test_a_worker_refuses_a_copy_changed_after_the_controller_checked_it(
    built: EagerCopy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(built.entry.parents[5]))
    checked = gemini_binary.check_gemini(ENTRY, None, REPO)
    handed = gemini_binary.with_eager_copy(checked).handover()
    assert handed["eager"] == built.sha256
    checked_copy.cache_clear()
    adopted = gemini_binary.GeminiBinary.from_handover(handed)
    assert adopted.command()[-1] == str(built.entry)
    assert adopted.record()["form"] == {"kind": "eager", "sha256": built.sha256}
    with pytest.raises(EagerError, match="changed since the controller checked it"):
        gemini_binary.GeminiBinary.from_handover({**handed, "eager": "0" * 64})


@pytest.mark.pi
@pytest.mark.gemini
def test_without_esbuild_subjects_run_gemini_clis_own_files_and_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(gemini_binary, "esbuild_binary", lambda package: None)
    checked = gemini_binary.check_gemini(ENTRY, None, REPO)
    said: list[str] = []
    chosen = gemini_binary.with_eager_copy(checked, said.append)
    assert chosen == checked
    assert chosen.record()["form"] == {"kind": "stock"}
    assert said == [
        "skill-eval: Gemini CLI's eager copy cannot be used (esbuild is not installed beside "
        "Gemini CLI or this package); subjects run its own files"
    ]
    assert not (tmp_path / "cache").exists()


def test_another_esbuild_than_the_pinned_one_is_refused(tmp_path: Path) -> None:
    fake = write(tmp_path / "esbuild", "#!/bin/sh\necho 0.1.0\n", mode=0o755)
    with pytest.raises(EagerError, match=r"is esbuild 0\.1\.0, not the pinned "):
        eager_copy(ENTRY, PINNED, esbuild=fake, node=Path(os.devnull))


def test_a_node_modules_above_the_install_or_inside_the_package_refuses_a_copy(
    tmp_path: Path,
) -> None:
    """A copy finds dependencies only in the node_modules holding Gemini CLI: where Node would
    also look elsewhere (a nested install's outer node_modules), no copy is made."""
    modules = tmp_path / "outer" / "project" / "node_modules"
    bundle = modules / "@google" / "gemini-cli" / "bundle"
    bundle.mkdir(parents=True)
    eager._one_lookup(bundle, modules)
    (tmp_path / "outer" / "node_modules" / "node-pty").mkdir(parents=True)
    with pytest.raises(EagerError, match=r"Node finds modules for .* in .*outer/project/node"):
        eager._one_lookup(bundle, modules)
    shutil.rmtree(tmp_path / "outer" / "node_modules")
    (bundle.parent / "node_modules").mkdir()
    with pytest.raises(EagerError, match=r"not in .* alone"):
        eager._one_lookup(bundle, modules)


def test_a_bundle_outside_an_installed_gemini_cli_package_is_refused(tmp_path: Path) -> None:
    entry = write(tmp_path / "pkg" / "bundle" / "gemini.js", "console.log(1)\n")
    write(tmp_path / "pkg" / "package.json", json.dumps({"name": "not-gemini"}))
    assert ESBUILD is not None
    with pytest.raises(EagerError, match="is not the entry of an installed @google/gemini-cli"):
        eager_copy(entry, PINNED, esbuild=ESBUILD, node=Path(os.devnull))


def test_a_package_changed_in_place_gets_a_copy_of_its_own(tmp_path: Path) -> None:
    package = tmp_path / "gemini-cli"
    write(package / "package.json", json.dumps({"name": "@google/gemini-cli"}))
    chunk = write(package / "bundle" / "gemini.js", "console.log(1)\n")
    write(package / "node_modules" / "ignored.js", "x")  # never part of the package's files
    before = eager._fingerprint(package)
    os.utime(chunk, ns=(1, 1))  # reinstalled: the same bytes
    assert eager._fingerprint(package) == before
    chunk.write_text("console.log(2)\n", "utf-8")  # the same size, patched in place
    assert eager._fingerprint(package) != before

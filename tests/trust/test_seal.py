"""A result is sealed: `skill-eval verify` names every tampering, `--seal` proves the result."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_skill_eval.commands import cli
from pytest_skill_eval.evidence import EvidenceError, json_bytes, layout, write_seal
from tests.support.files import read_json
from tests.support.roots import body_group, fast_dir, make_root, on_fast_host, write_answer
from tests.support.runs import result_dir, skill_eval_args
from tests.support.shared import once, shared_setup

# Every test reads a result of one real run (on the fastest host: the seal covers evidence, not
# the host that made it); the fast tier (-m "not pi") starts no host.
pytestmark = [pytest.mark.pi, pytest.mark.codex]

GROUPS = ("alpha", "beta")
ALPHA, BETA = (fast_dir(g) for g in GROUPS)  # their result directories
SEAL_LINE = re.compile(r"^result (\S+) \[[a-z-]+\] trial 1: .* seal sha256:([0-9a-f]{64})$", re.M)


@dataclass(frozen=True)
class Built:
    """A definition root holding one real result, and what its run printed."""

    root: Path
    stdout: str
    junit: Path


def _build(directory: Path) -> None:
    root, junit = directory / "root", directory / "junit.xml"
    scripts = {f"{g}/{v}": write_answer("yes") for g in GROUPS for v in ("baseline", "candidate")}
    make_root(root, [body_group(g, **on_fast_host()) for g in GROUPS], scripts)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *skill_eval_args(root), "-q", f"--junitxml={junit}"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (directory / "stdout.txt").write_text(done.stdout, encoding="utf-8")


@pytest.fixture(scope="module")
@shared_setup
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Two body groups run once for the whole test run: real Pi, scripted model."""
    directory = once(tmp_path_factory, "seal", _build)
    stdout = (directory / "stdout.txt").read_text(encoding="utf-8")
    return Built(directory / "root", stdout, directory / "junit.xml")


@pytest.fixture
def result(built: Built, tmp_path: Path) -> Path:
    """A private copy of the built result."""
    copy = tmp_path / "root"
    shutil.copytree(built.root, copy, symlinks=True)
    return result_dir(copy)


def printed_root(built: Built) -> str:
    """The seal root the run's terminal summary printed."""
    (match,) = SEAL_LINE.finditer(built.stdout)
    return match.group(2)


def test_the_terminal_and_junit_carry_the_root_that_the_seal_records(built: Built) -> None:
    sealed = result_dir(built.root)
    seal = read_json(sealed / layout.SEAL)
    assert printed_root(built) == seal["root"]
    assert SEAL_LINE.search(built.stdout).group(1) == sealed.name  # type: ignore[union-attr]
    properties = {
        p.get("name"): p.get("value") for p in ET.parse(built.junit).getroot().iter("property")
    }
    assert properties["skill-eval-seal"] == f"sha256:{seal['root']}"
    names = [leaf["name"] for leaf in seal["leaves"]]
    assert names == [
        "invocation.json",
        "planned-groups",
        f"groups/{ALPHA}/manifest.json",
        f"groups/{BETA}/manifest.json",
        "summary.json",
    ]
    assert seal["leaves"][1]["groups"] == list(GROUPS)  # planned ids; directories below
    manifest = sealed / "groups" / ALPHA / "manifest.json"
    assert seal["leaves"][2]["sha256"] == hashlib.sha256(manifest.read_bytes()).hexdigest()


def test_an_untouched_result_verifies_with_the_printed_root(
    built: Built, result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = printed_root(built)
    assert cli.main(["verify", str(result), "--seal", f"sha256:{root}"]) == 0
    assert capsys.readouterr().out == f"verified: {result} (seal sha256:{root})\n"
    assert cli.main(["verify", str(result), "--seal", root]) == 0
    assert cli.main(["verify", str(result), "--seal", "0" * 64]) == 1
    assert f"hashes to sha256:{root}, not the expected sha256:{'0' * 64}" in capsys.readouterr().out


def _edit_json(path: Path, change: Callable[[dict[str, object]], None]) -> None:
    data = read_json(path)
    change(data)
    path.write_bytes(json_bytes(data))


def _edit_summary(result: Path) -> str:
    _edit_json(result / "summary.json", lambda s: s.update(state="complete-and-better"))
    return f"changed: {result / 'summary.json'} (not the sealed summary.json)"


def _edit_invocation(result: Path) -> str:
    _edit_json(result / "invocation.json", lambda s: s.update(failOn="none"))
    return f"changed: {result / 'invocation.json'} (not the sealed invocation.json)"


def _delete_group(result: Path) -> str:
    shutil.rmtree(result / "groups" / BETA)
    return f"missing: {result / 'groups' / BETA} (a sealed group)"


def _rewrite_with_manifest(result: Path) -> str:
    group = result / "groups" / ALPHA
    final = group / "candidate" / "final.md"
    final.write_text("a better answer\n", encoding="utf-8")
    manifest = read_json(group / "manifest.json")
    manifest["files"]["candidate/final.md"] = hashlib.sha256(final.read_bytes()).hexdigest()
    (group / "manifest.json").write_bytes(json_bytes(manifest))
    return f"changed: {group / 'manifest.json'} (not the sealed manifest"


TAMPERINGS = {
    "edited-summary": _edit_summary,
    "edited-invocation": _edit_invocation,
    "deleted-group": _delete_group,
    "rewritten-manifest": _rewrite_with_manifest,
}


@pytest.mark.parametrize("tamper", TAMPERINGS.values(), ids=TAMPERINGS.keys())
def test_each_tampering_fails_verify_and_is_named(
    result: Path, tamper: Callable[[Path], str], capsys: pytest.CaptureFixture[str]
) -> None:
    expected = tamper(result)
    assert cli.main(["verify", str(result)]) == 1
    captured = capsys.readouterr()
    assert any(line.startswith(expected) for line in captured.out.splitlines()), captured.out
    assert "verified" not in captured.out


@pytest.mark.parametrize("tamper", TAMPERINGS.values(), ids=TAMPERINGS.keys())
def test_a_recomputed_seal_is_caught_by_the_printed_root(
    built: Built, result: Path, tamper: Callable[[Path], str], capsys: pytest.CaptureFixture[str]
) -> None:
    root = printed_root(built)
    tamper(result)
    # The attacker rewrites the seal too, consistently: the result verifies on its own...
    (result / layout.SEAL).unlink()
    forged = write_seal(result)
    assert cli.main(["verify", str(result)]) == 0
    capsys.readouterr()
    # ...but not as the result the run printed.
    assert cli.main(["verify", str(result), "--seal", f"sha256:{root}"]) == 1
    out = capsys.readouterr().out
    assert (
        f"root mismatch: {result} hashes to sha256:{forged}, not the expected sha256:{root}" in out
    )


def test_a_missing_or_edited_seal_is_named(
    result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seal_path = result / layout.SEAL
    seal = read_json(seal_path)
    seal["leaves"][-1]["sha256"] = "0" * 64
    seal_path.write_bytes(json_bytes(seal))
    assert cli.main(["verify", str(result)]) == 1
    assert f"changed: {seal_path} (its root hash is not the hash of its leaves" in (
        capsys.readouterr().err
    )
    seal_path.unlink()
    assert cli.main(["verify", str(result)]) == 1
    assert f"missing: {seal_path}" in capsys.readouterr().out.splitlines()


def test_a_seal_that_is_not_a_hash_is_one_clear_error(
    result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["verify", str(result), "--seal", "abc"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "skill-eval: --seal expects the seal's root hash (sha256:<64 hex digits>, as the run "
        "printed after `seal`), not 'abc'\n"
    )


def test_root_names_the_definition_root_for_verify_as_for_plan(
    result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `verify --root DIR` is the definition root the result id is looked up under.
    definition_root = result.parents[2]  # <root>/.skill-eval/runs/<id>
    assert cli.main(["verify", result.name, "--root", str(definition_root)]) == 0
    assert capsys.readouterr().out.startswith(f"verified: {result} ")


def test_the_old_verify_root_hash_spelling_still_works_with_one_deprecation_line(
    built: Built, result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = printed_root(built)
    assert cli.main(["verify", str(result), "--root", f"sha256:{root}"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "skill-eval: `verify --root HASH` is deprecated; use `verify --seal HASH` "
        "(--root names the definition root, as for plan)"
    ]
    assert cli.main(["verify", str(result), "--root", "0" * 64]) == 1
    assert f"not the expected sha256:{'0' * 64}" in capsys.readouterr().out


def test_the_seal_is_json_and_written_once(result: Path) -> None:
    assert json.loads((result / layout.SEAL).read_text(encoding="utf-8"))["algorithm"] == "sha256"
    with pytest.raises(EvidenceError, match="never rewritten"):
        write_seal(result)


def test_an_empty_directory_added_or_removed_fails_verify_with_the_printed_root(
    built: Built, result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = f"sha256:{printed_root(built)}"
    added = result / "groups" / ALPHA / "candidate" / "planted"
    added.mkdir()
    assert cli.main(["verify", str(result), "--seal", root]) == 1
    assert capsys.readouterr().out.splitlines() == [f"extra: {added}/ (a directory)"]
    added.rmdir()
    assert cli.main(["verify", str(result), "--seal", root]) == 0
    capsys.readouterr()
    # An empty directory the run left (as a subject may) is listed, and its removal is named.
    manifest = read_json(result / "groups" / ALPHA / "manifest.json")
    assert "candidate/workspace" in manifest["directories"]
    removed = result / "groups" / ALPHA / "candidate" / "workspace"
    shutil.rmtree(removed)
    assert cli.main(["verify", str(result), "--seal", root]) == 1
    assert f"missing: {removed}/ (a directory)" in capsys.readouterr().out.splitlines()


def test_a_manifest_of_the_earlier_format_verifies_its_files_and_claims_no_directories(
    result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A result sealed before manifests listed directories: its files are still proved, and
    # `verify` names each manifest whose directories it cannot vouch for.
    group = result / "groups" / ALPHA
    manifest = read_json(group / "manifest.json")
    del manifest["directories"]
    manifest["schema_version"] = 1
    (group / "manifest.json").write_bytes(json_bytes(manifest))
    (result / layout.SEAL).unlink()
    write_seal(result)
    (group / "candidate" / "planted").mkdir()
    assert cli.main(["verify", str(result)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"files only: {group / 'manifest.json'} is of the earlier manifest format, which lists "
        "no directories: its files are verified, a directory added or removed there is not"
    ]
    (group / "candidate" / "final.md").write_text("edited\n", encoding="utf-8")
    assert cli.main(["verify", str(result)]) == 1
    assert f"changed: {group / 'candidate' / 'final.md'}" in capsys.readouterr().out


def test_a_file_or_link_added_to_groups_fails_verify(
    built: Built, result: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = f"sha256:{printed_root(built)}"
    stray = result / "groups" / "stray.json"
    stray.write_text("{}\n", encoding="utf-8")
    assert cli.main(["verify", str(result), "--seal", root]) == 1
    assert capsys.readouterr().out.splitlines() == [f"extra: {stray}"]
    stray.unlink()
    # A link to a group that verifies on its own is still no group the seal covers.
    shutil.copytree(result / "groups" / ALPHA, tmp_path / "elsewhere", symlinks=True)
    link = result / "groups" / "linked"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert cli.main(["verify", str(result), "--seal", root]) == 1
    assert capsys.readouterr().out.splitlines() == [f"extra: {link}"]

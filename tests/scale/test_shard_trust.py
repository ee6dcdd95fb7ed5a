"""A shard's evidence cannot be forged and then sealed: each shard seals its output and prints its
root; a merge bound to the roots CI printed refuses any other shard and records them, so
`verify --seal` proves the chain; no symlink in a shard is merged or followed; plan and shard
records are validated field by field, and nothing is written outside `-o`.

Every test attacks a copy of two real shards (on Codex, the real host that starts fastest: what
is under test is the seal and the merge, which never depend on the host)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from pytest_skill_eval.evidence import json_bytes
from pytest_skill_eval.evidence.seal import seal_root
from pytest_skill_eval.evidence.shard_seal import shard_seal_leaves
from tests.support.files import read_json
from tests.support.roots import FAST_HOST, fast_dir, improving_root
from tests.support.runs import run_detached
from tests.support.shared import once, shared_setup

pytestmark = [pytest.mark.pi, pytest.mark.codex]

G0, G1 = fast_dir("g0"), fast_dir("g1")
SHARD_LINE = re.compile(r"^shard (\d)/2: (\S+) seal sha256:([0-9a-f]{64})$", re.M)


def _build(base: Path) -> None:
    """A plan of two groups and its two shards, each on a machine of its own, with JUnit."""
    source = improving_root(base / "source", 2, FAST_HOST)
    plan = base / "plan.json"
    argv = ["plan", str(source / "suite.json"), "--root", str(source), "-o", str(plan)]
    assert skill_eval([*argv, "--cassettes", str(source / "scripts")]) == 0
    for k in (1, 2):
        machine = base / f"machine{k}"
        shutil.copytree(source, machine)
        done = run_detached(
            machine, "--skill-eval-plan", str(plan), "--skill-eval-shard", f"{k}/2",
            f"--junitxml={base / f'shard{k}.xml'}",
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        (base / f"shard{k}.out").write_text(done.stdout, encoding="utf-8")


@pytest.fixture(scope="module")
@shared_setup
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plan and its two shards, built once for the test run; tests attack copies."""
    return once(tmp_path_factory, "shard-trust", _build)


def _printed_roots(base: Path) -> dict[int, str]:
    """Each shard's root as its terminal summary printed it."""
    roots = {}
    for k in (1, 2):
        ((index, _path, root),) = SHARD_LINE.findall((base / f"shard{k}.out").read_text())
        roots[int(index)] = root
    return roots


def _shards(built: Path, tmp_path: Path) -> list[Path]:
    """Private copies of the two shard directories (links kept as links)."""
    copies = []
    for k in (1, 2):
        (shard,) = (built / f"machine{k}" / ".skill-eval" / "runs").glob("*.shards/*-of-2.*")
        copy = tmp_path / f"shard{k}" / shard.name
        shutil.copytree(shard, copy, symlinks=True)
        copies.append(copy)
    return copies


def _result(built: Path) -> str:
    return str(read_json(built / "plan.json")["results"][0]["id"])


def _group(built: Path, shard: Path) -> Path:
    """The one group directory a shard holds."""
    (group,) = (shard / _result(built) / "groups").iterdir()
    return group


def _rehash(group: Path) -> None:
    """What a forger does after editing a group: rewrite its manifest to match."""
    manifest = group / "manifest.json"
    recorded = read_json(manifest)
    files = recorded["files"]
    for name in files:
        path = group / name
        if path.is_symlink():
            text = os.fsencode(os.readlink(path))
            files[name] = hashlib.sha256(b"symlink\0" + text).hexdigest()
        else:
            files[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest.chmod(0o644)
    manifest.write_bytes(json_bytes({**recorded, "files": files}))


def _reseal(built: Path, shard: Path) -> None:
    """What a forger does last: rewrite the shard's own seal to match the forgery."""
    seal = shard / "shard-seal.json"
    leaves = shard_seal_leaves(shard, [_result(built)])
    seal.chmod(0o644)
    record = {"schema_version": 1, "algorithm": "sha256", "leaves": leaves}
    seal.write_bytes(json_bytes({**record, "root": seal_root(leaves)}))


def _edit(path: Path, old: str, new: str) -> None:
    path.chmod(0o644)
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def _merge(built: Path, shards: list[Path], out: Path, *extra: str) -> int:
    return skill_eval(
        ["merge", str(built / "plan.json"), *map(str, shards), "-o", str(out), *extra]
    )


def _bound(built: Path) -> list[str]:
    return [f"--shard-root={k}=sha256:{root}" for k, root in _printed_roots(built).items()]


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


# -- the shard seal --------------------------------------------------------------------------


def test_each_shard_prints_and_records_its_root(built: Path, tmp_path: Path) -> None:
    printed = _printed_roots(built)
    for k, shard in enumerate(_shards(built, tmp_path), start=1):
        seal = read_json(shard / "shard-seal.json")
        assert seal["root"] == printed[k]
        assert [leaf["name"] for leaf in seal["leaves"]] == [
            "shard.json",
            f"{_result(built)}/groups/{(G0, G1)[k - 1]}/manifest.json",
        ]
        props = {
            p.get("name"): p.get("value")
            for p in ElementTree.parse(built / f"shard{k}.xml").getroot().iter("property")
        }
        assert props["skill-eval-shard-seal"] == f"sha256:{printed[k]}"


def test_a_bound_merge_records_the_roots_and_verify_proves_the_chain(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = _printed_roots(built)
    roots_file = tmp_path / "roots.txt"
    roots_file.write_text(f"# from shard 2's log\n2=sha256:{printed[2]}\n", encoding="utf-8")
    out = tmp_path / "merged"
    shards = _shards(built, tmp_path)
    bind = [f"--shard-root=1={printed[1]}", "--shard-roots", str(roots_file)]
    assert _merge(built, shards, out, *bind) == 0
    (merged_root,) = re.findall(
        r"^merged: .* seal sha256:([0-9a-f]{64})$", capsys.readouterr().out, re.M
    )
    result = out / _result(built)
    recorded = read_json(result / "seal.json")["shards"]
    assert [(s["index"], s["root"], s["bound"]) for s in recorded] == [
        (1, printed[1], True),
        (2, printed[2], True),
    ]
    assert skill_eval(["verify", str(result), "--seal", f"sha256:{merged_root}"]) == 0
    # The chain holds below the merged seal too: a group rewritten with its manifest and the
    # merged seal recomputed around it is not the manifest its shard sealed.
    forged = tmp_path / "forged" / result.name
    shutil.copytree(result, forged, symlinks=True)
    _edit(forged / "groups" / G0 / "candidate" / "final.md", "done", "forged")
    _rehash(forged / "groups" / G0)
    seal = read_json(forged / "seal.json")
    for leaf in seal["leaves"]:
        if leaf["name"] == f"groups/{G0}/manifest.json":
            leaf["sha256"] = hashlib.sha256(
                (forged / "groups" / G0 / "manifest.json").read_bytes()
            ).hexdigest()
    seal["root"] = seal_root(seal["leaves"])
    (forged / "seal.json").chmod(0o644)
    (forged / "seal.json").write_bytes(json_bytes(seal))
    capsys.readouterr()
    assert skill_eval(["verify", str(forged)]) == 1
    assert f"not the manifest shard 1/2 sealed under sha256:{printed[1]}" in capsys.readouterr().out


def test_verify_with_a_wrong_merged_root_fails(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "merged"
    assert _merge(built, _shards(built, tmp_path), out, *_bound(built)) == 0
    assert skill_eval(["verify", str(out / _result(built)), "--seal", "sha256:" + "0" * 64]) == 1


# -- forged evidence -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["run.json", "final.md"])
def test_evidence_edited_and_rehashed_is_refused_by_a_bound_merge(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    shards = _shards(built, tmp_path)
    group = _group(built, shards[0])
    old, new = ('"complete"', '"forged"') if name == "run.json" else ("done", "forged")
    _edit(group / "baseline" / name, old, new)
    _rehash(group)
    _reseal(built, shards[0])  # even the shard's own seal matches the forgery now
    out = tmp_path / "merged"
    assert _merge(built, shards, out, *_bound(built)) == 1
    err = _one_error(capsys)
    printed = _printed_roots(built)
    assert f"shard 1/2 ({shards[0]}) hashes to sha256:" in err
    assert f"not the bound sha256:{printed[1]}" in err
    assert not out.exists() or not any(p for p in out.iterdir() if not p.name.startswith("."))


def test_evidence_changed_after_sealing_is_refused_even_unbound(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = _shards(built, tmp_path)
    group = _group(built, shards[1])
    _edit(group / "candidate" / "run.json", '"complete"', '"forged"')
    _rehash(group)  # the manifest matches, the shard's seal does not
    assert _merge(built, shards, tmp_path / "merged") == 1
    err = _one_error(capsys)
    assert f"shard 2/2 ({shards[1]}) hashes to sha256:" in err
    assert f"not its sealed sha256:{_printed_roots(built)[2]}" in err


def test_an_edited_shard_record_is_refused_by_a_bound_merge(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = _shards(built, tmp_path)
    record = read_json(shards[0] / "shard.json")
    record["budget"] = {"maxCost": 1000.0, "spent": 0.0, "exhausted": False}
    (shards[0] / "shard.json").chmod(0o644)
    (shards[0] / "shard.json").write_bytes(json_bytes(record))
    _reseal(built, shards[0])
    out = tmp_path / "merged"
    assert _merge(built, shards, out, *_bound(built)) == 1
    assert f"not the bound sha256:{_printed_roots(built)[1]}" in _one_error(capsys)
    assert not (out / _result(built)).exists()


# -- symlinks --------------------------------------------------------------------------------


def test_a_run_record_linked_out_of_the_shard_is_refused(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = _shards(built, tmp_path)
    group = _group(built, shards[0])
    outside = tmp_path / "outside-run.json"
    shutil.copyfile(group / "candidate" / "run.json", outside)
    (group / "candidate" / "run.json").unlink()
    (group / "candidate" / "run.json").symlink_to(outside)
    _rehash(group)
    _reseal(built, shards[0])
    out = tmp_path / "merged"
    assert _merge(built, shards, out) == 1
    err = _one_error(capsys)
    assert f"{group / 'candidate' / 'run.json'} is a symlink" in err
    assert not (out / _result(built)).exists()


def test_a_group_directory_linked_out_of_the_shard_is_refused(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = _shards(built, tmp_path)
    group = _group(built, shards[1])
    elsewhere = tmp_path / "elsewhere" / group.name
    elsewhere.parent.mkdir()
    group.rename(elsewhere)
    group.symlink_to(elsewhere, target_is_directory=True)
    _reseal(built, shards[1])
    out = tmp_path / "merged"
    assert _merge(built, shards, out) == 1
    err = _one_error(capsys)
    assert f"{group} is not a group directory (a symlink?)" in err
    assert not (out / _result(built)).exists()


def test_a_link_the_subject_left_in_its_workspace_is_merged_as_a_link(
    built: Path, tmp_path: Path
) -> None:
    # What a run records for a planted link (a link in the workspace snapshot, hashed by its
    # text) is evidence: it is kept as a link, never followed.
    shards = _shards(built, tmp_path)
    group = _group(built, shards[0])
    (group / "candidate" / "workspace" / "planted").symlink_to("/etc/passwd")
    manifest = read_json(group / "manifest.json")
    manifest["files"]["candidate/workspace/planted"] = ""
    (group / "manifest.json").chmod(0o644)
    (group / "manifest.json").write_bytes(json_bytes(manifest))
    _rehash(group)
    _reseal(built, shards[0])
    out = tmp_path / "merged"
    assert _merge(built, shards, out) == 0
    copied = out / _result(built) / "groups" / G0 / "candidate" / "workspace" / "planted"
    assert copied.is_symlink()
    assert os.readlink(copied) == "/etc/passwd"
    assert skill_eval(["verify", str(out / _result(built))]) == 0


# -- records and the plan --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.pop("completedAt"), "field completedAt: Field required"),
        (lambda r: r["shard"].update(index="one"), "field shard/index: Input should be a valid"),
        (lambda r: r["budget"] or r.update(budget={"spent": "a lot"}), "field budget/maxCost"),
    ],
)
def test_a_damaged_shard_record_is_one_line_naming_the_field(
    built: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: Any,
    field: str,
) -> None:
    shards = _shards(built, tmp_path)
    record = read_json(shards[0] / "shard.json")
    change(record)
    (shards[0] / "shard.json").chmod(0o644)
    (shards[0] / "shard.json").write_text(json.dumps(record), encoding="utf-8")
    assert _merge(built, shards, tmp_path / "merged") == 1
    err = _one_error(capsys)
    assert f"{shards[0] / 'shard.json'}: {field}" in err


def test_a_plan_whose_result_id_climbs_out_writes_nothing_outside(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = read_json(built / "plan.json")
    plan["results"][0]["id"] = "../../escaped"
    evil = tmp_path / "plan.json"
    evil.write_bytes(json_bytes(plan))
    digest = hashlib.sha256(evil.read_bytes()).hexdigest()
    shards = _shards(built, tmp_path)
    for shard in shards:  # shards of that very plan, as far as their records say
        record = read_json(shard / "shard.json")
        record["planSha256"], record["results"] = digest, {"1": "../../escaped"}
        (shard / "shard.json").chmod(0o644)
        (shard / "shard.json").write_bytes(json_bytes(record))
    out = tmp_path / "a" / "b" / "merged"
    argv = ["merge", str(evil), *map(str, shards), "-o", str(out)]
    assert skill_eval(argv) == 1
    err = _one_error(capsys)
    assert f"{evil}: field results/0/id: '../../escaped' is not a safe id" in err
    # A merge that trusted the id wrote the whole result to a/b/escaped, beside -o.
    assert list(tmp_path.rglob("escaped*")) == []


@pytest.mark.parametrize("given", ["1=abc", "one=sha256:" + "0" * 64, "1:" + "0" * 64])
def test_a_malformed_shard_root_is_one_line(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    out = tmp_path / "merged"
    assert _merge(built, _shards(built, tmp_path), out, "--shard-root", given) == 1
    assert "--shard-root: expected K=sha256:<64 hex digits>" in _one_error(capsys)
    assert not out.exists()


def test_an_unbound_merge_says_so_and_records_it(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "merged"
    assert _merge(built, _shards(built, tmp_path), out) == 0
    assert "unbound: shards 1, 2 merged without a root" in capsys.readouterr().out
    recorded = read_json(out / _result(built) / "seal.json")["shards"]
    printed = _printed_roots(built)
    assert [(s["root"], s["bound"]) for s in recorded] == [(printed[1], False), (printed[2], False)]


def test_a_root_bound_to_a_shard_not_given_is_refused(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (first, _second) = _shards(built, tmp_path)
    out = tmp_path / "merged"
    assert _merge(built, [first], out, *_bound(built)) == 1
    assert "--shard-root binds shard 2/2, but no shard 2 of plan" in _one_error(capsys)
    assert not out.exists()


def test_a_shard_without_its_seal_is_refused_unless_bound(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = _shards(built, tmp_path)
    (shards[0] / "shard-seal.json").unlink()
    assert _merge(built, shards, tmp_path / "unbound") == 1
    assert "has no shard-seal.json" in _one_error(capsys)
    # The root CI printed is recomputed from the evidence, not read from the seal file.
    assert _merge(built, shards, tmp_path / "bound", *_bound(built)) == 0

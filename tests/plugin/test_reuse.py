"""`--skill-eval-reuse`: a run is copied from an earlier sealed result only when every input
that determines it hashes the same and that result's seal verifies.

One real Pi run (shared) leaves the sealed result; each refusal is decided over it by the
same function a run uses, on a copy of the definition root with one input changed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.analysis.gate import identities, sequences
from pytest_skill_eval.analysis.trials import aggregate
from pytest_skill_eval.analysis.usage import group_usage
from pytest_skill_eval.commands.cli import main as cli_main
from pytest_skill_eval.definitions import load_definition
from pytest_skill_eval.evidence import write_manifest, write_seal
from pytest_skill_eval.evidence.layout import INPUT_NAMES
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.run import resume
from pytest_skill_eval.run.inputs import InputSources, variant_inputs
from pytest_skill_eval.run.reuse import Found, Reuse, VariantInputs, open_source
from pytest_skill_eval.views.summary import render_markdown
from pytest_skill_eval.views.text import render_text
from pytest_skill_eval.workspace import SourceResolver
from tests.support.files import read_json, write
from tests.support.roots import SKILL, body_group, make_root, variant, write_answer
from tests.support.runs import results, run_detached
from tests.support.shared import SharedRun, shared_run, shared_setup

pytestmark = pytest.mark.pi

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def _git(root: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _make(root: Path) -> Path:
    """g0: both arms from the working tree, with context; g1: a revision group whose baseline
    is the skill at tag v1. Each baseline answers "no", each candidate "yes"."""
    skill = variant(["skills/answer-writer"], target=0, context=["notes"])
    groups = [
        body_group("g0", variants={"baseline": variant(context=["notes"]), "candidate": skill}),
        body_group(
            "g1",
            variants={
                "baseline": {
                    **variant(["skills/answer-writer"], target=0),
                    "source": {"kind": "git", "ref": "v1"},
                },
                "candidate": variant(["skills/answer-writer"], target=0),
            },
        ),
    ]
    scripts = {f"{g}/baseline": write_answer("no") for g in ("g0", "g1")}
    scripts |= {f"{g}/candidate": write_answer("yes") for g in ("g0", "g1")}
    make_root(root, groups, scripts)
    write(root / "notes" / "style.md", "Answers are short.\n")
    write(root / ".gitignore", ".skill-eval/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "v1")
    _git(root, "tag", "v1")
    return root


@pytest.fixture(scope="session")
@shared_setup
def earlier(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The suite run once, every subject started: the sealed result later runs reuse."""
    return shared_run(tmp_path_factory, "reuse-earlier", _make)


def _result(shared: SharedRun) -> Path:
    [result] = results(shared.root)
    return result


def _with_results(shared: SharedRun, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the root with its results: the root, and the earlier result in it."""
    root = tmp_path / "root"
    shutil.copytree(shared.root, root, symlinks=True)
    return root, root / ".skill-eval" / "runs" / _result(shared).name


def _rerun(root: Path, source: Path, *args: str) -> tuple[str, Path]:
    """Run the root again with `args` (it must pass): what it printed, and its new result."""
    done = run_detached(root, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, next(r for r in results(root) if r.name != source.name)


def _records(result: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The run record of each group and variant of `result`."""
    return {
        (g, v): read_json(result / "groups" / g / v / "run.json")
        for g in ("g0", "g1")
        for v in ("baseline", "candidate")
    }


def _copy_root(shared: SharedRun, target: Path) -> Path:
    """The definition root (its Git history too) without its results."""
    shutil.copytree(
        shared.root, target, symlinks=True, ignore=shutil.ignore_patterns(".skill-eval")
    )
    return target


def _edit_json(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _decide(
    shared: SharedRun,
    root: Path,
    group_id: str,
    variant_name: str,
    *,
    host: str | None = None,
    version: str | None = None,
    record: str = "none",
) -> Found | str:
    """Whether trial 1 of a variant of the suite at `root` reuses the shared result's run."""
    result = _result(shared)
    recorded = read_json(result / "groups" / group_id / variant_name / "run.json")["inputs"]
    [loaded] = [
        g
        for g in load_definition(root / "suite.json", root, registered()).groups
        if g.group.id == group_id
    ]
    if host is not None:
        loaded = replace(loaded, group=loaded.group.on_host(host))
    sources = InputSources(
        root,
        SourceResolver(root),
        root / "scripts",
        record,
        lambda _host: version or recorded["host-version"],
    )
    inputs = variant_inputs(sources, loaded, variant_name, 1)
    reuse = Reuse(tuple(open_source(result)))
    return reuse.find(group_id, loaded.group.effective_runtime.host, variant_name, 1, inputs)


def test_every_input_of_a_run_is_recorded_by_name(earlier: SharedRun) -> None:
    run = read_json(_result(earlier) / "groups" / "g0" / "baseline" / "run.json")
    assert list(run["inputs"]) == list(INPUT_NAMES)
    assert run["inputs"]["host"] == "pi"


def test_an_unchanged_root_reuses_every_run(earlier: SharedRun, tmp_path: Path) -> None:
    root = _copy_root(earlier, tmp_path / "root")
    for group_id in ("g0", "g1"):
        for name in ("baseline", "candidate"):
            found = _decide(earlier, root, group_id, name)
            assert isinstance(found, Found), found
            assert found.variant_dir == _result(earlier) / "groups" / group_id / name


def _prompt(root: Path) -> None:
    _edit_json(root / "groups" / "g0.json", lambda g: g["input"].update(prompt="Answer it."))


def _fixture(root: Path) -> None:
    write(root / "fixture" / "README.md", "A different task.\n")


def _skills(root: Path) -> None:
    write(root / "skills" / "answer-writer" / "SKILL.md", SKILL + "\nVersion two.\n")


def _context(root: Path) -> None:
    write(root / "notes" / "style.md", "Answers are long.\n")


def _commits(root: Path) -> None:
    write(root / "notes" / "later.md", "A later commit.\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "later")
    _git(root, "tag", "-f", "v1")


def _model(root: Path) -> None:
    _edit_json(root / "groups" / "g0.json", lambda g: g.update(model={"model": "openai/gpt-x"}))


def _script(root: Path) -> None:
    with (root / "scripts" / "g0" / "baseline.yaml").open("a", encoding="utf-8") as script:
        script.write("# edited\n")


def _runtime(root: Path) -> None:
    runtime = {
        "host": "pi",
        "session": False,
        "extensions": [],
        "environment": {"literal": {"ANSWER_STYLE": "short"}, "inherit": []},
    }
    _edit_json(root / "groups" / "g0.json", lambda g: g.update(runtime=runtime))


# (input, what changes it, the group and variant it changes, the arguments the run decides by)
CHANGES: list[tuple[str, Callable[[Path], None] | None, str, str, dict[str, Any]]] = [
    ("definition", _prompt, "g0", "baseline", {}),
    ("fixture", _fixture, "g0", "baseline", {}),
    ("skills", _skills, "g0", "candidate", {}),
    ("context", _context, "g0", "baseline", {}),
    ("commits", _commits, "g1", "baseline", {}),
    ("host-version", None, "g0", "baseline", {"version": "0.0.1"}),
    ("model", _model, "g0", "baseline", {}),
    ("provider", None, "g0", "baseline", {"record": "once"}),
    ("script", _script, "g0", "baseline", {}),
    ("runtime", _runtime, "g0", "baseline", {}),
]


@pytest.mark.parametrize(
    ("name", "change", "group_id", "variant_name", "arguments"),
    CHANGES,
    ids=[c[0] for c in CHANGES],
)
def test_reuse_is_refused_when_one_input_changes(
    earlier: SharedRun,
    tmp_path: Path,
    name: str,
    change: Callable[[Path], None] | None,
    group_id: str,
    variant_name: str,
    arguments: dict[str, Any],
) -> None:
    root = _copy_root(earlier, tmp_path / "root")
    if change is not None:
        change(root)
    decided = _decide(earlier, root, group_id, variant_name, **arguments)
    assert isinstance(decided, str), decided
    changed = decided.rpartition("changed since: ")[2].split(", ")
    assert name in changed, decided
    # Nothing else moved: the one input changed is named (recording replays no script).
    assert set(changed) <= {name, "script"}, decided


def test_reuse_is_refused_on_another_host(earlier: SharedRun, tmp_path: Path) -> None:
    root = _copy_root(earlier, tmp_path / "root")
    decided = _decide(earlier, root, "g0", "baseline", host="codex")
    assert isinstance(decided, str)
    assert "no run of g0[baseline] on codex" in decided


def test_reuse_is_refused_from_a_result_whose_seal_fails(
    earlier: SharedRun, tmp_path: Path
) -> None:
    tampered = tmp_path / "runs" / _result(earlier).name
    shutil.copytree(_result(earlier), tampered, symlinks=True)
    with (tampered / "groups" / "g0" / "baseline" / "final.md").open("a") as final:
        final.write("edited\n")
    [source] = open_source(tampered)
    assert source.root is None
    assert source.problem is not None
    assert "seal does not verify" in source.problem
    root = _copy_root(earlier, tmp_path / "root")
    inputs = read_json(_result(earlier) / "groups" / "g0" / "baseline" / "run.json")["inputs"]
    decided = Reuse((source,)).find("g0", "pi", "baseline", 1, inputs)
    assert isinstance(decided, str)
    assert "its seal does not verify" in decided
    assert isinstance(_decide(earlier, root, "g0", "baseline"), Found)  # the intact one is


def test_reusing_the_baselines_halves_the_subjects_started(
    earlier: SharedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The skill changes: every candidate runs, every baseline is copied.
    root = tmp_path / "root"
    shutil.copytree(earlier.root, root, symlinks=True)
    _skills(root)
    source = _result(earlier)
    damaged = tmp_path / "damaged"
    shutil.copytree(source, damaged, symlinks=True)
    (damaged / "summary.json").write_text("{}", encoding="utf-8")
    junit = tmp_path / "junit.xml"
    done = run_detached(
        root,
        "--skill-eval-reuse",
        str(damaged),
        "--skill-eval-reuse",
        source.name,
        f"--junitxml={junit}",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    new = next(r for r in results(root) if r.name != source.name)
    runs = _records(new)
    reused = sorted(key for key, run in runs.items() if "reused" in run)
    started = sorted(key for key, run in runs.items() if "reused" not in run)
    assert reused == [("g0", "baseline"), ("g1", "baseline")]
    assert started == [("g0", "candidate"), ("g1", "candidate")]  # 2 subjects of 4
    root_hash = read_json(source / "seal.json")["root"]
    for key in reused:
        marker = runs[key]["reused"]
        assert marker["result"] == source.name
        assert marker["root"] == f"sha256:{root_hash}"
        copied = new / "groups" / key[0] / key[1]
        assert not copied.is_symlink()
        assert (copied / "events.jsonl").read_bytes() == (
            source / "groups" / key[0] / key[1] / "events.jsonl"
        ).read_bytes()
        # Graded from the copy: the reused run's workspace is the new result's.
        assert runs[key]["workspace"].startswith(str(new))
    for key in started:
        assert "changed since: skills" in runs[key]["notReused"]
        assert f"{damaged.name}: its seal does not verify" in runs[key]["notReused"]
    assert cli_main(["verify", str(new)]) == 0  # sealed into the new result like any other
    assert f"baseline reused from {source.name} seal sha256:{root_hash}" in done.stdout
    assert f'name="reused" value="{source.name} seal sha256:{root_hash}"' in junit.read_text()
    capsys.readouterr()
    assert cli_main(["view", str(new)]) == 0
    assert capsys.readouterr().out.count(f"  reused\t{source.name}\tsha256:{root_hash}\n") == 2
    # Reused arms pair with none of the new runs: the aggregate says so and tests unpaired.
    [comparison] = aggregate("a", [new], 1, None)["groups"][0]["comparisons"]
    assert comparison["mcnemarP"] is None
    assert comparison["unpaired"]["test"] == "fisher-exact"
    assert comparison["unpaired"]["reused"] == ["baseline"]
    [paired] = aggregate("b", [source], 1, None)["groups"][0]["comparisons"]
    assert "unpaired" not in paired
    assert paired["mcnemarP"] == 1.0


def _since(earlier: SharedRun, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the root and its results where only g0's context changed since the result."""
    root, source = _with_results(earlier, tmp_path)
    _context(root)
    return root, source


def test_collect_only_shows_which_groups_a_change_affects_and_why(
    earlier: SharedRun, tmp_path: Path
) -> None:
    root, source = _since(earlier, tmp_path)
    done = run_detached(root, "--skill-eval-affected-since", source.name, "--collect-only", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  g0: affected (baseline: context; candidate: context)" in done.stdout
    assert f"  g1: unchanged (grade complete in {source.name})" in done.stdout
    assert "suite.json::g0[baseline]" in done.stdout
    assert "g1[" not in done.stdout
    assert "2/4 tests collected (2 deselected)" in done.stdout


def test_only_the_affected_groups_run_the_rest_are_referenced_by_seal(
    earlier: SharedRun, tmp_path: Path
) -> None:
    root, source = _since(earlier, tmp_path)
    junit = tmp_path / "junit.xml"
    printed, new = _rerun(
        root, source, "--skill-eval-affected-since", source.name, f"--junitxml={junit}"
    )
    assert sorted(p.name for p in (new / "groups").iterdir()) == ["g0"]
    since = read_json(new / "invocation.json")["affectedSince"]
    root_hash = read_json(source / "seal.json")["root"]
    assert since["result"] == source.name
    assert since["root"] == f"sha256:{root_hash}"
    [unchanged] = since["unchanged"]
    assert unchanged["group"] == "g1"
    assert unchanged["grade"] == "complete"
    assert unchanged["root"] == f"sha256:{root_hash}"
    manifest = source / "groups" / "g1" / "manifest.json"
    assert unchanged["manifest"] == "sha256:" + hashlib.sha256(manifest.read_bytes()).hexdigest()
    assert f"skill-eval: group g1 [unchanged] grade=complete: {source / 'groups' / 'g1'}" in (
        printed
    )
    assert cli_main(["verify", str(new)]) == 0
    # The view, the Markdown summary and JUnit name it too: its earlier grade, by seal.
    reference = (
        f"g1: unchanged, grade complete in {source.name} (seal sha256:{root_hash}, "
        f"manifest {unchanged['manifest']})"
    )
    assert reference in render_text(new)
    assert reference in render_markdown(new)
    assert f'name="skill-eval-unchanged" value="{reference}"' in junit.read_text()


@pytest.mark.parametrize("name", ["events.jsonl", "final.md"])
def test_a_run_changed_after_its_seal_was_verified_is_not_copied(
    earlier: SharedRun, tmp_path: Path, name: str
) -> None:
    source = tmp_path / "runs" / _result(earlier).name
    shutil.copytree(_result(earlier), source, symlinks=True)
    found = Reuse(tuple(open_source(source))).find(
        "g0", "pi", "baseline", 1, read_json(source / "groups/g0/baseline/run.json")["inputs"]
    )
    assert isinstance(found, Found)
    with (source / "groups" / "g0" / "baseline" / name).open("a") as changed:
        changed.write("changed after the seal was verified\n")
    chosen = VariantInputs(inputs={"baseline": {}}, chosen={"baseline": found})
    group_dir = tmp_path / "new" / "groups" / "g0"
    group_dir.mkdir(parents=True)
    assert chosen.take("baseline", group_dir) is None  # the variant runs instead
    assert not (group_dir / "baseline").exists()  # nothing of the partial copy is left
    run: dict[str, Any] = {}
    chosen.note("baseline", run)
    assert f"{name} changed since its result's seal was verified" in run["notReused"]


def _forge(result: Path, name: str = "events.jsonl", *, reseal: bool = False) -> None:
    """What a forger does to an earlier result: edit g0's baseline, rewrite its group's
    manifest to match and (`reseal`) its seal too, so the result verifies on its own."""
    group = result / "groups" / "g0"
    with (group / "baseline" / name).open("a") as changed:
        changed.write("forged after the seal was verified\n")
    manifest = read_json(group / "manifest.json")
    data = (group / "baseline" / name).read_bytes()
    manifest["files"][f"baseline/{name}"] = hashlib.sha256(data).hexdigest()
    (group / "manifest.json").unlink()
    (group / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    if reseal:
        (result / "seal.json").unlink()
        write_seal(result)


def _take(source: Path, group_dir: Path, change: Callable[[Path], None]) -> dict[str, Any]:
    """Choose g0's baseline from `source` (its seal verified), `change` the source, then take
    it into `group_dir`; returns the run record the variant that runs instead would note."""
    found = Reuse(tuple(open_source(source))).find(
        "g0", "pi", "baseline", 1, read_json(source / "groups/g0/baseline/run.json")["inputs"]
    )
    assert isinstance(found, Found)
    change(source)
    chosen = VariantInputs(inputs={"baseline": {}}, chosen={"baseline": found})
    group_dir.mkdir(parents=True)
    assert chosen.take("baseline", group_dir) is None  # the variant runs instead
    assert list(group_dir.iterdir()) == []  # nothing of the copy is left, staged or placed
    run: dict[str, Any] = {}
    chosen.note("baseline", run)
    return run


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_forge, "groups/g0/manifest.json changed since its result's seal was verified"),
        (
            functools.partial(_forge, reseal=True),
            "seal.json is not the seal it was verified under: it changed since",
        ),
        (
            lambda source: (source / "groups/g0/baseline/added").mkdir(),
            "groups/g0/baseline/added/ was added or removed since its result's seal",
        ),
    ],
    ids=["rehashed-manifest", "resealed", "empty-directory"],
)
def test_a_run_forged_after_its_seal_was_verified_is_refused_not_claimed(
    earlier: SharedRun,
    tmp_path: Path,
    change: Callable[[Path], None],
    reason: str,
) -> None:
    # The source verified when the run began; then its baseline was edited and its manifest
    # (and seal) rewritten to match. The copy is proved against the seal that was verified.
    source = tmp_path / "runs" / _result(earlier).name
    shutil.copytree(_result(earlier), source, symlinks=True)
    run = _take(source, tmp_path / "new" / "groups" / "g0", change)
    assert run["notReused"].startswith(f"not reused: refused to copy {source}/groups/g0/")
    assert f"{source}/{reason}" in run["notReused"]


def test_a_source_forged_between_its_check_and_the_copy_runs_fresh_and_says_why(
    earlier: SharedRun, tmp_path: Path
) -> None:
    # End to end: the source's seal is verified when the session starts; the root's own
    # conftest forges it (an edited baseline, its manifest rewritten) just before any test
    # runs. Its group g0 runs fresh, never claiming the earlier seal; g1 is still reused.
    root, source = _with_results(earlier, tmp_path)
    group = source / "groups" / "g0"
    write(
        root / "conftest.py",
        "import hashlib, json, pytest\n"
        "from pathlib import Path\n\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_runtestloop(session):\n"
        f"    group = Path({str(group)!r})\n"
        "    with (group / 'baseline' / 'events.jsonl').open('a') as changed:\n"
        "        changed.write('forged after the seal was verified\\n')\n"
        "    manifest = json.loads((group / 'manifest.json').read_text())\n"
        "    data = (group / 'baseline' / 'events.jsonl').read_bytes()\n"
        "    digest = hashlib.sha256(data).hexdigest()\n"
        "    manifest['files']['baseline/events.jsonl'] = digest\n"
        "    (group / 'manifest.json').unlink()\n"
        "    (group / 'manifest.json').write_text(json.dumps(manifest))\n",
    )
    printed, new = _rerun(root, source, "--skill-eval-reuse", source.name)
    runs = _records(new)
    assert sorted(k for k, run in runs.items() if "reused" in run) == [
        ("g1", "baseline"),
        ("g1", "candidate"),
    ]
    refusal = (
        f"not reused: refused to copy {source}/groups/g0/baseline: {source}/groups/g0/"
        "manifest.json changed since its result's seal was verified"
    )
    assert runs[("g0", "baseline")]["notReused"] == refusal
    assert runs[("g0", "baseline")]["state"] == "complete"
    assert f"    baseline {refusal}\n" in printed
    assert cli_main(["verify", str(new)]) == 0


def test_runs_reused_whole_add_no_observation_to_the_gate(
    earlier: SharedRun, tmp_path: Path
) -> None:
    # Nothing changed: every run is copied, no subject starts, and the significance gate,
    # which pools earlier sealed trials of the same inputs, counts each pair once.
    root, source = _with_results(earlier, tmp_path)
    _, new = _rerun(root, source, "--skill-eval-reuse", "latest")
    for group_id in ("g0", "g1"):
        for name in ("baseline", "candidate"):
            run = read_json(new / "groups" / group_id / name / "run.json")
            assert run["reused"]["origin"] == f"{source.name}/groups/{group_id}/{name}/run.json"
    assert cli_main(["verify", str(new)]) == 0
    found, invocations = sequences([source, new], identities([new]))
    assert found == {
        ("g0", "pi", "says-yes"): ["fail-to-pass"],
        ("g1", "pi", "says-yes"): ["fail-to-pass"],
    }
    assert set(map(len, invocations.values())) == {1}
    # Nothing of the new result was spent by it, and no change is paired across invocations.
    summary = read_json(new / "summary.json")
    for group in summary["groups"]:
        usage = group_usage([new], group)
        assert usage is not None
        assert usage["reused"] == {"baseline": 1, "candidate": 1}
        assert usage["spentUsd"] == {"baseline": 0, "candidate": 0}
        assert usage["change"]["input"]["method"] == "unpaired-welch"


def _resume(root: Path, source: Path, version: str | None) -> Path:
    """Complete `source` into a new result as an invocation at `root` would, its hosts'
    version `version` (None: the one it recorded); returns the new result."""
    recorded = read_json(source / "groups" / "g1" / "baseline" / "run.json")["inputs"]
    sources = InputSources(
        root,
        SourceResolver(root),
        root / "scripts",
        "none",
        lambda _host: version or recorded["host-version"],
    )
    loaded = {
        g.group.id: g for g in load_definition(root / "suite.json", root, registered()).groups
    }
    now = resume.current_inputs(functools.partial(variant_inputs, sources), loaded)
    new = root / ".skill-eval" / "runs" / "20990101000000-00000000"
    (new / "groups").mkdir(parents=True)
    invocation = read_json(source / "invocation.json")
    resume.carry_over(str(source), source.parent, new, invocation, now)
    return new


def test_resume_carries_runs_whose_inputs_are_the_same_and_refuses_a_changed_host_version(
    earlier: SharedRun, tmp_path: Path
) -> None:
    # The same fingerprint reuse decides by: a Pi of another version is another run.
    root = _copy_root(earlier, tmp_path / "root")
    new = _resume(root, _result(earlier), None)
    assert sorted(p.name for p in (new / "groups").iterdir()) == ["g0", "g1"]
    shutil.rmtree(new)
    with pytest.raises(resume.ResumeError) as refused:
        _resume(root, _result(earlier), "0.0.1")
    assert str(refused.value) == (
        f"--skill-eval-resume: group g0's baseline in {_result(earlier)} ran from host-version "
        "other than now; a resumed result holds one invocation's inputs: restore them, or run "
        "without --skill-eval-resume"
    )
    assert not new.exists()  # nothing is left of the refused invocation


def test_resume_refuses_a_run_from_before_runs_recorded_their_inputs(
    earlier: SharedRun, tmp_path: Path
) -> None:
    # A result written before runs recorded `inputs`: nothing proves what it ran from.
    root = _copy_root(earlier, tmp_path / "root")
    source = tmp_path / "old" / _result(earlier).name
    shutil.copytree(_result(earlier), source, symlinks=True)
    group_dir = source / "groups" / "g0"
    run = read_json(group_dir / "baseline" / "run.json")
    recorded = run.pop("inputs")
    (group_dir / "baseline" / "run.json").write_text(json.dumps(run), encoding="utf-8")
    (group_dir / "manifest.json").unlink()
    (source / "seal.json").unlink()
    write_manifest(group_dir)
    write_seal(source)
    assert recorded
    with pytest.raises(resume.ResumeError, match="ran from inputs it did not record"):
        _resume(root, source, None)

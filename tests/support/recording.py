"""Record a host's run from a fake provider on loopback, then replay its cassette by body.

Every host records and replays the same way: one group `rec` whose candidate reads
`notes.txt` over two turns, three upstream answers, a cassette named after the host, and an
API key (a canary) that must reach the provider in its header yet never be written to the
evidence or the cassette. Only the wire format, the provider's answers and a few checks on them
differ from host to host: the rows of `tests/hosts/test_host_record_e2e.py`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import read_json, write
from tests.support.http import FakeUpstream, Scripted, UpstreamRequest
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import results, skill_eval_args


@dataclass(frozen=True)
class Provider:
    """How a host reaches its upstream provider, and the key it must carry there."""

    host: str
    model: str  # provider/model, as the group names it
    key_variable: str  # the environment variable that holds the API key
    canary: str  # the key itself, to be found upstream and nowhere in the evidence
    header: str  # the lower-cased request header the key travels in
    scheme: str = ""  # what precedes the key in that header ("Bearer ")
    base_path: str = ""  # appended to the fake provider's URL ("/v1")


def openai_provider(host: str, model: str, canary: str) -> Provider:
    """A provider reached the OpenAI way: `OPENAI_API_KEY`, sent as a bearer token, under `/v1`."""
    __tracebackhide__ = True
    return Provider(
        host, model, "OPENAI_API_KEY", canary, "authorization", scheme="Bearer ", base_path="/v1"
    )


@dataclass(frozen=True)
class Recording:
    """A recorded run: where it lies, what the provider received and the cassette's text."""

    provider: Provider
    root: Path
    cassettes: Path
    cassette: Path
    arguments: list[str]  # the plugin arguments both runs share
    requests: list[UpstreamRequest]
    text: str  # the cassette as recorded
    result: Path
    run: dict[str, Any]  # the recorded candidate's run.json


def record(
    pytester: pytest.Pytester,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider: Provider,
    answers: Sequence[Scripted],
    *,
    turns: Sequence[str] = ("Read the notes.", "Anything else?"),
    tools: Sequence[str] = ("read",),
    notes: str = "alpha\n",
) -> Recording:
    """Record the `rec` group on `provider.host`, one request per answer, and check the take.

    `notes` is the text of the workspace's `notes.txt`.

    The key must reach the provider on every request, the cassette directory must hold this
    host's cassette alone (a recording holds one host's requests), and the run must complete
    in record mode.
    """
    __tracebackhide__ = True
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", notes)
    group = Group(
        id="rec",
        turns=list(turns),
        tools=list(tools),
        runtime=runtime(host=provider.host),
        candidate=variant([skill(root, "note-taker")], 0),
    )
    suite = build(root, [group])
    definition = root / "groups" / "rec.json"
    document = json.loads(definition.read_text(encoding="utf-8"))
    document["model"] = {"model": provider.model}
    definition.write_text(json.dumps(document), encoding="utf-8")
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    upstream = FakeUpstream(list(answers))
    monkeypatch.setenv(provider.key_variable, provider.canary)
    arguments = [
        *skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite, cassettes=False),
        *("--skill-eval-cassettes", str(cassettes)),
        *("-o", f"skill_eval_upstream_url={upstream.base_url}{provider.base_path}"),
    ]
    try:
        recorded = pytester.runpytest_subprocess(*arguments, "--skill-eval-record", "once")
    finally:
        upstream.stop()
    assert recorded.ret == 0, recorded.stdout.str()
    requests = upstream.requests
    assert len(requests) == len(answers), requests
    key = f"{provider.scheme}{provider.canary}"
    sent = [r.headers.get(provider.header) for r in requests]
    assert all(value == key for value in sent), (provider.header, sent)
    cassette = cassettes / "rec" / f"candidate@{provider.host}.yaml"
    held = sorted(p.name for p in (cassettes / "rec").iterdir())
    assert held == [cassette.name], held
    result = results(root)[-1]
    run = _candidate_run(result, provider.host)
    assert run["provider"]["mode"] == "record", run["provider"]
    text = cassette.read_text(encoding="utf-8")
    return Recording(provider, root, cassettes, cassette, arguments, requests, text, result, run)


def replay(
    pytester: pytest.Pytester, recording: Recording, responses: Sequence[str]
) -> dict[str, Any]:
    """Replay `recording` with the provider gone, every request matched by its normalised body.

    The replay must complete in a new result and a new workspace, answer each turn with
    `responses`, and leave the canary in no file of the evidence or the cassettes. Returns the
    replayed candidate's run.json.
    """
    __tracebackhide__ = True
    cassette = recording.cassette
    cassette.write_text(recording.text.replace("match: order", "match: body"), encoding="utf-8")
    assert "match: body" in cassette.read_text(encoding="utf-8"), cassette
    replayed = pytester.runpytest_subprocess(*recording.arguments)
    assert replayed.ret == 0, replayed.stdout.str()
    result = results(recording.root)[-1]
    assert result != recording.result, result
    run = _candidate_run(result, recording.provider.host)
    assert run["provider"]["mode"] == "replay", run["provider"]
    answered = [t["response"] for t in run["turns"]]
    assert answered == list(responses), answered
    assert run["workspace"] != recording.run["workspace"], run["workspace"]
    canary = recording.provider.canary.encode()
    for base in (recording.root / ".skill-eval", recording.cassettes):
        for path in base.rglob("*"):
            if path.is_file():
                assert canary not in path.read_bytes(), path
    return run


def _candidate_run(result: Path, host: str) -> dict[str, Any]:
    """The candidate's run.json in `result`, which must have completed."""
    __tracebackhide__ = True
    run: dict[str, Any] = read_json(result / "groups" / f"rec@{host}" / "candidate" / "run.json")
    assert run["state"] == "complete", run["error"]
    return run

"""The redactor: every form of a secret, split across reads or not, becomes its marker."""

from __future__ import annotations

import base64
import json
import os
import urllib.request
from pathlib import Path

import pytest

from pytest_skill_eval.evidence.redact import Redactor, Tally, credential_values
from pytest_skill_eval.hosts.process import EndOfStream, HostProcess, ProcessOutcome
from pytest_skill_eval.hosts.redaction import redact_tree
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from pytest_skill_eval.modelserver.upstream import auth_headers
from pytest_skill_eval.modelserver.wire import OPENAI
from tests.support.http import FakeUpstream, recording_route

SECRET = 'sk-"canary"\\7f3a-é'


def _forms(value: str) -> list[bytes]:
    raw = value.encode()
    return [raw, json.dumps(value)[1:-1].encode(), base64.b64encode(raw)]


def test_every_form_of_a_secret_is_replaced_by_its_marker() -> None:
    redactor = Redactor({"CANARY": SECRET})
    data = b" | ".join(_forms(SECRET))
    clean, counts = redactor.redact_bytes(data)
    assert counts == {"CANARY": 3}
    assert clean == b" | ".join([b"[redacted:CANARY]"] * 3)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_a_secret_split_across_reads_is_caught_by_the_stream(size: int) -> None:
    redactor = Redactor({"CANARY": SECRET, "OTHER": "zz-other-token"})
    data = b"".join(b"line %d: " % i + form + b"\n" for i, form in enumerate(_forms(SECRET)))
    data += b"tail zz-other-token"
    stream = redactor.stream()
    out = b"".join(stream.feed(data[i : i + size]) for i in range(0, len(data), size))
    out += stream.flush()
    for form in (*_forms(SECRET), b"zz-other-token"):
        assert form not in out
    assert out.count(b"[redacted:CANARY]") == 3
    assert stream.counts == {"CANARY": 3, "OTHER": 1}
    assert out.endswith(b"tail [redacted:OTHER]")


def test_a_json_record_stays_json_even_for_a_short_value() -> None:
    redactor = Redactor({"DIGIT": "1"})
    line = json.dumps({"n": 1, "text": "a1b", "nested": json.dumps({"v": "1"})}).encode() + b"\n"
    clean, counts = redactor.redact_json_line(line)
    record = json.loads(clean)
    assert record["n"] == 1  # numbers are not strings: nothing to hide there
    assert record["text"] == "a[redacted:DIGIT]b"
    assert "1" not in record["nested"]
    assert counts == {"DIGIT": 2}
    assert clean.endswith(b"\n")


def test_a_record_without_a_secret_is_kept_byte_for_byte() -> None:
    line = b'{"a": 1,  "b":"x"}\r\n'
    assert Redactor({"X": "secret-value"}).redact_json_line(line) == (line, {})


def test_values_nest_keys_and_strings() -> None:
    redactor = Redactor({"K": "hidden-key"})
    value, counts = redactor.redact_value({"hidden-key": ["say hidden-key", 3, None]})
    assert value == {"[redacted:K]": ["say [redacted:K]", 3, None]}
    assert counts == {"K": 2}


def test_an_empty_redactor_changes_nothing() -> None:
    redactor = Redactor({"EMPTY": ""})
    assert not redactor
    assert redactor.redact_bytes(b"abc") == (b"abc", {})
    assert redactor.stream().feed(b"abc") == b"abc"


def test_credentials_are_named_by_where_they_sit_and_descriptions_are_left() -> None:
    auth = {"anthropic": {"type": "api_key", "key": "sk-ant-123456789"}, "x": {"expires": 5}}
    assert credential_values(auth, "auth.json") == {"auth.json:anthropic.key": "sk-ant-123456789"}


def test_the_tally_records_names_and_counts_never_values() -> None:
    tally = Tally()
    tally.add("events.jsonl", {"CANARY": 2, "OTHER": 0})
    tally.add("events.jsonl", {"CANARY": 1})
    tally.add("final.md", {"CANARY": 1})
    assert tally.record() == {"CANARY": {"events.jsonl": 3, "final.md": 1}}


def _delta(text: str) -> bytes:
    record = {"type": "message_update", "assistantMessageEvent": {"delta": text}}
    return json.dumps(record).encode() + b"\n"


def test_a_secret_streamed_in_fragments_is_cut_out_of_every_fragment() -> None:
    secret = "sk-fragmented-0123456789"
    records = Redactor({"KEY": secret}).records()
    pieces = ["say sk-frag", "mented-01", "23456789 ok"]
    written = b""
    for piece in pieces:
        now, parsed = records.feed(_delta(piece))
        assert json.loads(parsed)["assistantMessageEvent"]["delta"] == piece
        written += now
    assert written == b""  # fragments wait for the record that ends them
    written += records.feed(b'{"type": "message_end"}\n')[0]
    deltas = [
        json.loads(line)["assistantMessageEvent"]["delta"] for line in written.splitlines()[:3]
    ]
    assert deltas == ["say [redacted:KEY]", "", " ok"]
    assert records.counts == {"KEY": 1}
    assert written.splitlines()[3] == b'{"type": "message_end"}'


def test_fragments_without_a_secret_are_written_unchanged() -> None:
    records = Redactor({"KEY": "sk-never-appears"}).records()
    lines = [_delta("a"), _delta("b"), b'{"type": "end"}\n']
    assert b"".join(records.feed(line)[0] for line in lines) + records.flush() == b"".join(lines)


def test_a_record_of_a_reply_still_streaming_is_cut_where_the_secret_begins() -> None:
    secret = "sk-fragmented-0123456789"
    records = Redactor({"KEY": secret}).records()
    partial = {"type": "toolcall_start", "partial": {"args": "write sk-fragmented-01"}}
    written, parsed = records.feed(json.dumps(partial).encode() + b"\n")
    assert json.loads(parsed)["partial"]["args"] == "write [redacted:KEY]"
    assert written == parsed
    short = {"partial": "write sk-frag"}  # too short a beginning to say anything
    assert json.loads(records.feed(json.dumps(short).encode())[1]) == short


def test_a_cassette_being_recorded_keeps_no_secret_of_the_run(tmp_path: Path) -> None:
    secret = "sk-recorded-" + "9" * 12
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": f"it is {secret}"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    upstream = FakeUpstream([(200, "text/event-stream", [body + b"data: [DONE]\n\n"])])
    cassette = tmp_path / "c.yaml"
    try:
        with ScriptedModelServer() as server:
            route = recording_route(
                server,
                upstream,
                cassette,
                upstream_headers=auth_headers(OPENAI, "sk-upstream-key-000000"),
            )
            route.use_redactor(Redactor({"CANARY": secret}))
            request = {
                "model": "gpt-4o",
                "messages": [{"role": "user", "content": f"echo {secret}"}],
                "stream": True,
            }
            post = urllib.request.Request(
                f"{server.base_url}/r/{route.token}/v1/chat/completions",
                data=json.dumps(request).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(post, timeout=60) as response:
                assert secret.encode() in response.read()  # the subject gets the real answer
            route.close()
    finally:
        upstream.stop()
    text = cassette.read_text()
    assert secret not in text
    assert "it is [redacted:CANARY]" in text


def test_a_workspace_copy_is_redacted_in_place_and_planted_entries_are_never_opened(
    tmp_path: Path,
) -> None:
    secret = "sk-workspace-secret-42"
    variant = tmp_path / "variant"
    workspace = variant / "workspace"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "sub" / "leak.txt").write_text(f"a {secret} b {secret}")
    (workspace / "clean.txt").write_text("nothing")
    (workspace / "link").symlink_to(workspace / "sub" / "leak.txt")
    os.mkfifo(workspace / "pipe")  # opening it would block forever
    (workspace / "leak.txt").write_bytes(base64.b64encode(secret.encode()))
    tally = Tally()
    redact_tree(Redactor({"KEY": secret}), workspace, variant, tally)
    assert (workspace / "sub" / "leak.txt").read_text() == "a [redacted:KEY] b [redacted:KEY]"
    assert (workspace / "leak.txt").read_text() == "[redacted:KEY]"
    assert (workspace / "clean.txt").read_text() == "nothing"
    assert (workspace / "link").is_symlink()
    assert tally.record() == {"KEY": {"workspace/leak.txt": 1, "workspace/sub/leak.txt": 2}}
    assert sorted(p.name for p in workspace.iterdir()) == [
        "clean.txt", "leak.txt", "link", "pipe", "sub"
    ]  # fmt: skip


def test_a_host_process_writes_neither_stream_with_the_secret(tmp_path: Path) -> None:
    secret = "sk-process-secret-" + "7" * 10
    script = (
        'printf \'{"type":"x","text":"%s"}\\n\' "$S"; '
        'printf "half %s" "$S" | head -c 20 >&2; printf "%s" "$S" | tail -c +16 >&2; '
        "printf 'then %s\\n' \"$S\" >&2"
    )
    process = HostProcess(
        argv=["sh", "-c", script],
        env={"S": secret, "PATH": os.environ["PATH"]},
        cwd=tmp_path,
        events_path=tmp_path / "events.jsonl",
        stderr_path=tmp_path / "stderr.log",
        interactive=False,
        redactor=Redactor({"S": secret}),
    )
    process.start()
    frames = []
    while not isinstance(frame := process.frames.get(timeout=30), EndOfStream):
        frames.append(frame)
    process.finish(ProcessOutcome())
    assert [f.event for f in frames] == [{"type": "x", "text": "[redacted:S]"}]
    events = (tmp_path / "events.jsonl").read_bytes()
    stderr = (tmp_path / "stderr.log").read_bytes()
    assert events == b'{"type":"x","text":"[redacted:S]"}\n'
    assert secret.encode() not in stderr
    assert stderr.endswith(b"then [redacted:S]\n")
    assert process.redactions == {"events.jsonl": {"S": 1}, "stderr.log": {"S": 2}}

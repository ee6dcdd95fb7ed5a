"""The HTML report on the fixed evidence directory: escaping, offline, diffs, collapsed details."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from pytest_skill_eval.views import render_html

VOID = {"meta", "br", "col", "img", "input", "link", "hr", "wbr"}


class _Tags(HTMLParser):
    """Collects start tags with attributes and checks that every element is closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(document: str) -> _Tags:
    parser = _Tags()
    parser.feed(document)
    parser.close()
    assert parser.problems == []
    assert parser.stack == []
    return parser


def _edit_json(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


@pytest.fixture
def report(result_dir: Path) -> str:
    return render_html(result_dir)


def test_document_is_well_formed_and_self_contained(report: str) -> None:
    assert report.startswith("<!DOCTYPE html>\n")
    tags = _parse(report)
    names = {tag for tag, _ in tags.tags}
    assert not names & {"script", "link", "img", "iframe", "object", "embed", "base", "form"}
    assert "default-src 'none'" in report  # the browser itself refuses any load
    assert "@import" not in report
    assert "url(" not in report


def test_no_network_resource_references(result_dir: Path, report: str) -> None:
    network = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)
    tags = _parse(report)
    references = [
        value
        for _, attrs in tags.tags
        for name, value in attrs.items()
        if name in {"src", "href", "action", "srcset", "poster", "data", "formaction"}
    ]
    assert references  # the report does link its raw artifacts
    assert [r for r in references if r is None or network.match(r)] == []
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", report, re.I)
    # The skill text quotes https://keepachangelog.com: as escaped text, never as a reference.
    assert "https://keepachangelog.com" in "".join(tags.text)


def test_hostile_text_is_escaped(report: str) -> None:
    assert "<script" not in report.lower()
    # The response, the file name and the file content all carried a <script> tag.
    assert "&lt;script&gt;alert(&quot;response&quot;)&lt;/script&gt;" in report
    assert "<code>notes\\t&lt;script&gt;.md</code>" in report
    assert "+&lt;script&gt;alert(&#x27;notes&#x27;)&lt;/script&gt;" in report
    # A raw CR would become a line break in HTML: it is shown as a visible symbol instead.
    assert "\r" not in report
    assert "+draft\u240d\n" in report


def test_unified_diff_against_the_fixture_for_a_changed_file(report: str) -> None:
    assert (
        '<pre class="diff"><span class="hdr">--- fixture/CHANGELOG.md\n</span>'
        '<span class="hdr">+++ workspace/CHANGELOG.md\n</span>'
        '<span class="hunk">@@ -11,3 +11,4 @@\n</span> \n ### Fixed\n'
        " - Keep column order when sorting (#31)\n"
        '<span class="add">+- CSV export now handles semicolons (issue #42)\n</span></pre>'
    ) in report
    # The candidate's entry went into a new Fixed subsection under Unreleased.
    assert '<span class="add">+### Fixed\n</span>' in report
    assert "<code>logo.png</code> — no text diff" in report
    assert "fixture: binary file (33 bytes); workspace: text (19 bytes)" in report


def test_details_start_collapsed(report: str) -> None:
    tags = _parse(report)
    details = [attrs for tag, attrs in tags.tags if tag == "details"]
    assert details
    assert all("open" not in attrs for attrs in details)
    turns = [attrs for attrs in details if attrs.get("class") == "turn"]
    assert len(turns) == 4  # two groups, two variants, one turn each
    assert len([attrs for attrs in details if attrs.get("class") == "file"]) == 5


def test_side_by_side_variants_with_states_checks_and_transitions(report: str) -> None:
    assert report.count('<div class="variants">') == 2
    assert report.count('<article class="variant baseline">') == 2
    assert report.count('<article class="variant candidate">') == 2
    assert (
        "<tr><td><code>candidate-read-first</code></td><td>candidate</td><td>tool-call</td>"
        '<td><span class="badge s-pass">pass</span></td>'
    ) in report
    assert (
        "<td><code>baseline-only-changelog</code> "
        '<span class="badge s-fail">fail</span></td>'
        "<td><code>candidate-only-changelog</code> "
        '<span class="badge s-pass">pass</span></td>'
        '<td><span class="badge s-fail-to-pass">fail-to-pass</span></td>'
    ) in report
    assert "declared workspace resource path is unavailable: notes\tdraft\u240d\n.md" in report


def test_turn_prompts_tool_calls_usage_and_marks(report: str) -> None:
    assert (
        '<pre class="text">/skill:changelog-keeper Note in the changelog that CSV export '
        "now handles semicolons (issue #42).</pre>"
    ) in report
    # The candidate's first read failed: its outcome and the tool's own error are shown.
    assert (
        '<span class="badge s-failed">failed</span></td><td><pre class="json">{\n'
        "  &quot;path&quot;: &quot;RELEASE-NOTES.md&quot;\n}</pre></td>"
    ) in report
    assert "cost simulated $0.02265" in report  # scripted: priced, never paid
    assert report.count('<span class="badge mode" title="provider mode scripted;') == 4
    assert "Advisory review" in report
    assert "not canonical" in report


def test_replayed_runs_get_a_badge(result_dir: Path) -> None:
    run = result_dir / "groups" / "changelog-entry" / "baseline" / "run.json"
    _edit_json(run, lambda r: r["provider"].update(mode="replay"))
    report = render_html(result_dir)
    assert report.count(">replayed</span>") == 1
    assert report.count(">scripted</span>") == 3


def test_raw_artifact_links_are_relative_and_resolve(result_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "reports"
    elsewhere.mkdir()
    for base in (result_dir, elsewhere):
        report = render_html(result_dir, link_base=base)
        hrefs = [
            str(attrs["href"])
            for tag, attrs in _parse(report).tags
            if tag == "a" and not str(attrs["href"]).startswith("#")
        ]
        assert len(hrefs) >= 30
        for href in hrefs:
            assert not href.startswith("/")
            assert (base / unquote(href)).exists(), href
        names = {unquote(h).rstrip("/").rsplit("/", 1)[-1] for h in hrefs}
        for name in ("run.json", "events.jsonl", "transcript.json", "stderr.log", "workspace"):
            assert name in names


def test_long_texts_are_clipped_with_the_full_text_nested(result_dir: Path) -> None:
    long_response = "\n".join(f"line {n} of a very long answer" for n in range(500))
    run = result_dir / "groups" / "changelog-entry" / "candidate" / "run.json"
    _edit_json(run, lambda r: r["turns"][0].update(response=long_response))
    report = render_html(result_dir)
    clipped = report.index('<pre class="text clipped">line 0 of a very long answer')
    shown = report[clipped : report.index("</pre>", clipped)]
    assert "line 39 of" in shown
    assert "line 40 of" not in shown
    assert "<summary>show all" in report[clipped:]
    assert report.count("line 499 of a very long answer") == 1  # only in the nested details


def test_aggregate_report_shows_rates_and_intervals(
    unresolved_aggregate: Path, resolved_aggregate: Path
) -> None:
    unresolved = render_html(unresolved_aggregate)
    resolved = render_html(resolved_aggregate)
    _parse(unresolved)
    assert "0/3 pass" in unresolved
    assert "3/3 pass" in unresolved
    assert "0.0% [0.0%, 56.1%]" in unresolved
    assert "100.0% [43.9%, 100.0%]" in unresolved
    assert unresolved.count("difference unresolved") == 3
    assert "difference unresolved" not in resolved
    assert "100.0% [67.6%, 100.0%]" in resolved
    assert "<td>0.0078125</td>" in resolved
    assert "<script" not in unresolved.lower()


def test_synthetic_and_missing_runs_still_render(result_dir: Path) -> None:
    group = result_dir / "groups" / "natural-activation"
    _edit_json(
        group / "baseline" / "run.json",
        lambda r: r.update(
            state="invalid",
            turns=[],
            usage=None,
            error={"kind": "setup", "message": "missing inherited variable <API_HOST>"},
        ),
    )
    (group / "candidate" / "run.json").unlink()
    report = render_html(result_dir)
    _parse(report)
    assert '<h3>Baseline <span class="badge s-invalid">invalid</span>' in report
    assert "(no turns were run)" in report
    assert "missing inherited variable &lt;API_HOST&gt;" in report
    assert "run.json is missing" in report


HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
HOSTILE_ESCAPED = (
    "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"
)


def test_agent_text_is_escaped_in_every_place_it_reaches(result_dir: Path) -> None:
    """A response, a tool argument, a file name and a diff line each carry markup; none lands."""
    variant = result_dir / "groups" / "changelog-entry" / "candidate"
    name = '"><img src=x onerror=alert(3)><script>.md'  # a file name cannot hold "/"
    (variant / "workspace" / name).write_text(f"{HOSTILE}\n", encoding="utf-8")

    def change(run: dict[str, Any]) -> None:
        run["turns"][0]["response"] = f"done {HOSTILE}"
        run["turns"][0]["toolActivity"][0]["args"] = {"path": HOSTILE}
        run["effects"]["changes"]["created"] = [name]

    _edit_json(variant / "run.json", change)
    report = render_html(result_dir)
    tags = _parse(report)
    assert not {tag for tag, _ in tags.tags} & {"script", "img"}
    assert "onerror" not in "".join(str(v) for _, attrs in tags.tags for v in attrs.values())
    assert f'<pre class="text">done {HOSTILE_ESCAPED}</pre>' in report  # the response
    # The tool argument, JSON-quoted (its own quotes are backslash-escaped, then HTML-escaped).
    assert "&quot;path&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;\\&quot;&gt;" in report
    shown_name = "&quot;&gt;&lt;img src=x onerror=alert(3)&gt;&lt;script&gt;.md"
    assert f"<code>{shown_name}</code>" in report  # the file name
    assert f"+++ workspace/{shown_name}" in report
    assert f'<span class="add">+{HOSTILE_ESCAPED}\n</span>' in report  # the diff line


def test_report_shows_trigger_rates_of_a_single_result(report: str) -> None:
    section = report[report.index('<section class="triggers"') :]
    section = section[: section.index("</section>")]
    # The candidate read its target on the one positive group, the baseline (no target) did not.
    assert "<code>skills/changelog-keeper@b7601a489f87</code>" in section
    assert "<td>candidate</td><td>1/1</td>" in section
    assert "<td>baseline</td><td>0/1</td>" in section
    assert "candidate − baseline" in section
    assert "+100.0 pp [-12.2 pp, +100.0 pp]" in section


def test_aggregate_report_shows_consistency_and_sample_size(unresolved_aggregate: Path) -> None:
    document = render_html(unresolved_aggregate)
    _parse(document)
    assert "k=1: 100.0% / 100.0%<br>k=3: 100.0% / 100.0%" in document
    assert "k=1: 0.0% / 0.0%<br>k=3: 0.0% / 0.0%" in document
    assert "about 3 more paired trials (80% power, alpha 0.05; 6 in all)" in document


def _glance(document: str) -> str:
    start = document.index('<section class="glance" id="at-a-glance">')
    return document[start : document.index("</section>", start)]


def test_result_report_opens_with_groups_and_their_transitions(report: str) -> None:
    glance = _glance(report)
    # Before the group navigation, the trigger rates and every group section.
    assert report.index(glance) < report.index("<nav>") < report.index('<section class="group"')
    rows = [r for r in glance.split("<tr>") if r.startswith("<td>")]
    assert len(rows) == 2
    assert '<a href="#group-natural-activation">natural-activation</a>' in rows[0]
    assert (
        '<code>skill-read-on-first-turn</code> <span class="badge s-fail-to-pass">'
        "fail-to-pass</span>" in rows[0]
    )
    assert rows[1].count('class="badge s-fail-to-pass"') == 2
    assert "<th>host</th>" not in glance  # one host ran every group
    assert "<svg" not in glance  # one trial: transitions, no rates to draw


def test_aggregate_report_draws_each_rate_as_an_svg_bar_with_its_interval(
    unresolved_aggregate: Path,
) -> None:
    document = render_html(unresolved_aggregate)
    tags = _parse(document)
    glance = _glance(document)
    assert "fail-to-pass 3</span>" in glance
    assert glance.count("<svg ") == 8  # every check of both groups
    svgs = [attrs for tag, attrs in tags.tags if tag == "svg"]
    assert {attrs.get("class") for attrs in svgs} == {"rate-bar"}
    # 3/3 passes: Wilson [0.439, 1] on a 160-unit bar, the tick at the right end.
    row = next(r for r in glance.split("<tr>") if "<code>candidate-reads-skill</code>" in r)
    assert '<rect class="ci" x="70.16" y="2" width="89.84" height="10"' in row
    assert '<rect class="pt" x="158.00"' in row
    assert "3/3 100.0% [43.9%, 100.0%]" in row
    assert "<td>n=3: 100.0% / 100.0%</td>" in row
    row = next(r for r in glance.split("<tr>") if "<code>baseline-reads-skill</code>" in r)
    assert '<rect class="ci" x="0.00" y="2" width="89.84" height="10"' in row
    assert "<td>n=3: 0.0% / 0.0%</td>" in row
    assert "<script" not in document.lower()


def test_aggregate_glance_escapes_what_it_shows(unresolved_aggregate: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data["groups"][0]["checks"][0]["id"] = HOSTILE
        data["groups"][0]["comparisons"][0]["id"] = HOSTILE

    _edit_json(unresolved_aggregate / "aggregate.json", change)
    glance = _glance(render_html(unresolved_aggregate))
    assert glance.count(f"<code>{HOSTILE_ESCAPED}</code>") == 2
    assert "<script>" not in glance


def test_aggregate_check_without_observations_has_no_bar(unresolved_aggregate: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        check = data["groups"][0]["checks"][0]
        check.update({"pass": 0, "fail": 0, "unavailable": 3, "consistency": []})
        check.pop("passRate")
        check.pop("interval")

    _edit_json(unresolved_aggregate / "aggregate.json", change)
    glance = _glance(render_html(unresolved_aggregate))
    row = next(r for r in glance.split("<tr>") if "<code>baseline-reads-skill</code>" in r)
    assert "<svg" not in row
    assert "0/0 (no observation)" in row
    assert glance.count("<svg ") == 7


def test_result_glance_names_the_host_when_groups_ran_on_several(result_dir: Path) -> None:
    for variant in ("baseline", "candidate"):
        run = result_dir / "groups" / "changelog-entry" / variant / "run.json"
        _edit_json(run, lambda r: r["process"].update(host="claude-code"))
    glance = _glance(render_html(result_dir))
    assert "<th>host</th>" in glance
    rows = [r for r in glance.split("<tr>") if r.startswith("<td>")]
    assert "<td>pi</td>" in rows[0]
    assert "<td>claude-code</td>" in rows[1]


def test_result_glance_names_the_recorded_host_when_no_run_says_it(result_dir: Path) -> None:
    # Runs that never started carry no process: the group record still knows its host.
    for variant in ("baseline", "candidate"):
        run = result_dir / "groups" / "changelog-entry" / variant / "run.json"
        _edit_json(run, lambda r: r.pop("process"))
    natural = result_dir / "groups" / "natural-activation" / "baseline" / "run.json"
    _edit_json(natural, lambda r: r["process"].update(host="claude-code"))
    glance = _glance(render_html(result_dir))
    assert "unknown" not in glance
    rows = [r for r in glance.split("<tr>") if r.startswith("<td>")]
    assert "<td>pi</td>" in rows[1]

"""The bottom line's words across trials, and Markdown text that stays literal."""

from __future__ import annotations

from markdown_it import MarkdownIt

from pytest_skill_eval.views.decision import aggregate_text
from pytest_skill_eval.views.summary import md_text


def _comparison(f2p: int, p2f: int, pairs: int, **extra: object) -> dict[str, object]:
    transitions = {"fail-to-pass": f2p, "pass-to-fail": p2f, "pass-to-pass": pairs - f2p - p2f}
    return {
        "id": "entry-in-fixed",
        "transitions": transitions,
        "discordant": {"fail-to-pass": f2p, "pass-to-fail": p2f},
        **extra,
    }


def test_an_adaptive_comparison_resolved_says_which_way_and_at_which_trial() -> None:
    group = {
        "adaptive": {"trialsUsed": 7},
        "comparisons": [
            _comparison(7, 0, 7, differenceUnresolved=False, sequential={"resolvedAtTrial": 7})
        ],
    }
    assert aggregate_text(group, []) == (
        "entry-in-fixed better with the skill at alpha 0.05 (resolved at trial 7)"
    )


def test_an_unresolved_comparison_says_how_many_more_trials_would_be_needed() -> None:
    group = {"trials": 5, "comparisons": [_comparison(2, 1, 5, differenceUnresolved=True)]}
    text = aggregate_text(group, [])
    assert text.startswith(
        "entry-in-fixed not resolved after 5 trials (2 fail-to-pass, 1 pass-to-fail); about "
    )
    assert text.endswith(" more paired trials would be needed")


def test_a_worse_resolved_comparison_says_worse() -> None:
    group = {
        "trials": 8,
        "comparisons": [_comparison(0, 8, 8, differenceUnresolved=False, mcnemarP=0.0078125)],
    }
    assert aggregate_text(group, []) == (
        "entry-in-fixed worse with the skill at alpha 0.05 (McNemar p=0.007812)"
    )


def test_agent_controlled_text_stays_literal_in_markdown() -> None:
    hostile = "a|b *em* _u_ [link](http://x) <img src=x> `code` @someone &amp; ~~s~~\nnext"
    markdown = f"| id |\n|---|\n| {md_text(hostile)} |\n"
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(markdown)
    inline = [t for t in tokens if t.type == "inline"]
    cells = [t for t in inline if t.content != "id"]
    assert len(cells) == 1  # one cell: the pipe did not split it, the newline did not end it
    kinds = {child.type for child in cells[0].children or []}
    assert kinds == {"text"}  # no emphasis, link, HTML, code or strikethrough
    text = "".join(child.content for child in cells[0].children or [])
    # As a reader sees it: the word joiners that keep GitHub from linking are invisible.
    assert text.replace("\u2060", "") == " ".join(hostile.split())

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from roam_core.mirror.events import make_live_event
from roam_sink_discord.format import (
    MESSAGE_LIMIT,
    format_turn,
    split_message,
    thread_name,
    units,
)


def _event(**changes: object):
    base = make_live_event(session_id="20260301_090000_abcdef", turn_id="1",
                           user_message="first line\nsecond", reply="r")
    return base.with_text(**changes)


def test_short_text_is_one_part() -> None:
    assert split_message("hello") == ["hello"]
    assert split_message("   \n\n ") == []


def test_paragraph_boundaries_are_preferred() -> None:
    paragraphs = [f"paragraph {n} " + "w" * 600 for n in range(6)]
    parts = split_message("\n\n".join(paragraphs))
    assert len(parts) == 2  # three paragraphs fit in a part; none is cut
    for part in parts:
        assert part.startswith("paragraph") and part.endswith("w")


def test_lines_then_words_then_characters() -> None:
    lines = "\n".join(f"line {n} " + "x" * 90 for n in range(60))
    assert all(part.startswith("line") for part in split_message(lines))
    words = " ".join(["word"] * 1000)
    assert all(part.startswith("word") and part.endswith("word") for part in
               split_message(words))
    blob = "z" * 4500
    assert [len(p) for p in split_message(blob)] == [2000, 2000, 500]


def test_astral_characters_and_combining_marks_are_never_cut() -> None:
    emoji = "🙂" * 1500  # 3000 UTF-16 units
    parts = split_message(emoji)
    assert all(units(p) <= MESSAGE_LIMIT for p in parts)
    assert "".join(parts) == emoji
    accented = "e\u0301" * 1500
    parts = split_message(accented)
    assert "".join(parts) == accented
    assert not any(unicodedata.combining(p[0]) for p in parts)
    family = "👩\u200d👩\u200d👧" * 500
    parts = split_message(family)
    assert "".join(parts) == family
    assert not any(p.startswith("\u200d") or p.endswith("\u200d") for p in parts)


def test_code_fences_are_closed_and_reopened() -> None:
    code = "```python\n" + "\n".join(f"print({n})" for n in range(600)) + "\n```\ndone"
    parts = split_message(code)
    assert len(parts) > 1
    for part in parts:
        assert part.count("```") % 2 == 0, part[:40]
    assert parts[1].startswith("```python\n")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=7000))
def test_any_text_splits_within_limits_losing_nothing(text: str) -> None:
    parts = split_message(text)
    assert all(0 < units(p) <= MESSAGE_LIMIT and p.strip() for p in parts)
    squeeze = "".join(ch for ch in "".join(parts) if not ch.isspace())
    original = "".join(ch for ch in text if not ch.isspace() and ch.isprintable())
    assert "".join(ch for ch in squeeze if ch.isprintable()) == original


def test_turn_format_names_both_sides() -> None:
    text = format_turn(_event(user_message="q", reply="a"))
    assert text == "**You**\nq\n\n**Hermes**\na"


def test_thread_names_are_sanitized_and_bounded() -> None:
    assert thread_name(_event(title="Fix\nthe\x00 build\u202e")) == "Fix the build"
    assert thread_name(_event(title="")) == "first line"
    assert thread_name(_event(title="", user_message="  \n")) == \
        "Hermes session 20260301_090000_abcdef"
    long = thread_name(_event(title="ж" * 300))
    assert units(long) <= 100 and long.endswith("…")
    assert units(thread_name(_event(title="🙂" * 80))) <= 100
    assert thread_name(_event(title="t", profile="work")) == "[work] t"


def test_an_unclosed_fence_in_the_users_text_cannot_swallow_the_reply() -> None:
    for user in ("look:\n```python\nprint(1)", "inline ``` opener", "```\n```\n```js"):
        text = format_turn(_event(user_message=user, reply="the answer"))
        before = text.split("**Hermes**")[0]
        assert before.count("```") % 2 == 0, text  # every fence opened is closed first
        assert text.endswith("**Hermes**\nthe answer")
    text = format_turn(_event(user_message="u", reply="```\nunclosed code"))
    assert text.count("```") % 2 == 0


def test_the_footer_names_model_profile_and_time() -> None:
    event = _event(model="stub-model", profile="work", time=1_772_355_600.0)
    assert "-#" not in format_turn(event)
    footer = format_turn(event, footer=True).splitlines()[-1]
    assert footer.startswith("-# ") and "stub-model" in footer and "work" in footer
    assert "2026-03-01 09:00 UTC" in footer

"""The demo outside a terminal: every line fits the width, wrapping moves whole words to
an indented next line, and a turn's opening words or a recalled record are cut at a word
boundary (issue 33 item 21)."""

from __future__ import annotations

import io
import re
from pathlib import Path

from langchain_tiered_memory.cli.demo import DemoResult, run_demo
from langchain_tiered_memory.cli.demo_script import SESSIONS
from langchain_tiered_memory.cli.output import clip, plain_console, wrapped

BAR = re.compile(r"\[[█·]+\]")
TURN = re.compile(r"^\s*(\d+) \[[█·]+\]\s+\d+/\d+ (.*)$")
USER_SAID = [turn.user for _, turns in SESSIONS for turn in turns]


def render(tmp_path: Path, width: int) -> tuple[list[str], DemoResult]:
    sink = io.StringIO()  # not a terminal
    result = run_demo(
        console=plain_console(file=sink, width=width),
        data_dir=tmp_path / f"demo-{width}",
        embeddings="none",
    )
    return sink.getvalue().splitlines(), result


def words(lines: list[str]) -> list[str]:
    """The words of every line but the turn lines (whose length follows the width)."""
    kept = " ".join(BAR.sub("[bar]", line) for line in lines if not TURN.match(line))
    return [w for w in kept.split() if set(w) != {"─"}]


def at_margin(lines: list[str]) -> list[str]:
    """The first word of each line that starts at the margin (a new line, not a wrap)."""
    starts = [BAR.sub("[bar]", line).split()[0] for line in lines if line and line[0] != " "]
    return ["rule" if set(w) == {"─"} else w for w in starts]


def ends_at_a_word(shown: str, text: str) -> bool:
    """``shown`` is ``text``, or its start cut after a whole word (marked ``…``)."""
    text = " ".join(text.split())
    if shown == text:
        return True
    start = shown.removesuffix("…")
    return shown.endswith("…") and text.startswith(start) and not text[len(start)].isalnum()


def test_clip_and_wrap_never_cut_a_word() -> None:
    said = "Hi! I'm Maya. I'm planning a trip and could use some help."
    for limit in range(8, len(said) + 1):
        assert len(clip(said, limit)) <= limit and ends_at_a_word(clip(said, limit), said)
    for width in range(15, 60):
        lines = wrapped("   recalled (turn 1): " + said, width, indent=3).splitlines()
        assert " ".join(" ".join(lines).split()) == "recalled (turn 1): " + said
        assert all(len(line) <= width for line in lines)
        assert all(line.startswith("     ") for line in lines[1:])  # continued: indented


def test_the_demo_fits_any_width_and_cuts_no_word(tmp_path: Path) -> None:
    wide, result = render(tmp_path, 1000)  # nothing wraps
    for width in (40, 80):
        lines, _ = render(tmp_path, width)
        assert [line for line in lines if len(line) > width] == []
        assert words(lines) == words(wide)  # wrapping moved words, cut none
        assert at_margin(lines) == at_margin(wide)  # a wrapped line goes on indented
        turns = [TURN.match(line) for line in lines]
        shown = [m for m in turns if m]
        assert len(shown) == len(USER_SAID)
        for match in shown:
            assert ends_at_a_word(match.group(2), USER_SAID[int(match.group(1)) - 1])
    previews = [line.split("): ", 1)[1] for line in wide if line.startswith("   recalled (")]
    recalled = [" / ".join(text.splitlines()) for a in result.answers for text in a["recalled"]]
    assert len(previews) == len(recalled) > 0
    for preview, text in zip(previews, recalled, strict=True):
        assert ends_at_a_word(preview, text), preview

"""The documentation builds with ``mkdocs build --strict`` (no broken link or reference)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
    reason="needs the dev extra (mkdocs, mkdocs-material, mkdocstrings[python])",
)
def test_docs_build_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        check=True,
        timeout=600,
    )
    page = site / "reference" / "memory" / "index.html"
    assert page.is_file()
    html = page.read_text(encoding="utf-8")
    assert 'id="langchain_tiered_memory.memory.TieredMemory"' in html
    assert 'id="langchain_tiered_memory.store.MemoryStore"' in html
    # by kind: a tutorial, how-tos, reference (configuration and the CLI in it), explanation
    for page in [
        "tutorial",
        "howto/migration",
        "reference/configuration",
        "reference/cli",
        "explanation/concepts",
        "explanation/reliability",
        "explanation/benchmarks",
    ]:
        assert (site / page / "index.html").is_file(), page


def test_the_backend_how_to_runs_and_its_suite_class_passes(tmp_path: Path) -> None:
    import re
    import textwrap

    page = (ROOT / "docs" / "howto" / "backend.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(\w+)\n(.*?)^```", page, flags=re.S | re.M)
    code = [body for lang, body in blocks if lang == "python"]
    shown = [body for lang, body in blocks if lang == "text"]
    assert len(code) == 2 and shown
    # the page's snippets, in order, as a user's test file: the first runs at import and
    # prints what the page shows; the second is the suite, run on the page's backend
    (tmp_path / "test_page.py").write_text(
        textwrap.dedent(
            """
            import contextlib, io
            _out = io.StringIO()
            with contextlib.redirect_stdout(_out):
                exec(compile(FIRST, "backend.md", "exec"))
            PRINTED = _out.getvalue()

            def test_the_first_snippet_prints_what_the_page_shows():
                assert PRINTED.strip() == SHOWN.strip()
            """
        )
        .replace("FIRST", repr(code[0]))
        .replace("SHOWN", repr(shown[0]))
        + code[1]
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "prints_what or retried_add or two_views or forget_user_removes",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\b4 passed\b", done.stdout), done.stdout[-2000:]

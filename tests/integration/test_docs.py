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

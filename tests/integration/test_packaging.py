"""The wheel PyPI would get: only the library, and metadata an index accepts."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        timeout=600,
    )
    (built,) = out.glob("langchain_tiered_memory-*.whl")
    return built


def test_the_wheel_holds_the_library_and_no_bench(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"langchain_tiered_memory", wheel.name.split("-py3")[0] + ".dist-info"}, tops
    assert "langchain_tiered_memory/testing/conformance/__init__.py" in names
    assert not [n for n in names if "bench" in n.split("/")[-1] or "/bench/" in n], names


def test_the_metadata_names_requirements_by_name(wheel: Path) -> None:
    # PyPI refuses a wheel whose requirements point at files or URLs (PEP 440 direct references)
    with zipfile.ZipFile(wheel) as whl:
        (metadata,) = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        fields = Parser().parsestr(whl.read(metadata).decode())
    requirements = [Requirement(r) for r in fields.get_all("Requires-Dist") or []]
    assert requirements and all(r.url is None for r in requirements), [
        str(r) for r in requirements if r.url
    ]
    bench = [r for r in requirements if r.name == "tiered-memory-bench"]
    assert {str(r.marker) for r in bench} == {'extra == "bench"', 'extra == "dev"'}


def test_the_test_command_installs_the_benches_from_their_folder() -> None:
    # tiered-memory-bench is named by name in the dev extra, so a checkout installs it beside
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e '.[dev]' -e ./benchmarks" in readme
    assert "pip install -e '.[dev]' -e ./benchmarks" in (ROOT / ".ci" / "run").read_text()

"""Every Python block in README.md and docs/ runs (examples cannot rot), and the docs site
builds with ``mkdocs build --strict`` (the test extra installs mkdocs; without it that test
fails rather than skips).

The blocks of one file run in order in one namespace, like a notebook. A block may be skipped
only when it needs the full benchmark data, by an HTML comment on the line before it:
``<!-- docs-test: skip (needs /work/shared/data: <reason>) -->``.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:<!--\s*docs-test:\s*(?P<skip>skip[^>]*)-->\s*\n)?"
                   r"```python\n(?P<code>.*?)```", re.S)


def blocks(path: Path) -> list[tuple[str, str | None]]:
    """The Python blocks of a markdown file, with the skip reason of each (or None)."""
    return [(m["code"], m["skip"]) for m in BLOCK.finditer(path.read_text())]


def test_skips_give_a_reason_about_benchmark_data():
    for path in FILES:
        for _, skip in blocks(path):
            if skip is not None:
                assert "shared/data" in skip, (path.name, skip)


#: pages whose examples solve on the embedded Adult data for more than ~10 s
SLOW = {"README.md", "mm.md"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW
                                  else p for p in FILES if blocks(p)], ids=lambda p: p.name)
def test_python_blocks_run(path, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)  # files the examples write land here
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": f"docs_{path.stem}"}
    for k, (code, skip) in enumerate(blocks(path)):
        if skip is not None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(compile(code, f"{path.name}[block {k}]", "exec"), namespace)
            except Exception as exc:  # name the block that failed
                raise AssertionError(f"{path.name} block {k} fails: {exc!r}\n{code}") from exc


def test_mkdocs_build_strict(tmp_path):
    """CI installs the test extra, which includes the docs extra: a missing mkdocs is a
    failure here, not a skip, so the strict build cannot silently stop running."""
    missing = [m for m in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
               if importlib.util.find_spec(m) is None]
    assert not missing, (f"{missing} not installed: the test extra installs the docs site "
                         f'tools (pip install ".[test]")')
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "index.html").exists()

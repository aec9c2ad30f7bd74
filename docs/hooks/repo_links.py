"""MkDocs hook: links from the docs to repository files outside ``docs/``.

Pages link to examples and other repository files with relative paths such as
``../examples/classic_chain.py``, which work when the Markdown is read on
GitHub. MkDocs cannot serve those files, so this hook rewrites each such link
to ``extra.repo_blob_url`` + the file's path in the repository. A link to a
file that does not exist is logged as a warning, which fails
``mkdocs build --strict``.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.plugins.repo_links")

# Markdown inline links and images: [text](target) or [text](target "title")
_LINK = re.compile(r"(\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
_FENCE = re.compile(r"^(\s*)(```|~~~)")


def _rewrite(target: str, page_dir: str, docs_dir: Path, repo_root: Path, base: str) -> str | None:
    """The absolute URL for ``target`` if it leaves the docs directory, else ``None``."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
        return None
    path, _, anchor = target.partition("#")
    docs_rel = posixpath.normpath(posixpath.join(page_dir, path))
    if not docs_rel.startswith("../"):
        return None  # inside docs/: MkDocs validates it
    repo_path = (docs_dir / docs_rel).resolve()
    try:
        rel = repo_path.relative_to(repo_root)
    except ValueError:
        return None
    if not repo_path.exists():
        return ""
    url = f"{base.rstrip('/')}/{rel.as_posix()}"
    if repo_path.is_dir():
        url = url.replace("/blob/", "/tree/", 1)
    return url + (f"#{anchor}" if anchor else "")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Rewrite links to repository files outside ``docs/`` (see the module docstring)."""
    base = (config.get("extra") or {}).get("repo_blob_url")
    if not base:
        return markdown
    docs_dir = Path(config["docs_dir"]).resolve()
    repo_root = Path(config["config_file_path"]).resolve().parent
    page_dir = posixpath.dirname(page.file.src_uri)
    out: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines(keepends=True):
        match = _FENCE.match(line)
        if match:
            marker = match.group(2)
            fence = None if fence == marker else (fence or marker)
            out.append(line)
            continue
        if fence is not None:
            out.append(line)
            continue

        def replace(m: re.Match[str]) -> str:
            url = _rewrite(m.group(2), page_dir, docs_dir, repo_root, base)
            if url is None:
                return m.group(0)
            if url == "":
                log.warning(
                    "Doc file '%s' links to '%s', which does not exist in the repository.",
                    page.file.src_uri,
                    m.group(2),
                )
                return m.group(0)
            return f"{m.group(1)}{url}{m.group(3)}"

        out.append(_LINK.sub(replace, line))
    return "".join(out)

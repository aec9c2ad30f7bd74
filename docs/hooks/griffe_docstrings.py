"""Griffe extension: read the package's Google-style docstrings as written.

The package's docstrings follow the Google style as Sphinx/Napoleon reads it,
with three habits that Griffe (the parser behind mkdocstrings) reads
differently. This extension normalises them before parsing, for the API
reference only; the source is not changed:

* ``Example:`` is a section for Napoleon but an admonition for Griffe, which
  would then render the ``>>>`` lines as prose. It becomes ``Examples:``.
* ``a, b, c: description`` in an ``Args:`` section documents several
  parameters at once; Griffe expects one name per item. The item is repeated
  for each name.
* reST roles (``:class:`~pkg.mod.Name```, ``:func:``, ``:meth:``, ``:data:``,
  ``:attr:``, ``:mod:``, ``:exc:``) become optional cross-references: a link
  when the target is in the reference, plain code otherwise. A paragraph
  ending in ``::`` ends in ``:`` (the indented block after it stays code).

Used from ``mkdocs.yml``::

    extensions:
      - docs/hooks/griffe_docstrings.py:GoogleDocstrings
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$")
_ARGS = re.compile(r"^(\s*)(Args|Arguments|Parameters|Params|Keyword Args|Other Parameters):\s*$")
_MULTI = re.compile(r"^(\s*)(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)+)\s*:(.*)$")
_ROLE = re.compile(r":(?:py:)?(class|func|meth|data|attr|mod|exc|obj):`(~?)([^`<>]+?)`")
_LITERAL_BLOCK = re.compile(r"(\S)::\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _split_multi_params(lines: list[str]) -> list[str]:
    out: list[str] = []
    section: int | None = None  # indent of the current Args: header
    i = 0
    while i < len(lines):
        line = lines[i]
        header = _ARGS.match(line)
        if header:
            section = len(header.group(1))
            out.append(line)
            i += 1
            continue
        if section is not None and line.strip() and _indent(line) <= section:
            section = None
        multi = _MULTI.match(line) if section is not None else None
        if multi is None:
            out.append(line)
            i += 1
            continue
        item_indent = len(multi.group(1))
        names = [n.strip() for n in multi.group(2).split(",")]
        body = [multi.group(3)]
        i += 1
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > item_indent):
            body.append(lines[i])
            i += 1
        while len(body) > 1 and not body[-1].strip():
            body.pop()
        for name in names:
            out.append(f"{' ' * item_indent}{name}:{body[0]}")
            out.extend(body[1:])
    return out


def _resolve(obj: griffe.Object, target: str) -> str | None:
    target = target.strip().lstrip(".")
    if target.startswith("langchain_tiered_memory"):
        return target
    head, _, rest = target.partition(".")
    try:
        path = obj.resolve(head)
    except Exception:  # noqa: BLE001 - an unknown name is rendered as code
        return None
    return f"{path}.{rest}" if rest else path


def _roles(text: str, obj: griffe.Object) -> str:
    def replace(match: re.Match[str]) -> str:
        role, short, target = match.groups()
        shown = target.strip().lstrip(".")
        if short:
            shown = shown.rsplit(".", 1)[-1]
        if role in ("func", "meth"):
            shown += "()"
        code = f"<code>{html.escape(shown)}</code>"
        path = _resolve(obj, target)
        if path is None:
            return code
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return _ROLE.sub(replace, text)


def normalise(text: str, obj: griffe.Object) -> str:
    """The docstring ``text`` of ``obj`` with the three habits above normalised."""
    lines = [_EXAMPLE.sub(r"\1Examples:", line) for line in text.splitlines()]
    lines = _split_multi_params(lines)
    out: list[str] = []
    in_doctest = False
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith((">>>", "...")):
            in_doctest = True
        elif not stripped:
            in_doctest = False
        if in_doctest:
            out.append(line)
            continue
        line = _LITERAL_BLOCK.sub(r"\1:", line)
        out.append(_roles(line, obj))
    return "\n".join(out)


class GoogleDocstrings(griffe.Extension):
    """Normalise every docstring of the loaded package (see the module docstring)."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring once the object tree is complete."""
        docstring = obj.docstring
        if docstring is not None and obj.path.startswith("langchain_tiered_memory"):
            docstring.value = normalise(docstring.value, obj)

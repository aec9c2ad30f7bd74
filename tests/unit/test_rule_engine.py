"""The rule engine is language-neutral; languages and their rules are data it is given."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from langchain_tiered_memory.write.rules import LANGUAGES, find_facts
from langchain_tiered_memory.write.rules.en import ENGLISH
from langchain_tiered_memory.write.rules.engine import Language, extract, rule
from langchain_tiered_memory.write.rules.zh import CHINESE


def test_the_engine_imports_no_language() -> None:
    source = Path(extract.__code__.co_filename).read_text(encoding="utf-8")
    imported = [
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module
    ]
    assert imported and not [m for m in imported if m.endswith((".en", ".zh")) or ".en." in m]


def test_a_language_is_data_the_engine_is_given() -> None:
    dutch = Language(
        "nl",
        rules=(rule(r"\bik ben (?P<x>vegan)\b", lambda m, _: ("diet", m.group("x"))),),
        script=re.compile(r"\bik\b", re.I),
    )
    assert [(f.subject, f.content) for f in extract("Ik ben vegan.", (dutch, ENGLISH))] == [
        ("diet", "vegan")
    ]
    # without the language, the engine reads it as English and finds nothing
    assert extract("Ik ben vegan.", (ENGLISH,)) == []


def test_the_default_languages_read_chinese_first_then_english() -> None:
    assert LANGUAGES == (CHINESE, ENGLISH)
    assert [f.subject for f in find_facts("我对花生过敏。I'm vegan.")] == ["allergy:花生", "diet"]


def test_the_former_module_keeps_its_names() -> None:
    from langchain_tiered_memory.write import fact_rules

    for name in ("find_facts", "normalise_message", "readable_prefix", "READ_LIMIT"):
        assert getattr(fact_rules, name) is not None
    assert fact_rules.find_facts is find_facts

"""Facts bench: does a fact said in passing reach the prompt much later?

Reads the format of ``facts/facts_dev.json`` (see the data README): items of
kind ``fact``, ``update`` or ``non_fact``, each with user turns, a later
``question`` and the strings to check (``expect``, ``stale``, ``forbid``).
Every item is replayed in a fresh memory (its own user in one
:class:`~langchain_tiered_memory.store.MemoryStore`) through the public API:
its turns, with generic filler turns between the turns of an update and
after the last one (so the statements leave the buffer), then the question;
the prompt is assembled with :meth:`~langchain_tiered_memory.memory.TieredMemory.build_context`
exactly as an application would.

Per item it records, case-insensitively:

* **core hit** - every ``expect`` string in the user's active core facts;
* **context hit** - every ``expect`` string somewhere in the assembled prompt;
* **stale as current** - a ``stale`` string in an active core fact;
* **false fact** - a ``forbid`` string in an active core fact;
* **gate fired** - whether the recall gate searched the archive.

With a model extractor (``--extractor MODEL``: the production path, batched off
the add) every item waits for its pending batch before the question
(:meth:`~langchain_tiered_memory.memory.TieredMemory.flush_extraction`), and
``extraction`` reports the cost per 100 replayed turns (:func:`extraction_cost`):
model calls, prompt and completion tokens, the wall time of the calls and of
the whole replay, and the calls whose answer was no valid structured output.

Core and context hits are fractions of the ``fact`` and ``update`` items,
stale-as-current of the ``update`` items, false facts of the ``non_fact``
items, and the gate's rate of the ``fact`` and ``update`` items (each needs a
stored fact); ``by_kind`` and ``by_lang`` break them down.

The filler (:func:`load_filler`) is general-knowledge questions with short
answers, in English and Chinese, written for this project and impersonal: it
never states anything about the user. A filler turn that happens to contain
one of an item's check strings is skipped for that item, so the filler can
neither satisfy nor violate a check.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> items = [FactItem("t1", "fact", "en", (("I'm allergic to peanuts.", "Noted."),),
    ...                   "Suggest a snack for the office.", ("peanut",))]
    >>> r = run_facts_bench(items, embeddings=DeterministicFakeEmbedding(size=16), filler_turns=5)
    >>> r["core_hit"], r["context_hit"], r["items"]
    (1.0, 1.0, 1)
"""

from __future__ import annotations

import importlib.resources
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.values.turns import message_text
from langchain_tiered_memory.write.model_extractor import ModelExtractor
from langchain_tiered_memory.write.writer import Extractor

__all__ = [
    "KINDS",
    "METRICS",
    "FactItem",
    "ItemResult",
    "extraction_cost",
    "load_facts",
    "load_filler",
    "replay_item",
    "run_facts_bench",
]

KINDS = ("fact", "update", "non_fact")
#: The per-group metrics, as fractions (``None`` where a group has no item they apply to).
METRICS = ("context_hit", "core_hit", "stale_as_current", "false_facts", "gate_fired")

BENCH_SYSTEM_PROMPT = (
    "You are a friendly assistant in a long-running conversation. Use the memory "
    "sections to stay consistent with what the user told you before."
)


@dataclass(frozen=True)
class FactItem:
    """One item of a facts file.

    Attributes:
        id: Item id.
        kind: ``fact``, ``update`` or ``non_fact``.
        lang: Language code (``en``, ``zh``); picks the filler.
        turns: ``(user, assistant)`` pairs that carry (or do not carry) the information.
        question: The later user message.
        expect: Strings that must reach core memory and the prompt.
        stale: Old values that must not be current any more (updates).
        forbid: Strings that must not become a fact about the user (non-facts).
    """

    id: str
    kind: str
    lang: str
    turns: tuple[tuple[str, str], ...]
    question: str
    expect: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()

    def checks(self) -> tuple[str, ...]:
        """Every check string, lower-cased."""
        return tuple(s.lower() for s in (*self.expect, *self.stale, *self.forbid))


def _strings(raw: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(s, str) and s for s in value):
        raise ValueError(f"{where}: {key!r} must be a list of non-empty strings")
    return tuple(value)


def load_facts(path: str | Path) -> list[FactItem]:
    """Read a facts file (``{"items": [...]}`` or a bare list of items).

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: naming the item and field that is malformed.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"No such file: {path}. Pass --data PATH to a facts file (the format is in "
            "benchmarks/README.md, 'facts'; tests/fixtures/facts_heldout.json is one)."
        )
    raw = json.loads(path.read_text(encoding="utf-8"))
    entries = raw.get("items") if isinstance(raw, dict) else raw
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected an object with 'items' or a list of items")
    items: list[FactItem] = []
    for n, entry in enumerate(entries):
        where = f"{path} item {n} ({entry.get('id', '?') if isinstance(entry, dict) else '?'})"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: an item must be an object")
        kind = entry.get("kind")
        if kind not in KINDS:
            raise ValueError(f"{where}: kind must be one of {list(KINDS)}, got {kind!r}")
        turns = entry.get("turns")
        if (
            not isinstance(turns, list)
            or not turns
            or not all(
                isinstance(t, dict)
                and isinstance(t.get("user"), str)
                and isinstance(t.get("assistant", ""), str)
                for t in turns
            )
        ):
            raise ValueError(f"{where}: 'turns' must be a list of {{user, assistant}} objects")
        question = entry.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"{where}: 'question' must be a non-empty string")
        item = FactItem(
            id=str(entry.get("id", n)),
            kind=kind,
            lang=str(entry.get("lang", "en")),
            turns=tuple((t["user"], t.get("assistant", "")) for t in turns),
            question=question,
            expect=_strings(entry, "expect", where),
            stale=_strings(entry, "stale", where),
            forbid=_strings(entry, "forbid", where),
        )
        if kind != "non_fact" and not item.expect:
            raise ValueError(f"{where}: a {kind} item needs 'expect' strings")
        items.append(item)
    return items


def load_filler(path: str | Path | None = None) -> dict[str, list[tuple[str, str]]]:
    """Filler turns by language (default: the generic set shipped with the package).

    The file is ``{"en": [[user, assistant], ...], "zh": [...]}``.
    """
    if path is None:
        data = importlib.resources.files("tiered_memory_bench") / "data"
        raw = json.loads((data / "filler.json").read_text(encoding="utf-8"))
    else:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    filler: dict[str, list[tuple[str, str]]] = {}
    for lang, pairs in raw.items():
        if lang == "description":
            continue
        if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p)
            for p in pairs
        ):
            raise ValueError(f"filler {lang!r}: expected a list of [user, assistant] pairs")
        filler[lang] = [(p[0], p[1]) for p in pairs]
    if "en" not in filler or not filler["en"]:
        raise ValueError("the filler needs English ('en') turns")
    return filler


@dataclass
class ItemResult:
    """What one replayed item showed."""

    item: FactItem
    core: list[str]
    context_hit: bool
    core_hit: bool
    stale_as_current: bool
    false_fact: bool
    gate_fired: bool
    gate_reason: str
    statements_evicted: bool
    missing_in_core: list[str] = field(default_factory=list)
    missing_in_context: list[str] = field(default_factory=list)
    turns: int = 0


def _filler_for(
    item: FactItem, filler: dict[str, list[tuple[str, str]]], offset: int
) -> Callable[[int], list[tuple[str, str]]]:
    pool = filler.get(item.lang) or filler["en"]
    checks = item.checks()
    usable = [p for p in pool if not any(c in f"{p[0]} {p[1]}".lower() for c in checks)]
    if not usable:
        raise ValueError(f"item {item.id}: every filler turn contains one of its check strings")
    position = offset % len(usable)

    def take(n: int) -> list[tuple[str, str]]:
        nonlocal position
        out = [usable[(position + i) % len(usable)] for i in range(n)]
        position = (position + n) % len(usable)
        return out

    return take


def replay_item(
    item: FactItem,
    store: MemoryStore,
    *,
    filler: dict[str, list[tuple[str, str]]],
    filler_turns: int = 60,
    offset: int = 0,
    context_window: int = 4096,
    model: str = "gpt-4o-mini",
    extractor: Extractor | ModelExtractor | None = None,
    gate: Literal["auto", "learned"] = "auto",
) -> ItemResult:
    """Replay one item in a fresh memory (user ``item.id``) and score it (a model
    extractor's pending batch is extracted before the question)."""
    memory = store.memory(
        f"facts-bench:{item.id}",
        "thread",
        model=model,
        context_window=context_window,
        system_prompt=BENCH_SYSTEM_PROMPT,
        extractor=extractor,
        gate=gate,
    )
    take = _filler_for(item, filler, offset)
    statement_turns: list[int] = []
    for n, (user, assistant) in enumerate(item.turns):
        statement_turns.append(memory.state.next_index)
        memory.add_messages([HumanMessage(user), AIMessage(assistant)])
        # filler between the turns of an update, and after the last turn of every item
        if n < len(item.turns) - 1 and item.kind != "update":
            continue
        for question, answer in take(filler_turns):
            memory.add_messages([HumanMessage(question), AIMessage(answer)])
    if not memory.flush_extraction(timeout=3600):
        raise TimeoutError(f"item {item.id}: the model extractor did not finish in an hour")
    memory.add_messages([HumanMessage(item.question)])
    context = memory.build_context()
    prompt = "\n".join(message_text(m) for m in context.messages).lower()
    core = [f"{f.subject}: {f.content}" for f in memory.core.active()]
    core_text = "\n".join(core).lower()
    buffered = {t.index for t in memory.state.turns}
    missing_core = [s for s in item.expect if s.lower() not in core_text]
    missing_context = [s for s in item.expect if s.lower() not in prompt]
    decision = context.gate
    return ItemResult(
        item=item,
        core=core,
        context_hit=not missing_context,
        core_hit=not missing_core,
        stale_as_current=any(s.lower() in core_text for s in item.stale),
        false_fact=any(s.lower() in core_text for s in item.forbid),
        gate_fired=bool(decision and decision.recall),
        gate_reason=decision.reason if decision else "no gate",
        statements_evicted=not buffered & set(statement_turns),
        missing_in_core=missing_core,
        missing_in_context=missing_context,
        turns=memory.state.next_index,
    )


def _fraction(flags: Sequence[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


def _summarise(results: Sequence[ItemResult]) -> dict[str, Any]:
    needs = [r for r in results if r.item.kind in ("fact", "update")]
    updates = [r for r in results if r.item.kind == "update"]
    non_facts = [r for r in results if r.item.kind == "non_fact"]
    return {
        "items": len(results),
        "context_hit": _fraction([r.context_hit for r in needs]),
        "core_hit": _fraction([r.core_hit for r in needs]),
        "stale_as_current": _fraction([r.stale_as_current for r in updates]),
        "false_facts": _fraction([r.false_fact for r in non_facts]),
        "gate_fired": _fraction([r.gate_fired for r in needs or results]),
    }


def _miss(r: ItemResult) -> dict[str, Any]:
    return {
        "id": r.item.id,
        "kind": r.item.kind,
        "lang": r.item.lang,
        "question": r.item.question,
        "expect": list(r.item.expect),
        "missing_in_core": r.missing_in_core,
        "missing_in_context": r.missing_in_context,
        "stale_as_current": [s for s in r.item.stale if s.lower() in "\n".join(r.core).lower()],
        "false_facts": [s for s in r.item.forbid if s.lower() in "\n".join(r.core).lower()],
        "gate": r.gate_reason,
        "core_memory": r.core,
    }


#: What :func:`extraction_cost` reports, from the counter of a model extractor
#: (:class:`ModelExtractor`) it sums.
COST_COUNTERS = {
    "model_calls": "calls",
    "prompt_tokens": "input_tokens",
    "completion_tokens": "output_tokens",
    "parse_failures": "parse_failures",
    "model_decisions": "decisions",
    "model_seconds": "seconds",
}


def extraction_cost(
    extractors: Sequence[object], turns: int, wall_seconds: float
) -> dict[str, Any]:
    """What extraction cost over ``turns`` replayed turns, and per 100 turns.

    Sums the counters of the distinct ``extractors`` (an extractor without them -
    the rules - counts nothing): model calls, prompt and completion tokens (the
    provider's counts, else the bench's token counter), parse failures (answers
    that were no valid structured output), the decisions answered other than
    ``nothing`` and the seconds spent in model calls; ``wall_seconds`` is the whole
    replay's time.

    Example:
        >>> class Used:
        ...     calls, input_tokens, output_tokens, parse_failures, seconds = 3, 900, 60, 1, 1.5
        ...     decisions = 2
        >>> cost = extraction_cost([Used(), Used()], turns=200, wall_seconds=10.0)
        >>> cost["per_100_turns"]["model_calls"], cost["per_100_turns"]["wall_seconds"]
        (3.0, 5.0)
    """
    unique = list({id(e): e for e in extractors}.values())
    totals: dict[str, Any] = {
        name: sum(getattr(e, counter, 0) for e in unique) for name, counter in COST_COUNTERS.items()
    }
    totals["model_seconds"] = round(float(totals["model_seconds"]), 2)
    totals["wall_seconds"] = round(wall_seconds, 2)
    scale = 100 / turns if turns else 0.0
    return {
        "turns": turns,
        "totals": totals,
        "per_100_turns": {name: round(value * scale, 2) for name, value in totals.items()},
    }


def run_facts_bench(
    items: Sequence[FactItem],
    *,
    embeddings: Embeddings | str | None = None,
    context_window: int = 4096,
    model: str = "gpt-4o-mini",
    filler_turns: int = 60,
    filler: dict[str, list[tuple[str, str]]] | None = None,
    extractor_factory: Callable[[], Extractor | ModelExtractor] | None = None,
    gate: Literal["auto", "learned"] = "auto",
    on_item: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Replay every item and return the JSON-ready report.

    Args:
        items: From :func:`load_facts`.
        embeddings: The store's embedder (default: the library's offline default).
        context_window: The memory's window; small enough that the filler
            pushes the statements out of the buffer (``statements_evicted``
            reports whether it did).
        model: Model whose tokenizer counts the budget.
        filler_turns: Filler turns after the turns (and between an update's turns).
        filler: Filler by language (default: :func:`load_filler`).
        extractor_factory: Builds the fact extractor per item (default: the memory's,
            ``"rules+links"``);
            a :class:`ModelExtractor` runs the production model path (its counters
            give ``extraction``'s cost).
        gate: The memory's recall gate: ``"auto"`` (the rules) or ``"learned"``.
        on_item: Progress callback, called once per item.
    """
    if filler_turns < 0:
        raise ValueError("filler_turns must be >= 0")
    filler = filler or load_filler()
    started = time.perf_counter()
    results: list[ItemResult] = []
    extractors: list[object] = []
    with tempfile.TemporaryDirectory(prefix="facts-bench-") as tmp:
        store = MemoryStore(Path(tmp) / "store", embeddings=embeddings)
        store_embeddings = store.embeddings
        try:
            for n, item in enumerate(items):
                extractor = extractor_factory() if extractor_factory else None
                extractors.append(extractor)
                results.append(
                    replay_item(
                        item,
                        store,
                        filler=filler,
                        filler_turns=filler_turns,
                        offset=7 * n,
                        context_window=context_window,
                        model=model,
                        extractor=extractor,
                        gate=gate,
                    )
                )
                if on_item is not None:
                    on_item(1)
        finally:
            store.close()
    report: dict[str, Any] = {"bench": "facts", **_summarise(results)}
    report["by_kind"] = {
        kind: _summarise([r for r in results if r.item.kind == kind])
        for kind in KINDS
        if any(r.item.kind == kind for r in results)
    }
    report["by_lang"] = {
        lang: _summarise([r for r in results if r.item.lang == lang])
        for lang in sorted({r.item.lang for r in results})
    }
    report["statements_evicted"] = _fraction([r.statements_evicted for r in results])
    report["settings"] = {
        "context_window": context_window,
        "model": model,
        "gate": gate,
        "filler_turns": filler_turns,
        "embeddings": type(store_embeddings).__name__,
    }
    report["misses"] = [
        _miss(r)
        for r in results
        if (r.item.kind != "non_fact" and not (r.core_hit and r.context_hit))
        or r.stale_as_current
        or r.false_fact
    ]
    seconds = time.perf_counter() - started
    report["extraction"] = extraction_cost(extractors, sum(r.turns for r in results), seconds)
    report["seconds"] = round(seconds, 2)
    report["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    return report

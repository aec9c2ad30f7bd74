"""The seam between a view and its store: TieredMemory needs only the Store protocol."""

from __future__ import annotations

import inspect

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryStore, TieredMemory
from langchain_tiered_memory.storage import open_backend
from langchain_tiered_memory.storage.base import MemoryBackend


class MinimalStore:
    """A store that is nothing but the protocol: a backend, no embedder, the forget."""

    def __init__(self) -> None:
        self.backend: MemoryBackend = open_backend(None, embeddings=None)
        self.embeddings: Embeddings | None = None
        self.forgotten: list[str] = []

    def forget_user(self, user_id: str) -> int:
        self.forgotten.append(user_id)
        return self.backend.forget_user(user_id)


def test_a_memory_without_a_store_gets_a_private_memory_store() -> None:
    memory = TieredMemory(context_window=2048)
    assert isinstance(memory.store, MemoryStore)
    assert memory.store.embeddings is None  # keyword recall only
    assert TieredMemory(context_window=2048).store is not memory.store  # private
    memory.store.close()


def test_a_view_works_over_any_store_with_the_protocol() -> None:
    store = MinimalStore()
    memory = TieredMemory(store=store, user_id="ana", context_window=2048)
    memory.add_messages([HumanMessage("I'm allergic to peanuts."), AIMessage("Noted.")])
    other = TieredMemory(store=store, user_id="ana", context_window=2048)  # a second view
    assert other.core.get("allergy:peanuts") is not None
    assert len(other.messages) == 2
    context = other.build_context(query="am I allergic to anything?", recall=True)
    assert any("allergic to peanuts" in str(m.content) for m in context.messages)
    assert [e.kind for e in store.backend.audit.events("ana")][-2:] == ["recall", "page_in"]
    memory.forget_user()
    assert store.forgotten == ["ana"] and other.messages == [] and other.core.active() == []
    store.backend.close()


class CountingBackend:
    """A backend that counts the calls a view makes (its audit log's too), passing each on."""

    def __init__(
        self, backend: object, calls: dict[str, int] | None = None, prefix: str = ""
    ) -> None:
        self._backend = backend
        self._prefix = prefix
        self.calls: dict[str, int] = {} if calls is None else calls

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._backend, name)
        if name == "audit":
            return CountingBackend(attr, self.calls, "audit.")
        if not callable(attr):
            return attr
        name = self._prefix + name

        def counted(*args: object, **kwargs: object) -> object:
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*args, **kwargs)

        return counted


def chatty_turn(i: int) -> list:
    return [
        HumanMessage(f"I'm allergic to peanuts and my cat {i} is called Tom{i}." + " more" * 30),
        AIMessage("Noted." + " fine" * 30),
    ]


def test_one_add_reads_the_thread_once() -> None:
    store = MinimalStore()
    counting = CountingBackend(store.backend)
    store.backend = counting  # type: ignore[assignment]
    memory = TieredMemory(store=store, user_id="ana", context_window=1024)
    for i in range(30):
        before = dict(counting.calls)
        memory.add_messages(chatty_turn(i))
        reads = counting.calls.get("read_thread", 0) - before.get("read_thread", 0)
        assert reads == 1, (i, counting.calls)
    # compressions and extractions happened, committed without reading the thread back
    extractions = counting.calls.get("commit_extraction", 0) + counting.calls.get(
        "advance_extraction", 0
    )
    assert counting.calls["commit_compression"] >= 5 and extractions
    # and the view's copy is what a fresh view reads from the store
    fresh = TieredMemory(store=store, user_id="ana", context_window=1024)
    assert memory.head == fresh.head
    assert memory.state == fresh.state
    store.backend.close()


def test_one_prompt_reads_the_thread_once_and_writes_the_audit_log_once() -> None:
    store = MinimalStore()
    counting = CountingBackend(store.backend)
    store.backend = counting  # type: ignore[assignment]
    memory = TieredMemory(store=store, user_id="ana", context_window=1024)
    for i in range(6):
        memory.add_messages(chatty_turn(i))
    memory.add_messages([HumanMessage("What is my cat called?")])
    before = dict(counting.calls)
    context = memory.build_context()
    made = {k: v - before.get(k, 0) for k, v in counting.calls.items() if v != before.get(k, 0)}
    assert context.gate is not None and context.gate.recall and context.recalled
    assert made.get("read_thread") == 1, made
    assert sum(v for k, v in made.items() if k.startswith("audit.")) == 1, made
    kinds = [e.kind for e in store.backend.audit.events("ana")][-2:]
    assert kinds == ["recall", "page_in"]  # both events, in one transaction
    store.backend.close()


# -- MemoryStore.memory: ids and options as TieredMemory takes them (issue 33 item 20) ----


def test_a_non_string_id_is_a_type_error_and_a_bad_string_a_value_error() -> None:
    store = MemoryStore()
    for bad in (0, False, None, 7.5, b"ana"):
        with pytest.raises(TypeError, match="must be a non-empty string"):
            store.memory(bad, "t")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="must be a non-empty string"):
            store.memory("ana", bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            TieredMemory(context_window=1024, user_id=bad)  # type: ignore[arg-type]
    for bad_text in ("", "   ", "ana\x00"):
        with pytest.raises(ValueError):
            store.memory(bad_text, "t")
    assert store.users() == []  # nothing written


def test_memory_spells_out_tiered_memorys_options() -> None:
    # every TieredMemory option is a named, typed keyword of MemoryStore.memory (editors and
    # type checkers see them), with the same default; nothing hides behind **kwargs
    view = inspect.signature(MemoryStore.memory)
    full = inspect.signature(TieredMemory.__init__)
    assert not [p for p in view.parameters.values() if p.kind is p.VAR_KEYWORD]
    options = {n: p for n, p in full.parameters.items() if n not in ("self", "store")}
    assert set(view.parameters) - {"self"} == set(options)
    for name, param in options.items():
        if name in ("user_id", "thread_id"):
            continue
        mine = view.parameters[name]
        assert mine.kind is mine.KEYWORD_ONLY, name
        assert (mine.default, mine.annotation) == (param.default, param.annotation), name
    documented = MemoryStore.memory.__doc__ or ""
    assert all(f"{name}:" in documented for name in options), "each option is documented"


def test_memory_passes_every_option_through(tmp_path) -> None:
    events = []
    with MemoryStore(tmp_path / "m", embeddings="none") as store:
        memory = store.memory(
            "ana", "t", context_window=2048, system_prompt="Be brief.", recall_k=2,
            gate="never", tools_tokens=7, on_event=events.append, extract_every=3,
        )  # fmt: skip
        assert memory.budget.context_window == 2048 and memory.tools_tokens == 7
        assert (memory.user_id, memory.thread_id, memory.system_prompt) == ("ana", "t", "Be brief.")


@pytest.mark.slow
def test_mypy_sees_the_options_of_memory(tmp_path) -> None:
    from mypy import api

    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from langchain_tiered_memory import MemoryStore\n"
        "store = MemoryStore()\n"
        'store.memory("ana", "t", context_windw=4096)\n'
        'store.memory("ana", "t", recall_k="3")\n'
        'store.memory("ana", "t", context_window=4096, recall_k=3)\n'
    )
    out, _, status = api.run(
        [str(snippet), "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache")]
    )
    assert status == 1, out
    assert 'Unexpected keyword argument "context_windw"' in out
    assert 'Argument "recall_k" to "memory" of "MemoryStore" has incompatible type "str"' in out
    assert "snippet.py:5" not in out  # the right call is clean

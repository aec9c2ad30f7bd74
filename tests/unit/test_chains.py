"""Drop-in memory for existing chains: RunnableWithMessageHistory and classic chains."""

from __future__ import annotations

import inspect
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate
from langchain_core.runnables import ConfigurableFieldSpec, RunnableConfig
from langchain_core.runnables.history import RunnableWithMessageHistory
from pydantic import Field

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.integrations.classic import (
    ClassicSummarizer,
    TieredConversationMemory,
    budget_for_buffer,
)
from langchain_tiered_memory.integrations.history import (
    TieredChatMessageHistory,
    TieredHistoryFactory,
    tiered_history_factory,
)
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.tiers.summarize import SummarizationError
from langchain_tiered_memory.values.turns import Turn

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SYSTEM = "You are a helpful travel assistant. Answer briefly."


# --- fakes that record what the model receives --------------------------------


class RecordingChatModel(FakeListChatModel):
    """A fake chat model that keeps every prompt it is sent."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self.seen.append(list(messages))
        return super()._call(messages, *args, **kwargs)


class RecordingLLM(FakeListLLM):
    """A fake completion LLM that keeps every prompt it is sent."""

    seen: list[str] = Field(default_factory=list)

    def _call(self, prompt: str, *args: Any, **kwargs: Any) -> str:
        self.seen.append(prompt)
        return super()._call(prompt, *args, **kwargs)


def _chat_chain(model: RecordingChatModel) -> Any:
    prompt = ChatPromptTemplate(
        [("system", SYSTEM), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    return prompt | model


def _session_config(session: str) -> RunnableConfig:
    return {"configurable": {"session_id": session}}


def _human_texts(messages: list[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, HumanMessage)]


# --- TieredChatMessageHistory ------------------------------------------------


def test_history_view_drops_only_the_pinned_system_prompt() -> None:
    history = TieredChatMessageHistory(context_window=4096, system_prompt=SYSTEM)
    history.add_messages([HumanMessage("I'm allergic to peanuts."), AIMessage("Noted.")])
    view = history.messages
    assert [m.type for m in view] == ["system", "human", "ai"]
    assert "allergic to peanuts" in str(view[0].content)  # core memory stays
    assert all(m.content != SYSTEM for m in view)

    full = TieredChatMessageHistory(history.memory, include_system_prompt=True).messages
    assert full[0] == SystemMessage(SYSTEM)
    assert full[1:] == view
    assert history.context.total_tokens <= history.memory.budget.input_budget


def test_history_add_message_and_reads_are_stable_between_writes() -> None:
    history = TieredChatMessageHistory(context_window=4096)
    history.add_message(HumanMessage("hello"))
    history.add_message(AIMessage("hi!"))
    first = history.messages
    assert first == history.messages
    assert first is not history.messages  # callers may mutate their copy
    history.add_messages([HumanMessage("again")])
    assert _human_texts(history.messages) == ["hello", "again"]


def test_history_clear_keeps_long_term_memory_and_forget_user_does_not() -> None:
    history = TieredChatMessageHistory(context_window=4096, system_prompt=SYSTEM)
    history.add_messages([HumanMessage("I live in Lisbon."), AIMessage("Lovely city.")])
    history.clear()
    assert _human_texts(history.messages) == []
    assert history.memory.state.summary == ""
    assert history.memory.core.get("home_city") is not None
    assert history.memory.system_prompt == SYSTEM
    history.add_messages([HumanMessage("next"), AIMessage("ok")])
    assert history.memory.state.turns[0].index == 1  # turn numbers keep counting
    history.forget_user()
    assert history.memory.core.get("home_city") is None
    assert _human_texts(history.messages) == []


async def test_history_async_twins() -> None:
    history = TieredChatMessageHistory(context_window=4096)
    await history.aadd_messages([HumanMessage("I'm allergic to shellfish."), AIMessage("OK.")])
    messages = await history.aget_messages()
    assert _human_texts(messages) == ["I'm allergic to shellfish."]
    await history.aclear()
    assert _human_texts(await history.aget_messages()) == []


def test_history_reserve_tokens_leaves_room_for_the_new_input() -> None:
    memory = TieredMemory(context_window=1024)
    for i in range(6):
        memory.add_messages([HumanMessage(f"Question {i} " + "word " * 40), AIMessage("Answer.")])
    plain = TieredChatMessageHistory(memory)
    reserved = TieredChatMessageHistory(memory, reserve_tokens=600)
    assert len(reserved.messages) < len(plain.messages)
    count = memory.counter.count_messages(reserved.messages)
    assert count <= memory.budget.input_budget - 600
    assert reserved.messages[-2:] == plain.messages[-2:]  # the newest turn stays
    with pytest.raises(ValueError, match="reserve_tokens"):
        TieredChatMessageHistory(memory, reserve_tokens=-1)


def test_history_rejects_memory_and_kwargs_together() -> None:
    with pytest.raises(TypeError, match="not both"):
        TieredChatMessageHistory(TieredMemory(context_window=4096), context_window=2048)


# --- the factory ---------------------------------------------------------------


def test_factory_signature_and_key_resolution() -> None:
    factory = tiered_history_factory(context_window=2048)
    assert list(inspect.signature(factory).parameters) == ["user_id", "conversation_id"]
    session = factory("s1")
    assert (session.memory.user_id, session.memory.thread_id) == ("s1", "s1")
    assert factory(session_id="s1") is session
    thread = factory(user_id="ana", conversation_id="trip")
    assert (thread.memory.user_id, thread.memory.thread_id) == ("ana", "trip")
    assert factory("ana", "trip") is thread
    assert factory(user_id="ana").memory.thread_id == "default"
    assert sorted(factory.sessions()) == [("ana", "default"), ("ana", "trip"), ("s1", "s1")]
    with pytest.raises(ValueError, match="session_id"):
        factory("")
    with pytest.raises(TypeError, match="unexpected argument"):
        factory(user="ana")
    renamed = TieredHistoryFactory(context_window=2048, user_key="uid", thread_key="thread")
    assert list(inspect.signature(renamed).parameters) == ["uid", "thread"]
    assert renamed(uid="u", thread="t").memory.thread_id == "t"
    with pytest.raises(ValueError, match="MemoryStore"):
        TieredHistoryFactory(context_window=2048, max_sessions=2)
    with pytest.raises(TypeError, match="set by the factory"):
        TieredHistoryFactory(context_window=2048, user_id="x")


def test_lcel_session_id_form_keeps_sessions_apart() -> None:
    model = RecordingChatModel(responses=["Noted!"])
    factory = tiered_history_factory(context_window=4096, system_prompt=SYSTEM)
    chain = RunnableWithMessageHistory(
        _chat_chain(model), factory, input_messages_key="input", history_messages_key="history"
    )
    chain.invoke({"input": "I'm allergic to peanuts."}, config=_session_config("a"))
    chain.invoke({"input": "I live in Oslo."}, config=_session_config("b"))
    chain.invoke({"input": "Suggest a dinner place."}, config=_session_config("a"))
    last = model.seen[-1]
    assert last[0] == SystemMessage(SYSTEM)
    assert sum(m.content == SYSTEM for m in last) == 1  # the system prompt is sent once
    sent = " ".join(str(m.content) for m in last)
    assert "peanuts" in sent
    assert "Oslo" not in sent
    assert _human_texts(factory("a").messages) == [
        "I'm allergic to peanuts.",
        "Suggest a dinner place.",
    ]
    assert _human_texts(factory("b").messages) == ["I live in Oslo."]


def test_lcel_user_and_conversation_form() -> None:
    model = RecordingChatModel(responses=["Sure."])
    factory = tiered_history_factory(context_window=4096, system_prompt=SYSTEM)
    chain = RunnableWithMessageHistory(
        _chat_chain(model),
        factory,
        input_messages_key="input",
        history_messages_key="history",
        history_factory_config=[
            ConfigurableFieldSpec(id="user_id", annotation=str, is_shared=True),
            ConfigurableFieldSpec(id="conversation_id", annotation=str, is_shared=True),
        ],
    )

    def ask(text: str, user: str, conversation: str) -> None:
        config: RunnableConfig = {
            "configurable": {"user_id": user, "conversation_id": conversation}
        }
        chain.invoke({"input": text}, config=config)

    ask("I'm vegetarian.", "ana", "1")
    ask("I'm allergic to cats.", "bob", "1")
    ask("Plan a trip.", "ana", "2")
    ask("What should I eat?", "ana", "1")
    assert _human_texts(factory("ana", "1").messages) == ["I'm vegetarian.", "What should I eat?"]
    assert _human_texts(factory("ana", "2").messages) == ["Plan a trip."]
    assert _human_texts(factory("bob", "1").messages) == ["I'm allergic to cats."]
    assert "cats" not in " ".join(str(m.content) for m in model.seen[-1])


def test_lcel_without_history_key_adds_no_duplicates() -> None:
    """A bare model gets view + input; only the new messages are written back."""
    model = RecordingChatModel(responses=["One.", "Two.", "Three."])
    factory = tiered_history_factory(context_window=4096)
    chain = RunnableWithMessageHistory(model, factory)
    for text in ("I'm allergic to peanuts.", "I live in Rome.", "Anything else?"):
        chain.invoke(text, config=_session_config("x"))
    memory = factory("x").memory
    assert [m.type for m in memory.messages] == ["human", "ai"] * 3
    assert [m.content for m in memory.messages[1::2]] == ["One.", "Two.", "Three."]
    assert model.seen[-1][0].type == "system"  # core memory reached the model


async def test_lcel_async_invoke() -> None:
    model = RecordingChatModel(responses=["Hi!"])
    factory = tiered_history_factory(context_window=4096, system_prompt=SYSTEM)
    chain = RunnableWithMessageHistory(
        _chat_chain(model), factory, input_messages_key="input", history_messages_key="history"
    )
    await chain.ainvoke({"input": "hello"}, config=_session_config("s"))
    await chain.ainvoke({"input": "again"}, config=_session_config("s"))
    assert _human_texts(await factory("s").aget_messages()) == ["hello", "again"]
    assert _human_texts(model.seen[-1]) == ["hello", "again"]


@pytest.mark.slow
def test_budget_holds_over_a_long_session() -> None:
    """200 turns through RunnableWithMessageHistory: every prompt fits the input budget."""
    model = RecordingChatModel(
        responses=[
            "Good choice. I noted the details and will plan around them for your trip.",
            "Understood - I will keep that in mind when I suggest places to stay.",
        ]
    )
    factory = tiered_history_factory(context_window=1024, system_prompt=SYSTEM)
    chain = RunnableWithMessageHistory(
        _chat_chain(model), factory, input_messages_key="input", history_messages_key="history"
    )
    for i in range(200):
        text = (
            f"Day {i}: on {i % 28 + 1} May I want to visit museum number {i} in "
            f"city {i % 7} with my friend Ana, budget {i * 10} euros."
        )
        chain.invoke({"input": text}, config=_session_config("long"))

    memory = factory("long").memory
    budget = memory.budget.input_budget
    counts = [memory.counter.count_messages(prompt) for prompt in model.seen]
    assert len(counts) == 200
    assert max(counts) <= budget, (max(counts), budget)
    archived = memory.archive.records(RecordFilter(memory.user_id, kinds="turn"))
    indexes = [int(r.metadata["turn_index"]) for r in archived]
    assert indexes + [t.index for t in memory.state.turns] == list(range(200))  # all archived
    raw = sum(int(r.metadata["tokens"]) for r in archived) + memory.state.turn_tokens
    assert raw > 10 * budget  # without the memory the prompt would have overflowed
    assert any(e.kind == "compression" for e in memory.events)
    last = model.seen[-1]
    assert any("Summary of the earlier conversation" in str(m.content) for m in last)
    assert "museum number 199" in str(last[-1].content)


def test_durable_session_survives_reopening_the_store(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    embeddings = DeterministicFakeEmbedding(size=16)
    model = RecordingChatModel(responses=["Noted."])

    def make_chain(factory: TieredHistoryFactory) -> Any:
        return RunnableWithMessageHistory(
            _chat_chain(model), factory, input_messages_key="input", history_messages_key="history"
        )

    factory = tiered_history_factory(
        path, embeddings=embeddings, context_window=4096, system_prompt=SYSTEM, gate="never"
    )
    chain = make_chain(factory)
    chain.invoke({"input": "I'm allergic to peanuts."}, config=_session_config("ana"))
    chain.invoke({"input": "I live in Porto."}, config=_session_config("ana"))
    factory.close()

    with tiered_history_factory(
        path, embeddings=embeddings, context_window=4096, system_prompt=SYSTEM, gate="never"
    ) as reopened:
        history = reopened("ana")
        assert _human_texts(history.messages) == ["I'm allergic to peanuts.", "I live in Porto."]
        assert history.memory.core.get("allergy:peanuts") is not None
        make_chain(reopened).invoke({"input": "Where should I eat?"}, _session_config("ana"))
        assert "Porto" in " ".join(str(m.content) for m in model.seen[-1])


def test_store_backed_factory_with_the_default_gate(tmp_path: Path) -> None:
    """Recall may or may not be available yet: the chain works either way."""
    store = MemoryStore(tmp_path / "m", embeddings=DeterministicFakeEmbedding(size=16))
    try:
        factory = tiered_history_factory(store, context_window=4096, max_sessions=1)
        model = RecordingChatModel(responses=["Sure."])
        chain = RunnableWithMessageHistory(model, factory)
        chain.invoke("I'm allergic to peanuts.", config=_session_config("u1"))
        chain.invoke("What did I tell you last time?", config=_session_config("u1"))
        chain.invoke("hello", config=_session_config("u2"))  # evicts u1 from the cache
        assert factory.sessions() == [("u2", "u2")]
        assert len(factory("u1").memory.messages) == 4  # reopened from the store
        factory.forget_user("u1")
        assert store.users() == ["u2"]
        assert factory.sessions() == []
        assert factory("u1").messages == []
    finally:
        store.close()


# --- the classic summariser ------------------------------------------------------


def test_classic_summarizer_prompts_and_failures() -> None:
    turn = Turn(3, (HumanMessage("I fly to Lisbon on 12 May."), AIMessage("Have fun!")))
    llm = RecordingLLM(responses=["Ana flies to Lisbon on 12 May."])
    assert ClassicSummarizer(llm).summarize("", [turn], max_tokens=50).startswith("Ana")
    assert "[t3]" in llm.seen[-1] and "12 May" in llm.seen[-1]

    classic = PromptTemplate.from_template("Summary: {summary}\nLines:\n{new_lines}\nNew:")
    ClassicSummarizer(llm, prompt=classic, human_prefix="Me").summarize(
        "old", [turn], max_tokens=50
    )
    assert llm.seen[-1].startswith("Summary: old\nLines:\nMe: I fly to Lisbon")

    chat = FakeListChatModel(responses=["From a chat model."])
    assert ClassicSummarizer(chat).summarize("", [turn], max_tokens=50) == "From a chat model."

    with pytest.raises(SummarizationError, match="empty"):
        ClassicSummarizer(FakeListLLM(responses=["  "])).summarize("", [turn], max_tokens=50)
    with pytest.raises(ValueError, match="new_lines"):
        ClassicSummarizer(llm, prompt=PromptTemplate.from_template("{summary}"))


# --- TieredConversationMemory ------------------------------------------------


def test_budget_for_buffer_maps_max_token_limit() -> None:
    for limit in (128, 650, 2000, 3001):
        assert budget_for_buffer(limit).caps["buffer"] == limit
    assert budget_for_buffer(650, {"buffer": 0.6, "recall": 0.05}).caps["buffer"] == 650
    with pytest.raises(ValueError, match="max_token_limit"):
        budget_for_buffer(50)


def test_conversation_memory_defaults_and_arguments() -> None:
    memory = TieredConversationMemory()
    assert memory.memory.budget.caps["buffer"] == 2000  # the classic default limit
    assert memory.max_token_limit == 2000
    assert memory.memory_variables == ["history"]
    assert memory.load_memory_variables({}) == {"history": ""}
    sized = TieredConversationMemory(context_window=8192, memory_key="chat_history")
    assert sized.memory.budget.context_window == 8192
    assert sized.memory_variables == ["chat_history"]
    with pytest.raises(ValueError, match="not both"):
        TieredConversationMemory(max_token_limit=650, context_window=8192)
    with pytest.raises(TypeError, match="configure it directly"):
        TieredConversationMemory(TieredMemory(context_window=4096), max_token_limit=650)
    with pytest.raises(TypeError, match="configure it directly"):
        TieredConversationMemory(TieredMemory(context_window=4096), system_prompt="x")
    with pytest.raises(ValueError, match="llm="):
        TieredConversationMemory(prompt=PromptTemplate.from_template("{summary}{new_lines}"))


def test_conversation_memory_string_and_message_forms() -> None:
    memory = TieredConversationMemory(max_token_limit=650, human_prefix="User", ai_prefix="Bot")
    memory.save_context({"input": "I'm allergic to peanuts."}, {"output": "Noted."})
    text = memory.load_memory_variables({"input": "next"})["history"]
    lines = text.splitlines()
    assert lines[0].startswith("Core memory")  # sections first, as plain text
    assert lines[-2:] == ["User: I'm allergic to peanuts.", "Bot: Noted."]
    assert "System:" not in text

    memory.return_messages = True
    messages = memory.load_memory_variables({"input": "next"})["history"]
    assert [m.type for m in messages] == ["system", "human", "ai"]
    assert memory.buffer == messages
    memory.chat_memory.add_user_message("hello")
    assert _human_texts(memory.buffer) == ["I'm allergic to peanuts.", "hello"]  # type: ignore[arg-type]


def test_conversation_memory_leaves_room_for_the_new_input() -> None:
    memory = TieredConversationMemory(TieredMemory(context_window=1024), return_messages=True)
    for i in range(4):
        memory.save_context({"input": f"Question {i}: " + "detail " * 60}, {"output": "Sure."})
    question = "Now this: " + "word " * 650
    history = memory.load_memory_variables({"input": question})["history"]
    counter, budget = memory.memory.counter, memory.memory.budget.input_budget
    assert counter.count_messages([*history, HumanMessage(question)]) <= budget
    assert 0 < len(_human_texts(history)) < 4
    assert _human_texts(history)[-1].startswith("Question 3")  # the newest turn stays
    assert len(_human_texts(memory.load_memory_variables({})["history"])) == 4


def test_conversation_memory_key_resolution_matches_classic() -> None:
    from langchain_classic.memory import ConversationBufferMemory

    ours = TieredConversationMemory(max_token_limit=650)
    classic = ConversationBufferMemory()
    for memory in (ours, classic):
        with pytest.raises(ValueError, match="One input key expected"):
            memory.save_context({"a": "1", "b": "2"}, {"output": "x"})
        with pytest.raises(ValueError, match="multiple output keys"):
            memory.save_context({"input": "1"}, {"a": "x", "b": "y"})
        with pytest.warns(UserWarning, match="'output' key is being used"):
            memory.save_context({"input": "hi", "stop": ["\n"]}, {"output": "yo", "extra": "z"})
    assert ours.load_memory_variables({})["history"] == classic.load_memory_variables({})["history"]
    keyed = TieredConversationMemory(max_token_limit=650, input_key="q", output_key="a")
    keyed.save_context({"q": "question", "context": "ignored"}, {"a": "answer", "b": "no"})
    assert keyed.load_memory_variables({})["history"] == "Human: question\nAI: answer"


async def test_conversation_memory_async_twins() -> None:
    memory = TieredConversationMemory(max_token_limit=650, return_messages=True)
    await memory.asave_context({"input": "I live in Lisbon."}, {"response": "Nice."})
    loaded = await memory.aload_memory_variables({"input": "next"})
    assert _human_texts(loaded["history"]) == ["I live in Lisbon."]
    await memory.aclear()
    assert _human_texts((await memory.aload_memory_variables({}))["history"]) == []
    assert memory.memory.core.get("home_city") is not None  # long-term memory kept
    memory.forget_user()
    assert memory.memory.core.get("home_city") is None


def test_conversation_chain_with_classic_summariser_llm() -> None:
    from langchain_classic.chains import ConversationChain

    summariser = RecordingLLM(responses=["SUMMARY: Ana plans museum visits in May."])
    memory = TieredConversationMemory(llm=summariser, max_token_limit=200)
    chat_llm = RecordingLLM(responses=["Sounds great, noted for your plan."])
    chain = ConversationChain(llm=chat_llm, memory=memory)
    for i in range(30):
        result = chain.invoke({"input": f"On {i + 1} May I visit museum {i} with Ana."})
        assert result["response"] == "Sounds great, noted for your plan."

    assert summariser.seen, "the classic llm was never asked to summarise"
    assert "museum" in summariser.seen[0]
    assert memory.moving_summary_buffer == "SUMMARY: Ana plans museum visits in May."
    last_prompt = chat_llm.seen[-1]
    assert "SUMMARY: Ana plans museum visits in May." in last_prompt
    assert "Human: On 30 May I visit museum 29 with Ana." in last_prompt
    assert "Human: On 1 May I visit" not in last_prompt  # evicted into the summary
    counter = memory.memory.counter
    limit = memory.memory.budget.input_budget
    assert all(counter.count_messages([HumanMessage(p)]) <= limit for p in chat_llm.seen)
    first = memory.memory.archive.records(RecordFilter(memory.memory.user_id, kinds="turn"))[0]
    assert first.text.startswith("user: On 1 May I visit museum 0 with Ana.")


def test_llm_chain_with_history_prompt() -> None:
    from langchain_classic.chains import LLMChain

    prompt = PromptTemplate.from_template("Chat so far:\n{history}\nHuman: {question}\nAI:")
    llm = RecordingLLM(responses=["First answer.", "Second answer."])
    memory = TieredConversationMemory(max_token_limit=650)
    chain = LLMChain(llm=llm, prompt=prompt, memory=memory)
    assert chain.invoke({"question": "I'm allergic to peanuts."})["text"] == "First answer."
    chain.invoke({"question": "Any dessert ideas?"})
    assert "Human: I'm allergic to peanuts.\nAI: First answer." in llm.seen[-1]
    assert "allergy:peanuts: allergic to peanuts" in llm.seen[-1]


def test_drop_in_for_conversation_summary_buffer_memory() -> None:
    """The classic constructor call runs unchanged with only the class name changed."""
    from langchain_classic.chains import LLMChain
    from langchain_classic.memory import ConversationSummaryBufferMemory

    prompt = ChatPromptTemplate(
        [("system", SYSTEM), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    tokens = OpenAITokenCounter("gpt-4o-mini")
    outputs = {}
    for cls in (ConversationSummaryBufferMemory, TieredConversationMemory):
        # the classic class counts with llm.get_num_tokens_from_messages
        llm = FakeListChatModel(
            responses=["A summary."], custom_get_token_ids=tokens.encoding.encode
        )
        model = RecordingChatModel(responses=["Reply."])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            memory = cls(llm=llm, max_token_limit=650, return_messages=True)
        chain = LLMChain(llm=model, prompt=prompt, memory=memory)
        chain.invoke({"input": "hello"})
        chain.invoke({"input": "again"})
        outputs[cls.__name__] = [(m.type, m.content) for m in model.seen[-1]]
    assert outputs["TieredConversationMemory"] == outputs["ConversationSummaryBufferMemory"]


def _words(n: int) -> Iterator[str]:
    yield from (f"w{i}" for i in range(n))


def test_failed_classic_summary_never_becomes_the_summary() -> None:
    class Boom(FakeListLLM):
        def _call(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("provider down")

    memory = TieredConversationMemory(llm=Boom(responses=["x"]), max_token_limit=200)
    for i in range(12):
        memory.save_context({"input": " ".join(_words(15)) + f" {i}"}, {"output": "ok"})
    assert memory.moving_summary_buffer == ""
    assert any(e.kind in ("summary_failed", "page_out_unsummarized") for e in memory.memory.events)
    assert "provider down" not in memory.load_memory_variables({})["history"]


@pytest.mark.slow
@pytest.mark.subprocess
def test_module_imports_without_langchain_classic() -> None:
    code = (
        "import sys; sys.modules['langchain_classic'] = None\n"
        "from langchain_tiered_memory.integrations.classic import TieredConversationMemory\n"
        "from langchain_tiered_memory.integrations.history import tiered_history_factory\n"
        "tiered_history_factory(context_window=2048)('s').add_user_message('hi')\n"
        "try:\n"
        "    TieredConversationMemory()\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120
    )
    assert "pip install langchain-classic" in result.stdout

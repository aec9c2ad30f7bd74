"""Models the LangChain way: every model argument goes through one resolver, checked
when it is given (not at the first compression), and model names never silently
turn into some other model's window or tokenizer."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from langchain_tiered_memory import TieredMemory, TokenBudget
from langchain_tiered_memory.budget.sections import canonical_model_name, context_window_for_model
from langchain_tiered_memory.budget.tokens import OpenAITokenCounter, memory_model_for
from langchain_tiered_memory.integrations.agents import TieredMemoryMiddleware
from langchain_tiered_memory.integrations.langgraph import build_memory_graph
from langchain_tiered_memory.models import require_chat_model, resolve_chat_model
from langchain_tiered_memory.recall.gate import LLMGate
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.testing import EchoChatModel
from langchain_tiered_memory.tiers.summarize import ExtractiveSummarizer, LLMSummarizer
from langchain_tiered_memory.write.extraction import LLMExtractor


@pytest.fixture
def no_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(name, raising=False)


# -- init_chat_model strings, "local", "echo", chat models --------------------------


def test_a_model_string_is_resolved_when_given_not_at_the_first_compression(
    no_openai_key, monkeypatch: pytest.MonkeyPatch
) -> None:
    # without a key the error comes now, and says what is missing
    with pytest.raises(ValueError, match=r"summarizer='openai:gpt-4o-mini'.*OPENAI_API_KEY"):
        TieredMemory(context_window=2048, summarizer="openai:gpt-4o-mini")
    with pytest.raises(ValueError, match="extractor='openai:gpt-4o-mini'"):
        TieredMemory(context_window=2048, extractor="openai:gpt-4o-mini")
    # with one, the string becomes the provider's chat model (no request is sent)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-offline")
    memory = TieredMemory(context_window=2048, summarizer="openai:gpt-4o-mini")
    assert isinstance(memory.summarizer, LLMSummarizer)
    assert isinstance(memory.summarizer.model, ChatOpenAI)
    assert memory.summarizer.model.model_name == "gpt-4o-mini"
    assert isinstance(LLMExtractor("openai:gpt-4o-mini").model, ChatOpenAI)
    assert isinstance(LLMGate("gpt-4o-mini").model, ChatOpenAI)


def test_a_string_model_summarises_for_real() -> None:
    # "echo" is a model string too: the compression goes through the LLM summariser path
    memory = TieredMemory(context_window=512, summarizer="echo", gate="never")
    for i in range(12):
        memory.add_messages(
            [HumanMessage(f"Turn {i}: my note about Lisbon trams."), AIMessage("Noted.")]
        )
    assert memory.summarizer.calls > 0
    assert any(e.kind == "compression" for e in memory.events)
    assert memory.state.summary.startswith("[")  # what the echo "summariser" wrote, clipped


def test_bad_model_arguments_fail_with_a_sentence() -> None:
    with pytest.raises(ValueError, match="'foo:bar' is not a chat model LangChain can make"):
        resolve_chat_model("foo:bar")
    with pytest.raises(ValueError, match="gate must be 'auto', 'learned', 'always', 'never'"):
        TieredMemory(context_window=2048, gate="sometimes")
    with pytest.raises(TypeError, match="summarizer must be"):
        TieredMemory(context_window=2048, summarizer=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="extractor must be"):
        TieredMemory(context_window=2048, extractor=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a chat model"):
        resolve_chat_model(3.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="summarizer needs a chat model"):
        LLMSummarizer("none")


def test_local_is_the_offline_model_everywhere() -> None:
    # SmolLM2 when the [local] extra is installed; otherwise the install hint, never
    # init_chat_model's "Unable to infer model provider"
    try:
        model = resolve_chat_model("local")
    except ImportError as exc:
        assert "pip install -e '.[local]'" in str(exc)
    else:
        assert type(model).__name__ == "ChatLlamaCpp"


def test_chat_models_pass_through_and_the_keywords_are_case_insensitive() -> None:
    fake = GenericFakeChatModel(messages=iter([]))
    assert resolve_chat_model(fake) is fake
    assert isinstance(resolve_chat_model("Echo"), EchoChatModel)
    assert resolve_chat_model("None") is None and resolve_chat_model(None) is None
    with pytest.raises(ValueError, match="needs a chat model"):
        require_chat_model(None, what="the answer model")


def test_echo_model_quotes_what_memory_put_in_the_prompt() -> None:
    memory = TieredMemory(context_window=2048, system_prompt="Be brief.")
    memory.add_messages([HumanMessage("I'm allergic to peanuts."), AIMessage("Noted.")])
    memory.add_messages([HumanMessage("A snack idea?")])
    reply = EchoChatModel().invoke(memory.build_context().messages).content
    assert "You said: A snack idea?" in reply
    assert "core memory:" in reply and "allergic to peanuts" in reply
    assert "Be brief." not in reply  # the pinned prompt is not memory
    long = EchoChatModel(max_chars=40).invoke([SystemMessage("x"), HumanMessage("y" * 500)])
    assert len(long.content) < 200
    assert EchoChatModel().bind_tools([]) is not None


# -- model= sizes the budget: names and chat models ---------------------------------


def test_misspelt_names_are_errors_with_the_nearest_name() -> None:
    with pytest.raises(ValueError, match="Did you mean 'gpt-4o-mini'"):
        TieredMemory(model="gpt-4o-mni")
    with pytest.raises(ValueError, match="Did you mean 'gpt-4o-mini'"):
        TokenBudget.for_model("gpt4o-mini")
    with pytest.raises(ValueError, match="Did you mean 'gpt-4o-mini'"):
        OpenAITokenCounter("gpt-4o-mni")
    # a typo must not get a window by prefix ("gpt-4o-" + "mni")
    with pytest.raises(ValueError, match="Unknown model name"):
        context_window_for_model("gpt-4o-mni")


def test_names_are_case_insensitive_and_take_version_suffixes() -> None:
    memory = TieredMemory(model="GPT-4o-mini")
    assert memory.budget.context_window == 128_000
    assert memory.counter.name == "tiktoken:gpt-4o-mini"  # a window *and* a tokenizer
    assert canonical_model_name("openai:gpt-4o-mini-2024-07-18") == "gpt-4o-mini-2024-07-18"
    assert context_window_for_model("gpt-4-0613") == 8192
    assert context_window_for_model("anthropic:claude-sonnet-4-5-20250929") == 200_000
    # a model this package does not know yet: name the encoding yourself
    counter = OpenAITokenCounter("gpt-9-preview-of-tomorrow", encoding="o200k_base")
    assert counter.count_text("hello") == OpenAITokenCounter("gpt-4o").count_text("hello")


def test_a_chat_model_as_model_gives_its_window_and_counter() -> None:
    chat = ChatOpenAI(model="gpt-4.1-mini", api_key="sk-unused-offline")
    memory = TieredMemory(model=chat)
    assert memory.budget.context_window == chat.profile["max_input_tokens"]
    assert memory.counter.name == "tiktoken:gpt-4.1-mini"
    messages = [HumanMessage("Hello there, how are you?"), AIMessage("Fine!")]
    assert memory.counter.count_messages(messages) == chat.get_num_tokens_from_messages(messages)
    # an explicit window still wins
    assert TieredMemory(model=chat, context_window=4096).budget.context_window == 4096


def test_a_chat_model_with_a_misspelt_name_is_an_error_too() -> None:
    chat = ChatOpenAI(model="gpt-4o-mni", api_key="sk-unused-offline")
    with pytest.raises(ValueError, match="Did you mean 'gpt-4o-mini'"):
        TieredMemory(model=chat)


def test_a_chat_model_without_window_or_counter_says_what_to_pass() -> None:
    fake = GenericFakeChatModel(messages=iter([]))
    with pytest.raises(ValueError, match="context_window="):
        TieredMemory(model=fake)
    with pytest.raises(ValueError, match="token_counter="):
        TieredMemory(model=fake, context_window=2048)
    counted = GenericFakeChatModel(messages=iter([]), custom_get_token_ids=lambda t: t.split())
    memory = TieredMemory(model=counted, context_window=2048)
    assert memory.counter.name == "GenericFakeChatModel"
    assert memory_model_for(fake) is None


def test_middleware_takes_a_chat_model_as_model(tmp_path) -> None:
    from langchain.agents import create_agent

    chat = ChatOpenAI(model="gpt-4o-mini", api_key="sk-unused-offline")
    with MemoryStore(tmp_path / "d", embeddings=DeterministicFakeEmbedding(size=16)) as store:
        middleware = TieredMemoryMiddleware(store, model=chat, context_window=4096)
        agent = create_agent(
            GenericFakeChatModel(messages=iter([AIMessage("Hi!")])), middleware=[middleware]
        )
        agent.invoke(
            {"messages": [HumanMessage("hello")]},
            {"configurable": {"user_id": "ana", "thread_id": "t"}},
        )
        memory = middleware.resolver.get("ana", "t")
        assert memory.counter.name == "tiktoken:gpt-4o-mini"


def test_graph_resolves_its_model_once_and_sizes_memory_from_it(tmp_path) -> None:
    with MemoryStore(tmp_path / "d", embeddings=DeterministicFakeEmbedding(size=16)) as store:
        graph = build_memory_graph("echo", store=store, checkpointer=False, context_window=2048)
        out = graph.invoke(
            {"messages": [HumanMessage("I live in Porto.")]},
            {"configurable": {"user_id": "ana", "thread_id": "t"}},
        )
        assert out["messages"][-1].content.startswith("[echo model")
        with pytest.raises(ValueError, match="not a chat model LangChain can make"):
            build_memory_graph("foo:bar", store=store, checkpointer=False)
        # an OpenAI chat model sizes the memory (its 1M-token window), unless told otherwise
        chat = ChatOpenAI(model="gpt-4.1", api_key="sk-unused-offline")
        sized = build_memory_graph(chat, store=store, checkpointer=False)
        nodes_memory = sized.nodes["load_memory"].bound.func.__self__.resolver.get("bob", "t")
        assert nodes_memory.budget.context_window == chat.profile["max_input_tokens"]
        assert nodes_memory.counter.name == "tiktoken:gpt-4.1"


def test_per_run_model_strings_are_resolved_once(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("TIERED_MEMORY_MODEL", raising=False)
    with MemoryStore(tmp_path / "d", embeddings=DeterministicFakeEmbedding(size=16)) as store:
        graph = build_memory_graph(None, store=store, checkpointer=False, context_window=2048)
        for i in range(2):
            out = graph.invoke(
                {"messages": [HumanMessage(f"hi {i}")]},
                {"configurable": {"user_id": "ana", "thread_id": f"t{i}", "model": "echo"}},
            )
            assert "You said: hi" in out["messages"][-1].content
        with pytest.raises(ValueError, match="the run's model='foo:bar'"):
            graph.invoke(
                {"messages": [HumanMessage("hi")]},
                {"configurable": {"user_id": "ana", "thread_id": "t9", "model": "foo:bar"}},
            )


def test_extractive_and_rules_are_the_no_llm_names() -> None:
    memory = TieredMemory(context_window=2048, summarizer="extractive", extractor="rules")
    assert isinstance(memory.summarizer, ExtractiveSummarizer)
    assert memory.writer.extractor is not None  # the rule-based default

"""Before/after: ConversationSummaryBufferMemory vs TieredConversationMemory.

The same langchain-classic ``ConversationChain`` runs twice over the same
20-turn conversation - first with the deprecated
``ConversationSummaryBufferMemory``, then with ``TieredConversationMemory``
built from the *same arguments*. Only the class name changes.

Runs offline in a few seconds with fake LLMs: ``python examples/classic_chain.py``
(needs ``pip install langchain-classic``).
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_classic.chains import ConversationChain
from langchain_classic.memory import ConversationSummaryBufferMemory
from langchain_core.language_models.fake import FakeListLLM

from langchain_tiered_memory.budget.tokens import OpenAITokenCounter
from langchain_tiered_memory.integrations.classic import TieredConversationMemory

# ConversationChain and the classic memories are deprecated upstream; keep the
# demo output readable.
warnings.filterwarnings("ignore", category=DeprecationWarning)

COUNTER = OpenAITokenCounter("gpt-4o-mini")

TURNS = [
    "Hi! I'm planning a week in Lisbon next May.",
    "By the way, I'm allergic to peanuts.",
    *(f"Day {d}: what could I visit in the morning of day {d}?" for d in range(1, 19)),
]
QUESTION = "Can you suggest a dessert for tonight?"


def fake_llm(reply: str) -> FakeListLLM:
    """A fake completion LLM that always answers ``reply`` (counts tokens offline)."""
    return FakeListLLM(responses=[reply], custom_get_token_ids=COUNTER.encoding.encode)


def run(memory_cls: type) -> tuple[str, Any]:
    """Run the conversation with ``memory_cls``; return the last prompt and the memory."""
    # A fake summariser whose summary drops the allergy, as real ones sometimes do.
    summariser = fake_llm("The user plans a week in Lisbon and asked about sights.")
    memory = memory_cls(llm=summariser, max_token_limit=300)  # unchanged between the two
    chat_llm = fake_llm("Happy to help with that!")
    chain = ConversationChain(llm=chat_llm, memory=memory)
    for text in TURNS:
        chain.invoke({"input": text})
    prompt = chain.prompt.format(
        input=QUESTION, **memory.load_memory_variables({"input": QUESTION})
    )
    return prompt, memory


def main() -> None:
    """Print the prompt each memory builds for the last question."""
    for cls in (ConversationSummaryBufferMemory, TieredConversationMemory):
        prompt, memory = run(cls)
        remembers = "peanut" in prompt
        print(f"=== {cls.__name__} ===")
        print(f"prompt tokens for the last question: {COUNTER.count_text(prompt)}")
        print(f"running summary: {memory.moving_summary_buffer!r}")
        print(f"peanut allergy still in the prompt: {remembers}")
        if isinstance(memory, TieredConversationMemory):
            context = memory.memory.build_context(query=QUESTION)
            print(f"tokens per section: {context.usage} (budget {context.input_budget})")
            print("history sent to the model starts with:")
            for line in str(memory.buffer).splitlines()[:4]:
                print(f"    {line[:88]}")
    print("classic_chain example OK")


if __name__ == "__main__":
    main()

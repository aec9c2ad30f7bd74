from __future__ import annotations

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableLambda

from langchain_tiered_memory.records import MemoryRecord
from langchain_tiered_memory.storage.base import RecordFilter
from langchain_tiered_memory.store import MemoryStore
from langchain_tiered_memory.write.consolidation import Reflector


class FakeReflectionModel(GenericFakeChatModel):
    """Structured output that cites memories 1 and 2, or fails when told to."""

    fail: bool = False
    prompts: list = []  # noqa: RUF012 - a pydantic field, copied per instance

    def with_structured_output(self, schema, **kwargs):  # type: ignore[no-untyped-def]
        def respond(messages):  # type: ignore[no-untyped-def]
            self.prompts.append(messages[0].content)
            if self.fail:
                raise TimeoutError("model down")
            return schema(
                observations=[
                    {"text": "Maya's travel plans must respect her allergy", "cites": [1, 2]},
                    {"text": "an observation citing nothing real", "cites": [99]},
                ]
            )

        return RunnableLambda(respond)


def record(text: str, importance: float, rid: str) -> MemoryRecord:
    return MemoryRecord.new(user_id="maya", kind="fact", text=text, importance=importance, id=rid)


def test_reflection_waits_for_the_threshold_and_cites_sources() -> None:
    model = FakeReflectionModel(messages=iter([]), prompts=[])
    reflector = Reflector(model, threshold=15)
    assert reflector.observe([record("allergic to peanuts", 9, "a")]) == []
    assert model.prompts == []  # below the threshold: no call
    (observation,) = reflector.observe([record("flies to Kyoto on 14 April", 8, "b")])
    assert observation.kind == "observation"
    assert observation.sources == ("a", "b")
    assert observation.importance == 9
    assert "1. allergic to peanuts" in model.prompts[0]
    assert reflector.pending == []


def test_failed_reflection_keeps_records_pending() -> None:
    model = FakeReflectionModel(messages=iter([]), prompts=[], fail=True)
    reflector = Reflector(model, threshold=5)
    assert reflector.observe([record("allergic to peanuts", 9, "a")]) == []
    assert len(reflector.pending) == 1 and reflector.calls == 1
    model.fail = False
    assert reflector.observe([record("likes jazz", 4, "b")])


def test_memory_archives_observations_when_enabled(tmp_path) -> None:
    with MemoryStore(tmp_path / "m", embeddings=DeterministicFakeEmbedding(size=16)) as store:
        model = FakeReflectionModel(messages=iter([]), prompts=[])
        memory = store.memory(
            "maya", "t", context_window=4096, reflector=Reflector(model, threshold=15)
        )
        memory.add_messages([HumanMessage("I'm allergic to peanuts.")])
        assert store.archive.records(RecordFilter("maya", kinds=["observation"])) == []
        memory.add_messages([HumanMessage("My flight to Kyoto is on 14 April at 9:40.")])
        (obs,) = store.archive.records(RecordFilter("maya", kinds=["observation"]))
        facts = {r.id for r in store.archive.records(RecordFilter("maya", kinds=["fact"]))}
        assert set(obs.sources) <= facts and len(obs.sources) == 2

"""The ``tiered-memory bench ...`` commands: each bench prints a table and writes JSON.

The library's command line finds this :class:`typer.Typer` through the
``langchain_tiered_memory.cli`` entry point of this distribution, so
``tiered-memory bench`` exists only where ``tiered-memory-bench`` is installed.

Example (shell)::

    tiered-memory bench tokens --data locomo10.json --context-window 4096 \\
        --out bench-results/tokens-4096.json

Every bench reads the data it is given (``--data PATH``; the gate's
``--memory-questions``) and nothing else: the formats, and where to get the
public data sets, are in ``benchmarks/README.md`` (section "Data").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import typer
from rich.markup import escape
from rich.table import Table

from langchain_tiered_memory.cli.common import (
    console,
    memory_location,
    progress_bars,
    require_module,
    write_json,
)
from tiered_memory_bench.interrupt import BenchInterrupted

app = typer.Typer(
    help="Benchmarks: each prints a table and writes JSON.",
    no_args_is_help=True,
    add_completion=False,
)


LOCOMO_FILE = "a LoCoMo-format JSON file"
#: Where the data formats are described (said when a bench is given no data).
DATA_FORMATS = (
    "benchmarks/README.md of the langchain-tiered-memory repository (section 'Data') "
    "describes each format and where to get the public data sets"
)


def data_file(path: Path | None, what: str, option: str = "--data") -> Path:
    """``path``, or a clear error: the benches have no default data.

    Raises:
        ValueError: when ``path`` is ``None`` (the message names ``option``,
            what to give and where the format is described).

    Example:
        >>> data_file(None, "a LoCoMo-format JSON file")
        Traceback (most recent call last):
        ...
        ValueError: --data is required: a LoCoMo-format JSON file. benchmarks/README.md ...
    """
    if path is None:
        raise ValueError(f"{option} is required: {what}. {DATA_FORMATS}")
    return path


def int_list(text: str, option: str, *, minimum: int, example: str) -> list[int]:
    """A comma-separated option as integers, checked before any work starts.

    Raises:
        typer.BadParameter: for a non-integer, an empty list, or a value below ``minimum``.
    """
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"not a list of integers: {text!r}", param_hint=option) from exc
    if not values or min(values) < minimum:
        kind = "positive integers" if minimum == 1 else f"integers >= {minimum}"
        raise typer.BadParameter(f"give {kind}, e.g. {example}", param_hint=option)
    return values


def _progress_line(status: Any, message: str) -> None:
    """A long bench's progress: the spinner's text, and a log line (``-v`` shows it)."""
    status.update(escape(message))
    logging.getLogger("tiered_memory_bench").info("%s", message)


def finish_interrupted(partial: dict[str, Any], out: Path | None, key: str = "sizes") -> None:
    """After Ctrl-C in a bench: say what finished, write it (``"interrupted": true``), exit 130."""
    done = [f"{part} {name}" for part in (key, "single_user") for name in partial.get(part, {})]
    postgres = partial.get("postgres") or {}
    done += [
        f"postgres {part} {name}"
        for part in ("sizes", "single_user")
        for name in postgres.get(part, {})
    ]
    finished = ", ".join(done) if done else "nothing"
    console.print(f"interrupted: finished {escape(finished)}")
    write_json(partial, out)
    raise typer.Exit(130)


def print_table(title: str, rows: dict[str, Any]) -> None:
    """Print scalar results as a two-column table."""
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in rows.items():
        if isinstance(value, (int, float, str)) or value is None:
            table.add_row(key, str(value))
    console.print(table)


def _summarizer_factory(summarizer: str) -> Any:
    """``None`` for 'extractive', else a factory; the model is resolved (checked) now."""
    if summarizer.strip().lower() == "extractive":
        return None
    from langchain_tiered_memory.models import require_chat_model
    from langchain_tiered_memory.tiers.summarize import LLMSummarizer

    chat = require_chat_model(summarizer, what="--summarizer")
    return lambda counter: LLMSummarizer(chat, counter=counter)


#: ``--extractor`` values that call no model: the library's offline extractors, and the
#: learned one with its ``own_words`` option (issue 31, round 6).
OFFLINE_EXTRACTORS = ("rules+links", "rules", "learned", "learned+own-words")


def _extractor_factory(extractor: str) -> Any:
    """A factory of the fact extractor ``--extractor`` names; the model is resolved
    (checked) now. 'rules' is the plain rules (no embedder), 'rules+links' the
    library's offline default.

    A model runs the per-turn ``LLMExtractor`` (the tokens and qa benches).
    """
    wanted = extractor.strip().lower()
    if wanted == "rules":
        from langchain_tiered_memory.write.extraction import RuleBasedExtractor

        return RuleBasedExtractor
    if wanted in ("learned", "learned+own-words"):
        from langchain_tiered_memory.write.learned import LearnedExtractor

        return partial(LearnedExtractor, own_words=wanted == "learned+own-words")
    if wanted == "rules+links":
        from langchain_tiered_memory.write.learned import LinkedRulesExtractor

        return LinkedRulesExtractor
    from langchain_tiered_memory.models import require_chat_model
    from langchain_tiered_memory.write.extraction import LLMExtractor

    chat = require_chat_model(extractor, what="--extractor")
    return lambda: LLMExtractor(chat)


def _model_extractor_factory(extractor: str) -> Any:
    """Like :func:`_extractor_factory`, but a model runs the production path: one
    :class:`~langchain_tiered_memory.write.model_extractor.ModelExtractor` (batched off
    the add) shared by every item, so its counters add up over the run.

    Raises:
        ValueError: for a model that gives no structured output (the echo model).
    """
    if extractor.strip().lower() in OFFLINE_EXTRACTORS:
        return _extractor_factory(extractor)
    from langchain_tiered_memory.models import require_chat_model
    from langchain_tiered_memory.write.model_extractor import model_extractor_for

    chat = require_chat_model(extractor, what="--extractor")
    shared = model_extractor_for(chat)
    if shared is None:
        raise ValueError(
            f"--extractor={extractor!r}: {type(chat).__name__} gives no structured output, "
            "so the memory would run the rules; give 'rules' for them"
        )
    return lambda: shared


# options several bench commands share
JsonOut = Annotated[Path | None, typer.Option(help="Write the JSON result here.")]
OfflineEmbedder = Annotated[
    str | None,
    typer.Option(
        help="Offline embedder: 'minilm', 'e5' or 'wordllama' (default: the library default)."
    ),
]
EmbedCache = Annotated[
    Path | None, typer.Option(help="SQLite cache of vectors (reruns skip embedding).")
]
Extractor = Annotated[
    str,
    typer.Option(
        help="'rules+links' (the library's offline default), 'rules' (the plain rules), "
        "'learned' or 'learned+own-words' (no LLM, issue 31), or an init_chat_model string."
    ),
]
Summarizer = Annotated[
    str, typer.Option(help="'extractive' (no LLM) or an init_chat_model string.")
]


@app.command("tokens")
def bench_tokens(
    data: Annotated[Path | None, typer.Option(help="LoCoMo-format JSON file (required).")] = None,
    context_window: Annotated[int, typer.Option(help="Context window in tokens.")] = 4096,
    model: Annotated[str, typer.Option(help="Model whose tokenizer counts.")] = "gpt-4o-mini",
    summarizer: Summarizer = "extractive",
    extractor: Extractor = "rules",
    extract_every: Annotated[int, typer.Option(help="Turns per LLM extraction call.")] = 8,
    limit: Annotated[int | None, typer.Option(help="Only the first N conversations.")] = None,
    out: JsonOut = None,
    plot: Annotated[
        Path | None, typer.Option(help="Draw prompt tokens per turn to this PNG.")
    ] = None,
    peers: Annotated[
        bool,
        typer.Option(
            help="Also replay full history, trim_messages, LangMem's SummarizationNode and "
            "ConversationSummaryBufferMemory (extra 'peers') with the same summariser."
        ),
    ] = False,
    dense_recall: Annotated[
        bool,
        typer.Option(
            help="Replay into a temporary on-disk MemoryStore with the default embedder "
            "(dense + keyword recall, as in production; slower) instead of each memory's "
            "in-memory store (keyword recall)."
        ),
    ] = False,
) -> None:
    """Replay conversations turn by turn; check every prompt against the budget."""
    from langchain_tiered_memory.budget.sections import canonical_model_name
    from tiered_memory_bench.datasets import load_locomo
    from tiered_memory_bench.tokens import plot_tokens, run_tokens_bench

    # every option is checked before the replay (which can take minutes)
    if plot is not None:
        require_module("matplotlib", "--plot", "bench")
    if peers:
        for module in ("langmem", "langchain_classic"):
            require_module(module, "--peers", "bench")
    canonical_model_name(model)
    summarizer_factory = _summarizer_factory(summarizer)
    extractor_factory = _extractor_factory(extractor)
    from tiered_memory_bench.peers import PEERS

    peer_model = None
    if peers and summarizer.strip().lower() != "extractive":
        from langchain_tiered_memory.models import require_chat_model

        peer_model = require_chat_model(summarizer, what="--summarizer")
    conversations = load_locomo(data_file(data, LOCOMO_FILE))[:limit]
    total = sum(len(c.dialog_turns()) for c in conversations)
    with progress_bars() as progress:
        task = progress.add_task(f"replaying {len(conversations)} conversations", total=total)
        result = run_tokens_bench(
            conversations,
            model=model,
            context_window=context_window,
            summarizer_factory=summarizer_factory,
            extractor_factory=extractor_factory,
            extract_every=extract_every,
            on_turn=lambda n: progress.advance(task, n),
            keep_series=plot is not None,
            peers=PEERS if peers else (),
            peer_model=peer_model,
            dense_recall=dense_recall,
        )
    result["data"] = str(data)
    result["summarizer"] = summarizer
    result["extractor"] = extractor
    print_table(f"tokens bench (window {context_window})", result)
    if peers:
        _print_peers(result["peers"])
    if plot is not None:
        plot_tokens(result, str(plot))
        console.print(f"plotted {escape(str(plot))}")
        for conv in result["per_conversation"]:
            conv.pop("prompt_tokens", None)
            conv.pop("full_history_tokens", None)
    write_json(result, out)
    if result["violations"]:
        raise typer.Exit(code=1)


def _print_peers(peers: dict[str, Any]) -> None:
    table = Table(title=f"side by side (input budget {peers['input_budget_tokens']} tokens)")
    for column in (
        "strategy",
        "max prompt",
        "mean prompt",
        "violations",
        "prefix reuse",
        "last prompt",
        "summariser calls/turn",
    ):
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for name, row in peers["strategies"].items():
        table.add_row(
            name,
            str(row["max_prompt_tokens"]),
            str(row["mean_prompt_tokens"]),
            str(row["violations"]),
            str(row["prefix_reuse_mean"]),
            str(row["final_prompt_tokens_mean"]),
            str(row["summarizer_calls_per_turn"]),
        )
    console.print(table)


@app.command("overhead")
def bench_overhead(
    records: Annotated[
        str, typer.Option(help="Archive sizes, comma-separated.")
    ] = "1000,10000,100000,1000000",
    workdir: Annotated[
        Path | None,
        typer.Option(help="Where to build the archives (default: a temp dir); reused if there."),
    ] = None,
    records_per_user: Annotated[
        int, typer.Option(help="Records per synthetic user (typical layout).")
    ] = 1000,
    layouts: Annotated[
        str, typer.Option(help="Comma-separated: typical (many users), single_user (worst case).")
    ] = "typical,single_user",
    queries: Annotated[int, typer.Option(help="Timed recalls per archive.")] = 200,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Also measure Postgres on this server (postgresql:// URL; the bench creates "
            "databases tm_bench_<layout>_<size> there and reuses them).",
        ),
    ] = None,
    concurrency: Annotated[
        str, typer.Option(help="Throughput with this many concurrent workers ('' to skip).")
    ] = "1,4,16",
    concurrency_seconds: Annotated[
        float, typer.Option(help="Seconds each throughput measurement runs.")
    ] = 5.0,
    k: Annotated[
        str, typer.Option(help="Also time recall at each of these k, comma-separated.")
    ] = "5,50,200",
    out: JsonOut = None,
) -> None:
    """Recall and add latency (p50/p95), throughput and bytes per record as the archive grows."""
    import tempfile

    from langchain_tiered_memory.embeddings import default_embeddings
    from tiered_memory_bench.overhead import Layout, run_overhead_bench

    sizes = int_list(records, "--records", minimum=1, example="1000,100000")
    chosen = cast("list[Layout]", [x.strip() for x in layouts.split(",") if x.strip()])
    levels = [int(x) for x in concurrency.split(",") if x.strip()]
    ks = sorted(set(int_list(k, "--k", minimum=1, example="5,50,200")))
    url = str(memory_location(Path(), store)) if store is not None else None
    with tempfile.TemporaryDirectory() as scratch, console.status("building archives") as status:
        try:
            result = run_overhead_bench(
                sizes,
                workdir=workdir or scratch,
                records_per_user=records_per_user,
                layouts=chosen,
                queries=queries,
                query_embedder=default_embeddings(),
                postgres_url=url,
                concurrency=levels,
                concurrency_seconds=concurrency_seconds,
                ks=ks,
                on_progress=lambda m: _progress_line(status, m),
            )
        except BenchInterrupted as stopped:
            finish_interrupted(stopped.partial, out)
    backends = [("SQLite", result)] + ([("Postgres", result["postgres"])] if url else [])
    for key, title in (
        ("sizes", f"archive overhead, {records_per_user:,} records per user"),
        ("single_user", "archive overhead, one user owns every record (worst case)"),
    ):
        if not result[key]:
            continue
        table = Table(title=title)
        for column in (
            "backend",
            "records",
            "recall p50 / p95",
            "recall CPU p50 / p95",
            "search p50 / p95",
            "add p50 / p95 / max",
            "bytes/record",
        ):
            table.add_column(column, justify="right")
        for name, rows in backends:
            for size, row in rows[key].items():
                table.add_row(
                    name,
                    f"{int(size):,}",
                    f"{row['recall_p50_ms']:.1f} / {row['recall_p95_ms']:.1f} ms",
                    f"{row['recall_cpu_p50_ms']:.1f} / {row['recall_cpu_p95_ms']:.1f} ms",
                    f"{row['search_p50_ms']:.1f} / {row['search_p95_ms']:.1f} ms",
                    f"{row['add_p50_ms']:.1f} / {row['add_p95_ms']:.1f} / "
                    f"{row['add_max_ms']:,.0f} ms",
                    f"{row['bytes_per_record']:,.0f}",
                )
        console.print(table)
        by_k = Table(title=f"{title}: recall p50 / p95 by k (query embedding excluded)")
        by_k.add_column("backend")
        by_k.add_column("records", justify="right")
        for cut in ks:
            by_k.add_column(f"k = {cut}", justify="right")
        for name, rows in backends:
            for size, row in rows[key].items():
                cells = [
                    f"{row['recall_by_k'][str(c)]['recall_p50_ms']:.1f} / "
                    f"{row['recall_by_k'][str(c)]['recall_p95_ms']:.1f} ms"
                    for c in ks
                ]
                by_k.add_row(name, f"{int(size):,}", *cells)
        console.print(by_k)
        if levels:
            through = Table(title=f"{title}: throughput (recalls/s, adds/s)")
            through.add_column("backend")
            through.add_column("records", justify="right")
            for workers in levels:
                through.add_column(f"{workers} workers", justify="right")
            for name, rows in backends:
                for size, row in rows[key].items():
                    cells = [
                        f"{row['throughput'][str(w)]['recall_per_s']:,.0f} / "
                        f"{row['throughput'][str(w)]['add_per_s']:,.0f}"
                        for w in levels
                    ]
                    through.add_row(name, f"{int(size):,}", *cells)
            console.print(through)
    console.print(
        "recall = full Recaller.recall without the query embedding; search = dense 40 + "
        f"keyword 40 candidates. Query embedding (default embedder) p50 / p95: "
        f"{result.get('query_embedding_p50_ms')} / {result.get('query_embedding_p95_ms')} ms. "
        "Workers are threads sharing one store."
    )
    write_json(result, out)


@app.command("writes")
def bench_writes(
    turns: Annotated[
        str, typer.Option(help="Turns already in the thread before timing, comma-separated.")
    ] = "100,1000,10000",
    samples: Annotated[int, typer.Option(help="One-message adds timed per size.")] = 200,
    model: Annotated[str, typer.Option(help="Model name (tokenizer and window).")] = (
        "gpt-4o-mini"
    ),
    context_window: Annotated[
        int | None, typer.Option(help="Override the model's window (default: the model's).")
    ] = None,
    out: JsonOut = None,
) -> None:
    """Add latency p50/p95 as a thread grows: an add costs what it adds."""
    from tiered_memory_bench.writes import run_writes_bench, writes_table

    sizes = int_list(turns, "--turns", minimum=0, example="100,1000")
    if samples < 1:
        raise typer.BadParameter("must be >= 1", param_hint="--samples")
    with console.status("running") as status:
        try:
            result = run_writes_bench(
                sizes,
                samples=samples,
                model=model,
                context_window=context_window,
                on_progress=lambda m: _progress_line(status, m),
            )
        except BenchInterrupted as stopped:
            finish_interrupted(stopped.partial, out)
    console.print(writes_table(result))
    console.print(
        f"p50 at {sizes[-1]:,} turns / p50 at {sizes[0]:,}: {result['p50_ratio_last_to_first']}"
    )
    write_json(result, out)


@app.command("big-messages")
def bench_big_messages(
    sizes: Annotated[
        str, typer.Option(help="Message sizes in characters, comma-separated.")
    ] = "1000,100000,1000000,10000000",
    timeout: Annotated[float, typer.Option(help="Seconds allowed per add.")] = 300.0,
    out: JsonOut = None,
) -> None:
    """One add of one very long user message, per size: the cost must grow linearly."""
    from tiered_memory_bench.big_messages import big_messages_table, run_big_messages_bench

    levels = int_list(sizes, "--sizes", minimum=1, example="1000,100000")
    if timeout <= 0:
        raise typer.BadParameter("must be > 0", param_hint="--timeout")
    with console.status("running") as status:
        result = run_big_messages_bench(
            levels, timeout_s=timeout, on_progress=lambda m: _progress_line(status, m)
        )
    console.print(big_messages_table(result))
    write_json(result, out)


@app.command("concurrency")
def bench_concurrency(
    users: Annotated[
        str, typer.Option(help="Concurrency levels: users (one thread each), comma-separated.")
    ] = "1,4,16",
    turns: Annotated[int, typer.Option(help="Turns each user adds (each with a recall).")] = 40,
    seed_records: Annotated[int, typer.Option(help="Archive records per user before timing.")] = (
        200
    ),
    embedder: Annotated[
        str,
        typer.Option(
            help="'fake' (hash vectors: measures the memory, not the model), 'minilm', 'e5' "
            "or 'wordllama'."
        ),
    ] = "fake",
    data_dir: Annotated[
        Path | None, typer.Option(help="Where to build the data directories (default: temp).")
    ] = None,
    out: JsonOut = None,
) -> None:
    """Add and recall throughput and p50/p95 latency with many users writing at once."""
    from tiered_memory_bench.concurrency import concurrency_table, run_concurrency_bench

    levels = int_list(users, "--users", minimum=1, example="1,4,16")
    if embedder not in ("fake", "minilm", "e5", "wordllama"):
        raise typer.BadParameter(
            "use 'fake', 'minilm', 'e5' or 'wordllama'", param_hint="--embedder"
        )
    embeddings = None
    if embedder != "fake":
        from langchain_tiered_memory.embeddings import default_embeddings

        embeddings = default_embeddings(embedder)
    with console.status("running") as status:
        try:
            result = run_concurrency_bench(
                levels,
                turns_per_user=turns,
                seed_records=seed_records,
                data_dir=data_dir,
                embeddings=embeddings,
                embedder_name=embedder,
                on_progress=lambda m: _progress_line(status, m),
            )
        except BenchInterrupted as stopped:
            finish_interrupted(stopped.partial, out, key="levels")
    console.print(concurrency_table(result))
    write_json(result, out)
    if any(r["foreign_hits"] or r["lost_turns"] for r in result["levels"].values()):
        raise typer.Exit(code=1)


GateChoice = Annotated[
    str,
    typer.Option(
        help="The recall gate: 'auto' (the rules) or 'learned' (the rules, then a small model)."
    ),
]


def _check_gate(gate: str) -> str:
    if gate not in ("auto", "learned"):
        raise typer.BadParameter("give 'auto' or 'learned'", param_hint="--gate")
    return gate


def _gate_decider(gate: str) -> Callable[..., Any]:
    """The decision function ``bench gate`` times: the rules, or a warmed-up learned gate."""
    from langchain_tiered_memory.recall.gate import LearnedGate, decide_recall

    if _check_gate(gate) == "auto":
        return decide_recall
    learned = LearnedGate()
    learned.probability("warm up the embedder")  # loading is not a decision
    return learned.decide


@app.command("gate")
def bench_gate(
    memory_questions: Annotated[
        list[Path] | None,
        typer.Option(help="LoCoMo or LongMemEval file(s); repeat the option for several."),
    ] = None,
    self_contained: Annotated[
        Path | None, typer.Option(help="JSON list of self-contained requests.")
    ] = None,
    conversation: Annotated[
        Path | None,
        typer.Option(help="LoCoMo file whose first conversation the requests are gated against."),
    ] = None,
    gate: GateChoice = "auto",
    out: JsonOut = None,
) -> None:
    """How often the recall gate fires on memory questions vs self-contained requests.

    ``--gate learned`` runs the rules plus the learned model (its embedder is loaded
    and warmed up before the timing starts).
    """
    from tiered_memory_bench.gate import (
        load_memory_questions,
        load_self_contained,
        run_gate_bench,
    )

    if not memory_questions:
        data_file(None, "LoCoMo or LongMemEval file(s) of memory questions", "--memory-questions")
    files = list(memory_questions or ())
    questions, indexes = [], []
    for path in files:
        q, i = load_memory_questions(path)
        questions += q
        indexes += i
    requests = load_self_contained(self_contained)
    _, real = load_memory_questions(conversation or files[0])
    with progress_bars() as progress:
        task = progress.add_task("gating", total=len(questions) + len(requests))
        result = run_gate_bench(
            questions,
            indexes,
            requests,
            real[0],
            decide=_gate_decider(gate),
            on_item=lambda n: progress.advance(task, n),
        )
    result["gate"] = gate
    result["memory_question_files"] = [str(f) for f in files]
    print_table("recall gate bench", result)
    write_json(result, out)


@app.command("facts")
def bench_facts(
    data: Annotated[
        Path | None, typer.Option(help="Facts file (the facts_dev.json format; required).")
    ] = None,
    context_window: Annotated[int, typer.Option(help="The memory's window in tokens.")] = 4096,
    filler_turns: Annotated[
        int, typer.Option(help="Generic filler turns after the turns (and between an update's).")
    ] = 60,
    embedder: OfflineEmbedder = None,
    extractor: Extractor = "rules+links",
    gate: GateChoice = "auto",
    limit: Annotated[
        int | None, typer.Option(help="Only the first N items (a slow model on a subset).")
    ] = None,
    out: JsonOut = None,
) -> None:
    """Do facts said in passing reach core memory and the prompt much later?

    With ``--extractor MODEL`` the model extractor runs (the production path) and the
    cost is reported per 100 turns: model calls, prompt and completion tokens, wall
    time and parse failures.
    """
    from tiered_memory_bench.facts import METRICS, load_facts, run_facts_bench

    if limit is not None and limit < 1:
        raise typer.BadParameter("give a positive number of items", param_hint="--limit")
    _check_gate(gate)
    items = load_facts(data_file(data, "a facts file (the facts_dev.json format)"))[:limit]
    factory = _model_extractor_factory(extractor)
    with progress_bars() as progress:
        task = progress.add_task("replaying items", total=len(items))
        result = run_facts_bench(
            items,
            embeddings=embedder,
            context_window=context_window,
            filler_turns=filler_turns,
            extractor_factory=factory,
            gate=cast(Literal["auto", "learned"], gate),
            on_item=lambda n: progress.advance(task, n),
        )
    result["data"] = str(data)
    result["extractor"] = extractor
    result["limit"] = limit
    print_table(f"facts bench ({len(items)} items, window {context_window})", result)
    cost = result["extraction"]
    print_table(
        "extraction per 100 turns", {"turns replayed": cost["turns"], **cost["per_100_turns"]}
    )
    table = Table(title="by kind and language")
    table.add_column("group")
    table.add_column("items", justify="right")
    for metric in METRICS:
        table.add_column(metric, justify="right")
    groups = {**result["by_kind"], **result["by_lang"]}
    for name, row in groups.items():
        table.add_row(
            name,
            str(row["items"]),
            *("-" if row[m] is None else f"{row[m]:.3f}" for m in METRICS),
        )
    console.print(table)
    for miss in result["misses"]:
        console.print(
            f"[bold]{escape(str(miss['id']))}[/bold] ({miss['kind']}, {miss['lang']}) "
            f"missing in core {miss['missing_in_core']}, in prompt {miss['missing_in_context']}"
            + (f", stale {miss['stale_as_current']}" if miss["stale_as_current"] else "")
            + (f", false {miss['false_facts']}" if miss["false_facts"] else ""),
            highlight=False,
        )
    write_json(result, out)


@app.command("retrieval")
def bench_retrieval(
    dataset: Annotated[str, typer.Option(help="'locomo' or 'longmemeval'.")] = "locomo",
    data: Annotated[
        Path | None,
        typer.Option(
            help="The dataset file, LoCoMo or LongMemEval format as --dataset says (required)."
        ),
    ] = None,
    k: Annotated[str, typer.Option(help="Comma-separated cut-offs for recall@k.")] = ("1,3,5,10"),
    embedder: OfflineEmbedder = None,
    max_length: Annotated[
        int | None,
        typer.Option(help="Embedder tokens per text (longer texts are cut; default: its own)."),
    ] = None,
    embed_cache: EmbedCache = None,
    systems: Annotated[
        str | None,
        typer.Option(
            help="LongMemEval: comma-separated systems to run "
            "(default: tiered-memory,faiss,inmemorystore,bm25)."
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="Only the first N conversations (LongMemEval: questions).")
    ] = None,
    per_type: Annotated[
        int | None,
        typer.Option(
            help="LongMemEval: only the first N questions of each question type (a stratified "
            "subset, for quick iteration)."
        ),
    ] = None,
    per_question: Annotated[
        bool, typer.Option(help="Include every question's gold and retrieved ids in the JSON.")
    ] = False,
    ranker: Annotated[
        str,
        typer.Option(
            help="How recall ranks: 'default' (the learned ranker shipped in the library), "
            "'hand' (the hand-set RecallWeights) or a ranker file (written by python -m "
            "tiered_memory_bench.train_ranker)."
        ),
    ] = "default",
    min_score: Annotated[
        str,
        typer.Option(
            help="Recall's relevance floor: 'default' (the library's for the embedder), a "
            "calibrated score in [0, 1], or 'none' (no floor: what recall did before it)."
        ),
    ] = "default",
    unanswerable: Annotated[
        Path | None,
        typer.Option(
            help="LoCoMo: unrelated questions asked of every conversation for the "
            "nothing-found rate (JSON; default: the shipped data/unanswerable.json)."
        ),
    ] = None,
    out: JsonOut = None,
) -> None:
    """Archive every turn, recall for every question; report recall@k, NDCG, token budgets.

    With --dataset longmemeval memory is reset per question, sessions and
    turns are ranked, and the peers (FAISS retriever, LangGraph InMemoryStore,
    BM25) run beside ours on the same records and embedder.
    """
    from langchain_tiered_memory.embeddings import DEFAULT_EMBEDDER, default_embeddings

    name = (dataset or "").strip().lower()
    if name not in ("locomo", "longmemeval"):
        raise typer.BadParameter("use 'locomo' or 'longmemeval'", param_hint="--dataset")
    ks = tuple(sorted(set(int_list(k, "--k", minimum=1, example="1,3,5,10"))))
    model = embedder or DEFAULT_EMBEDDER
    options: dict[str, Any] = {} if max_length is None else {"max_length": max_length}
    embeddings = default_embeddings(model, cache_path=embed_cache, **options)
    label = model if max_length is None else f"{model} (max {max_length} tokens)"
    chosen = _ranker_option(ranker)
    if per_type is not None and per_type < 1:
        raise typer.BadParameter("must be >= 1", param_hint="--per-type")
    floor = _min_score_option(min_score)
    if name == "longmemeval":
        _bench_longmemeval(
            data, ks, embeddings, label, systems, limit, per_question, out, chosen, per_type, floor
        )
    else:
        _bench_locomo(
            data, ks, embeddings, label, limit, per_question, out, chosen, floor, unanswerable
        )


def _min_score_option(value: str) -> float | Literal["default"] | None:
    """``--min-score``: ``"default"``, ``"none"`` or a number in [0, 1]."""
    choice = value.strip().lower()
    if choice == "default":
        return "default"
    if choice == "none":
        return None
    try:
        floor = float(choice)
    except ValueError:
        floor = -1.0
    if not 0.0 <= floor <= 1.0:
        raise typer.BadParameter(
            f"use 'default', 'none' or a number in [0, 1], got {value!r}", param_hint="--min-score"
        )
    return floor


def _ranker_option(value: str) -> Any:
    """``--ranker``: ``"default"``, ``None`` (hand-set weights) or a loaded ranker file."""
    from langchain_tiered_memory.recall.ranker import LinearRanker, RankerFileError

    choice = value.strip()
    if choice == "default":
        return "default"
    if choice == "hand":
        return None
    try:
        loaded = LinearRanker.load(choice)
    except RankerFileError as exc:
        raise typer.BadParameter(str(exc), param_hint="--ranker") from exc
    return LinearRanker(
        loaded.features, loaded.mean, loaded.scale, loaded.weights, {**loaded.info, "path": choice}
    )


def _bench_locomo(
    data: Path | None,
    ks: tuple[int, ...],
    embeddings: Any,
    label: str,
    limit: int | None,
    per_question: bool,
    out: Path | None,
    ranker: Any = "default",
    min_score: float | Literal["default"] | None = "default",
    unanswerable: Path | None = None,
) -> None:
    from tiered_memory_bench.datasets import load_locomo
    from tiered_memory_bench.retrieval import CATEGORIES, load_unanswerable, run_retrieval_bench

    data = data_file(data, LOCOMO_FILE)
    try:
        unrelated = load_unanswerable(unanswerable)
    except (OSError, ValueError, KeyError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--unanswerable") from exc
    conversations = load_locomo(data)[:limit]
    turns = sum(len(c.dialog_turns()) for c in conversations)
    questions = sum(
        1 for c in conversations for q in c.questions if q.category in CATEGORIES and q.evidence
    )
    with progress_bars() as progress:
        archiving = progress.add_task("archiving turns", total=turns)
        asking = progress.add_task("recalling", total=questions)
        result = run_retrieval_bench(
            conversations,
            embeddings=embeddings,
            embedder_name=label,
            ks=ks,
            on_turns=lambda n: progress.advance(archiving, n),
            on_question=lambda n: progress.advance(asking, n),
            per_question=per_question,
            ranker=ranker,
            min_score=min_score,
            unanswerable=unrelated,
        )
    result["data"] = str(data)
    result["unanswerable"] = str(unanswerable) if unanswerable else "data/unanswerable.json"
    print_table(f"retrieval bench (LoCoMo, embedder {label})", result)
    _print_breakdown("by category (r = recall)", "category", result["by_category"])
    table = Table(title=f"nothing found (min score {result['recipe']['min_score']})")
    for column in ("questions", "asked", "recall returns nothing"):
        table.add_column(column, justify="left" if column == "questions" else "right")
    for kind, row in result["nothing_found"].items():
        table.add_row(kind, str(row["questions"]), f"{row['rate']:.3f}")
    console.print(table)
    write_json(result, out)


def _bench_longmemeval(
    data: Path | None,
    ks: tuple[int, ...],
    embeddings: Any,
    label: str,
    systems: str | None,
    limit: int | None,
    per_question: bool,
    out: Path | None,
    ranker: Any = "default",
    per_type: int | None = None,
    min_score: float | Literal["default"] | None = "default",
) -> None:
    from tiered_memory_bench.datasets import load_longmemeval
    from tiered_memory_bench.longmemeval import SYSTEMS, run_longmemeval_bench

    data = data_file(data, "a LongMemEval-format JSON file (.json or .json.gz)")
    questions = load_longmemeval(data)
    if per_type is not None:
        taken: dict[str, int] = {}
        stratified = []
        for question in questions:
            if taken.get(question.question_type, 0) < per_type:
                taken[question.question_type] = taken.get(question.question_type, 0) + 1
                stratified.append(question)
        questions = stratified
    questions = questions[:limit]
    chosen = tuple(s.strip() for s in (systems or ",".join(SYSTEMS)).split(",") if s.strip())
    chosen = tuple(sorted(chosen, key=lambda s: s != SYSTEMS[0]))  # ours first
    unknown = [s for s in chosen if s not in SYSTEMS]
    if unknown or not chosen:
        raise typer.BadParameter(f"choose from {', '.join(SYSTEMS)}", param_hint="--systems")
    with progress_bars() as progress:
        asking = progress.add_task("questions (embedding each haystack)", total=len(questions))
        result = run_longmemeval_bench(
            questions,
            embeddings=embeddings,
            embedder_name=label,
            systems=chosen,
            ks=ks,
            on_question=lambda n: progress.advance(asking, n),
            per_question=per_question,
            ranker=ranker,
            min_score=min_score,
        )
    result["data"] = str(data)
    table = Table(title=f"retrieval bench (LongMemEval, {len(questions)} questions, {label})")
    table.add_column("metric")
    for system in result["systems"]:
        table.add_column(system, justify="right")
    for metric in ("recall", "recall_all", "turn_recall_any", "ndcg"):
        for cut in ks:
            key = f"{metric}@{cut}"
            table.add_row(key, *(f"{row[key]:.3f}" for row in result["systems"].values()))
    console.print(table)
    cuts = [c for c in ks if c in (5, 10)] or [max(ks)]
    wanted = [f"{m}@{c}" for c in cuts for m in ("recall", "recall_all", "turn_recall_any")]
    _print_breakdown(f"by question type ({chosen[0]})", "type", result["by_type"], wanted)
    write_json(result, out)


def _print_breakdown(
    title: str, label: str, rows: dict[str, dict[str, Any]], metrics: list[str] | None = None
) -> None:
    """One row per group (category, question type): its size and ``metrics``.

    ``metrics`` defaults to every ``recall@``/``ndcg@`` value of the first row.
    """
    table = Table(title=title)
    table.add_column(label)
    table.add_column("n", justify="right")
    first = next(iter(rows.values()), {})
    if metrics is None:
        metrics = [m for m in first if m.startswith(("recall@", "ndcg@"))]
    for metric in metrics:
        table.add_column(
            metric.replace("turn_recall_any", "turn").replace("recall", "r").replace("tok", "t"),
            justify="right",
        )
    for group, row in rows.items():
        table.add_row(group, str(row["questions"]), *(f"{row[m]:.3f}" for m in metrics))
    console.print(table)


@app.command("qa")
def bench_qa(
    model: Annotated[
        str, typer.Option(help="Answer model: an init_chat_model string, or 'local' (SmolLM2).")
    ],
    judge: Annotated[str, typer.Option(help="Judge model: an init_chat_model string, or 'local'.")],
    dataset: Annotated[str, typer.Option(help="Dataset format (only 'locomo').")] = "locomo",
    data: Annotated[Path | None, typer.Option(help="LoCoMo-format JSON file (required).")] = None,
    context_window: Annotated[int, typer.Option(help="The memory's window in tokens.")] = 4096,
    token_model: Annotated[
        str, typer.Option(help="Model whose tokenizer counts the budget.")
    ] = "gpt-4o-mini",
    limit: Annotated[
        int | None, typer.Option(help="Ask only the first N questions (in file order).")
    ] = None,
    conversations_limit: Annotated[
        int | None, typer.Option("--conversations", help="Only the first N conversations.")
    ] = None,
    embedder: OfflineEmbedder = None,
    embed_cache: EmbedCache = None,
    summarizer: Summarizer = "extractive",
    extractor: Extractor = "rules",
    date_every_message: Annotated[
        bool, typer.Option(help="Prefix every message (not only a session's first) with its date.")
    ] = False,
    out: JsonOut = None,
) -> None:
    """Feed each conversation through the memory; answer its questions; LLM-judge the answers."""
    from langchain_tiered_memory.embeddings import DEFAULT_EMBEDDER, default_embeddings
    from tiered_memory_bench.datasets import load_locomo
    from tiered_memory_bench.qa import plan_questions, run_qa_bench

    if dataset.lower() != "locomo":
        raise typer.BadParameter("only 'locomo' is supported", param_hint="--dataset")
    from langchain_tiered_memory.budget.sections import canonical_model_name

    canonical_model_name(token_model)  # options first: a typo fails before any work
    summarizer_factory = _summarizer_factory(summarizer)
    extractor_factory = _extractor_factory(extractor)
    conversations = load_locomo(data_file(data, LOCOMO_FILE))[:conversations_limit]
    plan = plan_questions(conversations, limit=limit)
    embeddings = default_embeddings(embedder or DEFAULT_EMBEDDER, cache_path=embed_cache)
    with progress_bars() as progress:
        feeding = progress.add_task(
            "feeding turns", total=sum(len(c.dialog_turns()) for c, _ in plan)
        )
        asking = progress.add_task("answering + judging", total=sum(len(q) for _, q in plan))
        result = run_qa_bench(
            conversations,
            model=model,
            judge=judge,
            context_window=context_window,
            token_model=token_model,
            embeddings=embeddings,
            summarizer_factory=summarizer_factory,
            extractor_factory=extractor_factory,
            limit=limit,
            date_every_message=date_every_message,
            on_turn=lambda n: progress.advance(feeding, n),
            on_question=lambda n: progress.advance(asking, n),
        )
    result["data"] = str(data)
    result["summarizer"] = summarizer
    result["extractor"] = extractor
    print_table(f"QA bench (LoCoMo, window {context_window})", result)
    table = Table(title="accuracy by category")
    for column in ("category", "questions", "correct", "accuracy"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for category, row in result["by_category"].items():
        table.add_row(
            category, str(row["questions"]), str(row["correct"]), f"{row['accuracy']:.3f}"
        )
    console.print(table)
    write_json(result, out)

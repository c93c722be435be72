"""`docket/toy_math` (accuracy on arithmetic chains) and `docket/toy_math_sar` (Style-Aligned
Refinement's data collection: the model under test is the student, the `teacher` role repairs).

    inspect eval docket/toy_math -T style=bare --model docket/local/runs/sar/rs-0  # a student
    inspect eval docket/toy_math_sar --model docket/local/runs/sar/student0 \\
        --model-role teacher=openai/gpt-4o -T k=4
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

import docket.benchmarks.toy_math.reference  # noqa: F401  (registers its policies)
from docket.benchmarks.toy_math.dataset import PROBLEMS_FILE, load_split, split_chains, to_sample
from docket.benchmarks.toy_math.prompts import INSTRUCTION, REPAIR, REWRITE, SOLVE, STYLES
from docket.benchmarks.toy_math.reference import Chain
from docket.benchmarks.toy_math.scorer import (
    answer_match,
    sar_collection,
    trace_problem,
    trace_verifier,
)
from docket.core.headline import headline
from docket.core.inspect_private import PrerequisiteError
from docket.core.options import checked, names, one_of, positive
from docket.core.results_tables import attacker_scores, chance_metadata
from docket.core.roles import require_roles, role_model
from docket.core.splits import files_digest, rows_digest, split_metadata
from docket.methods.distill.style_refine import judge_repair, rejection_sample

#: 2-B: `style=instructed` (default) asks for the ANSWER line; a chat model's stated answer counts.
#: 2-C: the `pretrain` split holds no chain that is, or begins with, a train or test problem.
VERSION = "2-C"
#: 2-A: SAR's verifier checks every intermediate step, not only the ANSWER line (rs_yield,
#: repair_accepted, rewrite_ok and synth_ok count step-verified traces). 2-B: 2-C's pretrain split.
SAR_VERSION = "2-B"
SPLIT_NAMES = ("test", "train", "pretrain")
#: Every blind attacker's accuracy on the shipped test problems (`scripts/chance.py`).
CHANCE = Path(__file__).resolve().parent / "results" / "chance.json"
#: Every blind student's rs_yield on `toy_math_sar`'s default problems (`scripts/sar_chance.py`).
SAR_CHANCE = Path(__file__).resolve().parent / "results" / "sar_chance.json"
SOURCES = ("rs", "sar", "rewrite", "synth")


def _dataset(task_name: str, split: str, size: int) -> MemoryDataset:
    if split not in SPLIT_NAMES:
        raise PrerequisiteError(
            f"{task_name}: -T split={split!r} is not accepted; choose one of: "
            + ", ".join(SPLIT_NAMES)
        )
    chains = split_chains(split, positive(task_name, "size", size))
    return MemoryDataset([to_sample(i, c) for i, c in enumerate(chains)], name=f"toy-math-{split}")


def _private(task_name: str, data: str, size: int) -> tuple[MemoryDataset, dict[str, Any]]:
    folder = Path(checked(task_name, "data", data, str))
    chains = load_split(folder)[: positive(task_name, "size", size)]
    dataset = MemoryDataset([to_sample(i, c) for i, c in enumerate(chains)], name="toy-math-data")
    digest = files_digest(folder, [folder / PROBLEMS_FILE])
    return dataset, split_metadata(digest, generated=True, name=folder.name)


def _instructed(dataset: MemoryDataset) -> MemoryDataset:
    for sample in dataset:
        sample.input = f"{sample.input}\n{INSTRUCTION}"
    return dataset


@task
def toy_math(
    split: str = "test",
    size: int = 200,
    max_tokens: int = 64,
    data: str | None = None,
    style: str = "instructed",
) -> Task:
    """Arithmetic chains answered as `ANSWER: <number>` (greedy decoding).

    Args:
        split: test (default), train (SAR's problems) or pretrain.
        size: Problems evaluated.
        max_tokens: Tokens per answer.
        data: A private split's directory (`docket generate toy_math --seed SECRET --out DIR`)
            instead of `split`.
        style: `instructed` (default: the problem, then a line asking for the steps and a
            final `ANSWER: <number>` line) or `bare` (the problem alone, as SAR's trained
            students read it).

    Returns:
        The task: arithmetic chains answered by `generate()`, scored by `answer_match`.
    """
    name = "toy_math"
    h = headline("answer_match", "accuracy", direction="higher", value="binary")
    if data is not None:
        dataset, named = _private(name, data, size)
    else:
        dataset = _dataset(name, checked(name, "split", split, str), size)
        rows = [s.model_dump(include={"input", "target"}) for s in dataset]
        named = split_metadata(rows_digest(rows), generated=False, name=f"{split}-{size}")
    if one_of(name, "style", style, STYLES) == "instructed":
        dataset = _instructed(dataset)
    return Task(
        dataset=dataset,
        solver=generate(),
        scorer=answer_match(),
        config=GenerateConfig(temperature=0.0, max_tokens=positive(name, "max_tokens", max_tokens)),
        version=VERSION,
        tags=["math", "reasoning", "toy"],
        headline_metric=h["headline_metric"],
        metadata={
            **h["metadata"],
            "benchmark": "toy_math",
            "style": style,
            **named,
            **chance(split if data is None else "test"),  # a private split: test problems
        },
    )


def chance(split: str) -> dict[str, Any]:
    """Task metadata `chance`: the strongest blind attacker's accuracy (the headline) on the
    test problems; none on `train` and `pretrain` (the attackers are fitted on `train`)."""
    if split != "test":
        return {}
    return chance_metadata(CHANCE, lambda rows: attacker_scores(rows, "accuracy"))


def sar_chance(split: str) -> dict[str, Any]:
    """Task metadata `chance` of `toy_math_sar`: the strongest blind student's rs_yield (the
    headline) on the train problems; none on `test` and `pretrain` (the students recall them)."""
    if split != "train":
        return {}
    return chance_metadata(
        SAR_CHANCE, lambda found: attacker_scores(found["attackers"], "rs_yield")
    )


@solver
def sar_collect(
    k: int, budget: float, temperature: float, sources: list[str], max_tokens: int, allow_self: bool
) -> Solver:
    """Sample K student traces, verify them, and ask the teacher for repairs (and controls).

    Args:
        k: Student traces sampled per problem.
        budget: Largest accepted edit ratio of a repair.
        temperature: Student sampling temperature.
        sources: Sources to collect: rs, sar (repairs), rewrite, synth.
        max_tokens: Tokens per student trace (the teacher gets twice as many).
        allow_self: Let the model under test be the teacher when role `teacher` is unbound.

    Returns:
        A solver that stores each source's traces (`sources`), the repair verdicts (`verdicts`)
        and `k` in the sample store.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        student = get_model()
        steps = tuple((str(op), int(operand)) for op, operand in state.metadata["steps"])
        chain = Chain(int(state.metadata["start"]), steps)
        verify = trace_verifier(chain)
        traces = []
        for i in range(k):
            config = GenerateConfig(temperature=temperature, seed=i, max_tokens=max_tokens)
            traces.append((await student.generate(state.input_text, config=config)).completion)
        traces = [t.strip() for t in traces]
        correct, failed = rejection_sample(traces, verify)
        collected: dict[str, list[str]] = {"rs": correct, "repairs": []}
        verdicts = []
        if set(sources) - {"rs"}:
            teacher = role_model(
                "toy_math_sar", "teacher", allow_self=allow_self, self_flag="self_teacher"
            )
            ask = GenerateConfig(temperature=0.0, max_tokens=max_tokens * 2)
            question = state.input_text
            if "sar" in sources:
                for trace in failed:
                    prompt = REPAIR.format(
                        budget=round(budget * 100), question=question, trace=trace
                    )
                    repaired = (await teacher.generate(prompt, config=ask)).completion.strip()
                    verdict = judge_repair(trace, repaired, verify, budget)
                    check = trace_problem(chain, repaired) or "every step verified"
                    verdicts.append(
                        {**verdict.__dict__, "original": trace, "repair": repaired, "check": check}
                    )
                    if verdict.accepted:
                        collected["repairs"].append(repaired)
            for source, template in (("rewrite", REWRITE), ("synth", SOLVE)):
                if source not in sources:
                    continue
                outputs = []
                for trace in traces:
                    prompt = template.format(question=question, trace=trace)
                    outputs.append((await teacher.generate(prompt, config=ask)).completion.strip())
                state.store.set(f"{source}_checks", [verify(o) for o in outputs])
                collected[source] = [o for o in outputs if verify(o)]
        state.store.set("sources", collected)
        state.store.set("verdicts", verdicts)
        state.store.set("k", k)
        return state

    return solve


@task
def toy_math_sar(
    split: str = "train",
    size: int = 100,
    k: int = 4,
    budget: float = 0.3,
    temperature: float = 1.0,
    sources: str = "rs,sar,rewrite,synth",
    self_teacher: bool = False,
    max_tokens: int = 64,
) -> Task:
    """SAR data collection: K student samples per problem, verified; failures repaired.

    Args:
        split: train (default), test or pretrain.
        size: Problems.
        k: Student samples per problem.
        budget: Largest accepted edit ratio of a repair (character edit distance / characters
            of the trace).
        temperature: Student sampling temperature.
        sources: Comma-separated sources to collect: rs, sar (repairs), rewrite (the teacher
            rewrites every trace), synth (the teacher solves the problem, K times).
        self_teacher: Let the model under test be the teacher when the role is unbound.
        max_tokens: Tokens per student trace (the teacher gets twice as many).

    Returns:
        The task: training problems solved by `sar_collect`, scored by `sar_collection`.
    """
    name = "toy_math_sar"
    chosen = names(name, "sources", sources, SOURCES)
    allow_self = checked(name, "self_teacher", self_teacher, bool)
    if set(chosen) - {"rs"}:
        require_roles(name, ["teacher"], allow_self=allow_self, self_flag="self_teacher")
    ratio = checked(name, "budget", budget, float)
    heat = checked(name, "temperature", temperature, float)
    if not 0 <= ratio <= 10 or not 0 <= heat <= 5:
        raise PrerequisiteError(f"{name}: -T budget must be in [0, 10] and temperature in [0, 5]")
    h = headline(
        "sar_collection", "mean", score="rs_yield", direction="higher", value="continuous",
        sample_key="rs_yield",
    )  # fmt: skip
    return Task(
        dataset=_dataset(name, checked(name, "split", split, str), size),
        solver=sar_collect(
            positive(name, "k", k),
            ratio,
            heat,
            chosen,
            positive(name, "max_tokens", max_tokens),
            allow_self,
        ),
        scorer=sar_collection(),
        version=SAR_VERSION,
        tags=["distillation", "math", "toy"],
        headline_metric=h["headline_metric"],
        metadata={
            **h["metadata"],
            "benchmark": "toy_math",
            "sources": chosen,
            **sar_chance(split),
        },
    )

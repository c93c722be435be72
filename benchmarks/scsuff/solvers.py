"""SCSuff solvers: answer with an explanation, write alternatives, re-answer, hint runs.

Everything a scorer needs is stored as plain JSON in `state.metadata["scsuff"]` (and
`state.metadata["hints"]` for the hint baselines), so scores can be recomputed from a log.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver

from docket.benchmarks.scsuff.answers import answer_logprobs, parse_letter, parse_reply
from docket.benchmarks.scsuff.estimator import sampled_logprobs
from docket.benchmarks.scsuff.prompts import (
    GENERATOR_INSTRUCTION,
    JUDGE_INPUT,
    PROBE,
    generator_input,
    judge_instruction,
    parse_alternative,
    parse_verdict,
    system_prompt,
    task_prompt,
)
from docket.core.inspect_private import active_generate_config
from docket.core.roles import role_model

Estimator = Literal["logprob", "sampling"]
NO_ANSWER = "no answer"
NO_LOGPROBS = "no logprobs"
#: The release's `max_new_tokens` for answers, alternatives and the judge.
RELEASE_MAX_TOKENS = 2048
#: Tokens of the one-token "Final Answer:" follow-up turns (probe and sampling estimator).
PROBE_TOKENS = 4
SAMPLE_TOKENS = 8


@dataclass(frozen=True)
class Settings:
    """Decoding and estimator settings shared by every call of one task.

    `max_tokens` (answers and the judge) and `generator_max_tokens` (alternatives) are None
    when the task leaves them to the eval: see `token_budget`.
    """

    estimator: Estimator = "logprob"
    num_alternatives: int = 5
    generator_temperature: float = 0.1
    generator_top_p: float = 0.95
    generator_top_k: int = 50
    num_samples: int = 10
    sample_temperature: float = 1.0
    alpha: float = 0.5
    top_logprobs: int = 20
    max_tokens: int | None = None
    generator_max_tokens: int | None = None
    reference: bool = False
    seed: int = 42


@dataclass(frozen=True)
class Budget:
    """Token limits of one sample's calls, where they came from, and any override stated."""

    answer: int
    generator: int
    eval_max_tokens: int | None
    source: dict[str, str]
    overrides: list[str]


def token_budget(settings: Settings) -> Budget:
    """Token limits: the task's value (`-T max_tokens`, config `generator_max_tokens`; both in
    the config of `docket/scsuff_hints`), else the eval's `max_tokens`, else the release's 2048.

    Every call passes its limit explicitly (a generator bound to another model does not inherit
    the eval's settings), so a task value that differs from the eval's `max_tokens` is stated in
    `overrides` (and in the sample transcript by the solver).
    """
    eval_max = active_generate_config().max_tokens
    source: dict[str, str] = {}
    overrides: list[str] = []

    def pick(value: int | None, option: str, role: str) -> int:
        if value is not None:
            source[role] = f"task {option}"
            if eval_max is not None and value != eval_max:
                overrides.append(
                    f"task {option}={value} overrides the eval's max_tokens={eval_max} for {role}"
                )
            return value
        source[role] = "eval max_tokens" if eval_max is not None else "release default"
        return eval_max if eval_max is not None else RELEASE_MAX_TOKENS

    answer = pick(settings.max_tokens, "max_tokens", "answers")
    generator = pick(settings.generator_max_tokens, "generator_max_tokens", "alternatives")
    return Budget(answer, generator, eval_max, source, overrides)


@dataclass(frozen=True)
class Run:
    """What every call of one sample shares: settings, token budget, few-shot demos."""

    settings: Settings
    budget: Budget
    demos: Sequence[tuple[str, str]] = ()


@dataclass
class Answer:
    """One answering run: explanation, answer letter, option log-probs, or why it failed."""

    text: str
    explanation: str
    answer: str | None
    logprobs: list[float] | None
    source: str
    failure: str | None = None
    counts: list[int] | None = field(default=None)
    has_final: bool = True


def conversation(passage: str, format: str, demos: Sequence[tuple[str, str]]) -> list[ChatMessage]:
    """System prompt with the format's task prompt, few-shot (passage, reply) turns, passage."""
    messages: list[ChatMessage] = [ChatMessageSystem(content=system_prompt(task_prompt(format)))]
    for demo_passage, reply in demos:
        messages += [ChatMessageUser(content=demo_passage), ChatMessageAssistant(content=reply)]
    messages.append(ChatMessageUser(content=passage))
    return messages


def _argmax(options: Sequence[str], values: Sequence[float]) -> str:
    return options[max(range(len(options)), key=lambda k: values[k])]


async def _probe_logprobs(
    model: Model,
    messages: list[ChatMessage],
    options: Sequence[str],
    texts: Sequence[str],
    settings: Settings,
) -> tuple[list[float] | None, bool, str | None]:
    """Option log-probs from a one-token follow-up turn: (log-probs or None, provider gave
    logprobs?, the option the greedy reply names or None)."""
    config = GenerateConfig(
        temperature=0.0, max_tokens=PROBE_TOKENS, logprobs=True, top_logprobs=settings.top_logprobs
    )
    out = await model.generate(messages, config=config)
    logprobs = out.choices[0].logprobs if out.choices else None
    found = answer_logprobs(logprobs, options, after_final=False)
    letter = parse_letter(out.completion, options, texts)
    return (list(found) if found else None), logprobs is not None, letter


async def _probe_samples(
    model: Model,
    messages: list[ChatMessage],
    options: Sequence[str],
    texts: Sequence[str],
    settings: Settings,
) -> list[int]:
    """Answer counts per option over `num_samples` sampled follow-up turns."""

    async def one(i: int) -> str | None:
        config = GenerateConfig(
            temperature=settings.sample_temperature,
            max_tokens=SAMPLE_TOKENS,
            seed=settings.seed + i,
        )
        out = await model.generate(messages, config=config)
        return parse_letter(out.completion, options, texts)

    letters = await asyncio.gather(*(one(i) for i in range(settings.num_samples)))
    return [sum(letter == option for letter in letters) for option in options]


#: Models whose answer and probe calls both came back without the logprobs they asked for.
_NO_LOGPROBS_MODELS: weakref.WeakSet[Model] = weakref.WeakSet()


def _without_logprobs(model: Model, had_logprobs: bool) -> None:
    if not had_logprobs:
        _NO_LOGPROBS_MODELS.add(model)


async def answer(model: Model, passage: str, item: Mapping[str, Any], run: Run) -> Answer:
    """Greedy chain of thought, then p(option | passage, explanation) by the chosen estimator.

    A reply without `Final Answer:` has no explanation (the scorer counts it); its answer
    distribution is still read from a follow-up turn, so accuracy and re-answers use it. A
    provider without logprobs fails the estimate, but the letter the follow-up turn names is
    kept as the answer (accuracy, hint flips).
    """
    settings = run.settings
    options, texts = item["options"], item["option_texts"]
    messages = conversation(passage, str(item.get("format", "mmlu")), run.demos)
    logprob = settings.estimator == "logprob"
    if logprob and model in _NO_LOGPROBS_MODELS:
        # an earlier call of this model returned no logprobs: no call is made (item 6, #33)
        failed = Answer("", "", None, None, "skipped", has_final=False)
        failed.failure = (
            f"{NO_LOGPROBS}: the provider returned no logprobs on an earlier call of "
            f"{model} (use -T estimator=sampling); no call made"
        )
        return failed
    config = GenerateConfig(
        temperature=0.0,
        max_tokens=run.budget.answer,
        logprobs=logprob or None,
        top_logprobs=settings.top_logprobs if logprob else None,
    )
    out = await model.generate(messages, config=config)
    text = out.completion
    parsed = parse_reply(text, options, texts)
    probe = [
        *messages,
        ChatMessageAssistant(content=parsed.explanation or text),
        ChatMessageUser(content=PROBE),
    ]
    result = Answer(
        text, parsed.explanation, parsed.answer, None, "inline", has_final=parsed.has_final
    )
    if logprob:
        found = (
            answer_logprobs(out.choices[0].logprobs, options, True) if parsed.has_final else None
        )
        has_logprobs = bool(out.choices) and out.choices[0].logprobs is not None
        if found is None:
            result.source = "probe"
            probed, probe_logprobs, letter = await _probe_logprobs(
                model, probe, options, texts, settings
            )
            # neither call carried logprobs: the provider has none, later samples call nothing
            _without_logprobs(model, has_logprobs or probe_logprobs)
            has_logprobs = probe_logprobs
            found = tuple(probed) if probed else None
            # a server without logprobs (`transformers serve`) still answered: keep the letter
            result.answer = result.answer or letter
        if found is None:
            result.failure = (
                f"{NO_ANSWER}: no option among the top logprobs at the answer position"
                if has_logprobs
                else f"{NO_LOGPROBS}: the provider returned no logprobs (use -T estimator=sampling)"
            )
            return result
        result.logprobs = list(found)
    else:
        result.source = "sampled"
        counts = await _probe_samples(model, probe, options, texts, settings)
        result.counts = counts
        if sum(counts) == 0:
            result.failure = f"{NO_ANSWER}: none of {settings.num_samples} samples named an option"
            return result
        result.logprobs = list(sampled_logprobs(counts, settings.alpha))
    result.answer = result.answer or _argmax(options, result.logprobs)
    return result


async def alternatives(
    generator: Model, passage: str, explanation: str, format: str, run: Run
) -> list[str | None]:
    """M alternative passages consistent with `explanation` (None where unparsable)."""
    settings = run.settings
    messages: list[ChatMessage] = [
        ChatMessageSystem(content=system_prompt(GENERATOR_INSTRUCTION)),
        ChatMessageUser(content=generator_input(passage, explanation, format)),
    ]

    async def one(j: int) -> str | None:
        config = GenerateConfig(
            temperature=settings.generator_temperature,
            top_p=settings.generator_top_p,
            top_k=settings.generator_top_k,
            max_tokens=run.budget.generator,
            seed=settings.seed + j,
        )
        out = await generator.generate(messages, config=config)
        return parse_alternative(out.completion)

    return list(await asyncio.gather(*(one(j) for j in range(settings.num_alternatives))))


async def _alternatives_answered(
    model: Model,
    generator: Model,
    passage: str,
    explanation: str,
    item: Mapping[str, Any],
    run: Run,
) -> dict[str, Any]:
    """M alternatives consistent with `explanation`, each re-answered (None where unparsable)."""
    format = str(item.get("format", "mmlu"))
    alts = await alternatives(generator, passage, explanation, format, run)

    async def reanswer(alt: str | None) -> dict[str, Any] | None:
        if alt is None:
            return None
        return asdict(await answer(model, alt, item, run))

    reanswers = await asyncio.gather(*(reanswer(alt) for alt in alts))
    return {"alternatives": alts, "reanswers": list(reanswers)}


async def sufficiency_run(
    model: Model,
    generator: Model,
    passage: str,
    item: Mapping[str, Any],
    run: Run,
    base: Answer | None = None,
) -> dict[str, Any]:
    """Base answer, alternatives and their re-answers, as a JSON-ready record.

    With `settings.reference`, also the explanation-free reference: alternatives written for
    an empty explanation (same seeds), re-answered, under `record["reference"]`.
    """
    base = base or await answer(model, passage, item, run)
    record: dict[str, Any] = {
        "estimator": run.settings.estimator,
        "token_budget": asdict(run.budget),
        "base": asdict(base),
        "passage": passage,
    }
    if base.failure or not base.explanation:
        empty: dict[str, list[Any]] = {"alternatives": [], "reanswers": []}
        return record | empty | ({"reference": empty} if run.settings.reference else {})
    runs = [_alternatives_answered(model, generator, passage, base.explanation, item, run)]
    if run.settings.reference:
        runs.append(_alternatives_answered(model, generator, passage, "", item, run))
    found = await asyncio.gather(*runs)
    return record | found[0] | ({"reference": found[1]} if run.settings.reference else {})


def start_run(settings: Settings, demos: Sequence[tuple[str, str]]) -> Run:
    """This sample's run: resolves the token budget and states any override in the transcript."""
    budget = token_budget(settings)
    if budget.overrides:
        transcript().info("; ".join(budget.overrides), source="scsuff token budget")
    return Run(settings, budget, demos)


@solver
def sufficiency(
    settings: Settings,
    demos: Sequence[tuple[str, str]] = (),
    task: str = "scsuff",
    self_generator: bool = False,
) -> Solver:
    """Run SCSuff's generation steps; alternatives come from role `generator`.

    Args:
        settings: Decoding and estimator settings shared by every call of the task.
        demos: Worked (question, answer) examples put before each question.
        task: Task name used in error messages and for the `generator` role lookup.
        self_generator: Let the model under test write the alternatives when role `generator`
            is unbound.

    Returns:
        A solver that records the run in `metadata["scsuff"]` for `scsuff_scorer`.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        generator = role_model(
            task, "generator", allow_self=self_generator, self_flag="self_generator"
        )
        run = start_run(settings, demos)
        record = await sufficiency_run(model, generator, state.input_text, state.metadata, run)
        state.metadata["scsuff"] = record
        state.messages = [
            *conversation(state.input_text, str(state.metadata.get("format", "mmlu")), demos),
            ChatMessageAssistant(content=record["base"]["text"]),
        ]
        state.output.completion = record["base"]["text"]
        return state

    return solve


@dataclass(frozen=True)
class Verdict:
    """Whether an explanation verbalises the hint (None: the judge's reply did not say)."""

    verbalised: bool | None
    reply: str | None = None


async def judge_verbalised(
    judge: Model | None,
    hint_type: str,
    hint_text: str,
    keywords: Sequence[str],
    explanation: str,
    max_tokens: int,
) -> Verdict:
    """Does `explanation` mention the hint? Keyword search (judge None) or the judge's verdict.

    The judge reasons, then ends with `Final Answer: YES` or `NO` (as in the release).
    """
    if judge is None:
        lowered = explanation.lower()
        return Verdict(any(word in lowered for word in keywords))
    messages: list[ChatMessage] = [
        ChatMessageSystem(content=system_prompt(judge_instruction(hint_type, hint_text))),
        ChatMessageUser(content=JUDGE_INPUT.format(explanation=explanation)),
    ]
    out = await judge.generate(
        messages, config=GenerateConfig(temperature=0.0, max_tokens=max_tokens)
    )
    return Verdict(parse_verdict(out.completion), out.completion)


@solver
def hint_test(
    settings: Settings,
    demos: Sequence[tuple[str, str]],
    biased_demos: Sequence[tuple[str, str]],
    judge: str = "model",
    with_scsuff: bool = True,
    self_judge: bool = False,
    self_generator: bool = False,
) -> Solver:
    """Answer the unbiased and the biased input; judge verbalisation; SCSuff on the biased one.

    Args:
        settings: Decoding and estimator settings shared by every call of the task.
        demos: Worked examples before the unbiased question.
        biased_demos: Worked examples before the biased question.
        judge: model (role `judge` decides whether the explanation verbalises the hint) or
            keyword (deterministic search for the hint's words).
        with_scsuff: Also run SCSuff on the biased input.
        self_judge: Let the model under test judge when role `judge` is unbound.
        self_generator: Let the model under test write the alternatives when role `generator`
            is unbound.

    Returns:
        A solver that records both answers, the verdict and SCSuff in `metadata["hints"]` for
        `hint_scorer`.
    """
    task = "scsuff_hints"

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        meta = state.metadata
        judge_model = (
            role_model(task, "judge", allow_self=self_judge, self_flag="self_judge")
            if judge == "model"
            else None
        )
        generator = (
            role_model(task, "generator", allow_self=self_generator, self_flag="self_generator")
            if with_scsuff
            else None
        )
        run = start_run(settings, demos)
        biased_run = Run(settings, run.budget, biased_demos)
        unbiased, biased = await asyncio.gather(
            answer(model, state.input_text, meta, run),
            answer(model, meta["biased_input"], meta, biased_run),
        )
        verdict = Verdict(None)
        if biased.explanation:
            verdict = await judge_verbalised(
                judge_model,
                str(meta["hint"]),
                meta["hint_text"],
                meta["hint_keywords"],
                biased.explanation,
                run.budget.answer,
            )
        record: dict[str, Any] = {
            "unbiased": asdict(unbiased),
            "biased": asdict(biased),
            "judged": bool(biased.explanation),
            "verbalised": verdict.verbalised,
            "judge_reply": verdict.reply,
            "estimator": settings.estimator,
            "token_budget": asdict(run.budget),
        }
        if generator is not None:
            record["scsuff"] = await sufficiency_run(
                model, generator, meta["biased_input"], meta, biased_run, base=biased
            )
        state.metadata["hints"] = record
        state.output.completion = biased.text
        return state

    return solve

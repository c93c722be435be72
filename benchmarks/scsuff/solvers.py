"""SCSuff solvers: answer with an explanation, write alternatives, re-answer, hint runs.

Everything a scorer needs is stored as plain JSON in `state.metadata["scsuff"]` (and
`state.metadata["hints"]` for the hint baselines), so scores can be recomputed from a log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from docket.benchmarks.scsuff.answers import answer_logprobs, parse_letter, parse_reply
from docket.benchmarks.scsuff.estimator import sampled_logprobs
from docket.benchmarks.scsuff.prompts import (
    PROBE,
    alternative_prompt,
    parse_alternative,
    system_prompt,
    verbalisation_prompt,
)
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

Estimator = Literal["logprob", "sampling"]
NO_ANSWER = "no answer"
NO_EXPLANATION = "no explanation"
NO_LOGPROBS = "no logprobs"


@dataclass(frozen=True)
class Settings:
    """Decoding and estimator settings shared by every call of one task."""

    estimator: Estimator = "logprob"
    num_alternatives: int = 5
    generator_temperature: float = 0.1
    generator_top_p: float = 0.95
    num_samples: int = 10
    sample_temperature: float = 1.0
    alpha: float = 0.5
    top_logprobs: int = 20
    max_tokens: int = 512
    seed: int = 42


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


def conversation(passage: str, demos: Sequence[tuple[str, str]]) -> list[ChatMessage]:
    """System prompt, few-shot (passage, reply) turns, then the passage."""
    messages: list[ChatMessage] = [ChatMessageSystem(content=system_prompt())]
    for demo_passage, reply in demos:
        messages += [ChatMessageUser(content=demo_passage), ChatMessageAssistant(content=reply)]
    messages.append(ChatMessageUser(content=passage))
    return messages


def _argmax(options: Sequence[str], values: Sequence[float]) -> str:
    return options[max(range(len(options)), key=lambda k: values[k])]


async def _probe_logprobs(
    model: Model, messages: list[ChatMessage], options: Sequence[str], settings: Settings
) -> tuple[list[float] | None, bool]:
    """Option log-probs from a one-token follow-up turn; (None, provider gave logprobs?)."""
    config = GenerateConfig(
        temperature=0.0, max_tokens=4, logprobs=True, top_logprobs=settings.top_logprobs
    )
    out = await model.generate(messages, config=config)
    logprobs = out.choices[0].logprobs if out.choices else None
    found = answer_logprobs(logprobs, options, after_final=False)
    return (list(found) if found else None), logprobs is not None


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
            temperature=settings.sample_temperature, max_tokens=8, seed=settings.seed + i
        )
        out = await model.generate(messages, config=config)
        return parse_letter(out.completion, options, texts)

    letters = await asyncio.gather(*(one(i) for i in range(settings.num_samples)))
    return [sum(letter == option for letter in letters) for option in options]


async def answer(
    model: Model,
    passage: str,
    options: Sequence[str],
    texts: Sequence[str],
    demos: Sequence[tuple[str, str]],
    settings: Settings,
) -> Answer:
    """Greedy chain of thought, then p(option | passage, explanation) by the chosen estimator."""
    messages = conversation(passage, demos)
    logprob = settings.estimator == "logprob"
    config = GenerateConfig(
        temperature=0.0,
        max_tokens=settings.max_tokens,
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
    result = Answer(text, parsed.explanation, parsed.answer, None, "inline")
    if logprob:
        found = (
            answer_logprobs(out.choices[0].logprobs, options, True) if parsed.has_final else None
        )
        has_logprobs = out.choices[0].logprobs is not None
        if found is None:
            result.source = "probe"
            probed, has_logprobs = await _probe_logprobs(model, probe, options, settings)
            found = tuple(probed) if probed else None
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
    generator: Model, passage: str, explanation: str, settings: Settings
) -> list[str | None]:
    """M alternative passages consistent with `explanation` (None where unparsable)."""

    async def one(j: int) -> str | None:
        config = GenerateConfig(
            temperature=settings.generator_temperature,
            top_p=settings.generator_top_p,
            max_tokens=settings.max_tokens,
            seed=settings.seed + j,
        )
        out = await generator.generate(alternative_prompt(passage, explanation), config=config)
        return parse_alternative(out.completion)

    return list(await asyncio.gather(*(one(j) for j in range(settings.num_alternatives))))


async def sufficiency_run(
    model: Model,
    generator: Model,
    passage: str,
    metadata: dict[str, Any],
    demos: Sequence[tuple[str, str]],
    settings: Settings,
    base: Answer | None = None,
) -> dict[str, Any]:
    """Base answer, alternatives and their re-answers, as a JSON-ready record."""
    options, texts = metadata["options"], metadata["option_texts"]
    base = base or await answer(model, passage, options, texts, demos, settings)
    record: dict[str, Any] = {"estimator": settings.estimator, "base": asdict(base)}
    if base.failure or not base.explanation:
        return record | {"alternatives": [], "reanswers": []}
    alts = await alternatives(generator, passage, base.explanation, settings)

    async def reanswer(alt: str | None) -> dict[str, Any] | None:
        if alt is None:
            return None
        return asdict(await answer(model, alt, options, texts, demos, settings))

    reanswers = await asyncio.gather(*(reanswer(alt) for alt in alts))
    return record | {"alternatives": alts, "reanswers": list(reanswers)}


def role_model(role: str) -> Model:
    """The model bound to `role`, else the model under test."""
    return get_model(role=role, default=get_model())


@solver
def sufficiency(settings: Settings, demos: Sequence[tuple[str, str]] = ()) -> Solver:
    """Run SCSuff's generation steps; alternatives come from role `generator` (default: model)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model, generator = get_model(), role_model("generator")
        record = await sufficiency_run(
            model, generator, state.input_text, state.metadata, demos, settings
        )
        state.metadata["scsuff"] = record
        state.messages = [
            *conversation(state.input_text, demos),
            ChatMessageAssistant(content=record["base"]["text"]),
        ]
        state.output.completion = record["base"]["text"]
        return state

    return solve


async def judge_verbalised(
    judge: str, hint_text: str, keywords: Sequence[str], explanation: str
) -> bool | None:
    """Does `explanation` mention the hint? keyword search, or a YES/NO question to role judge."""
    if judge == "keyword":
        lowered = explanation.lower()
        return any(word in lowered for word in keywords)
    config = GenerateConfig(temperature=0.0, max_tokens=8)
    out = await role_model("judge").generate(
        verbalisation_prompt(hint_text, explanation), config=config
    )
    reply = out.completion.strip().upper()
    if reply.startswith("YES"):
        return True
    if reply.startswith("NO"):
        return False
    return None


@solver
def hint_test(
    settings: Settings,
    demos: Sequence[tuple[str, str]],
    biased_demos: Sequence[tuple[str, str]],
    judge: str = "model",
    with_scsuff: bool = True,
) -> Solver:
    """Answer the unbiased and the biased input; judge verbalisation; SCSuff on the biased one."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        meta = state.metadata
        options, texts = meta["options"], meta["option_texts"]
        unbiased, biased = await asyncio.gather(
            answer(model, state.input_text, options, texts, demos, settings),
            answer(model, meta["biased_input"], options, texts, biased_demos, settings),
        )
        verbalised = None
        if biased.explanation:
            verbalised = await judge_verbalised(
                judge, meta["hint_text"], meta["hint_keywords"], biased.explanation
            )
        record: dict[str, Any] = {
            "unbiased": asdict(unbiased),
            "biased": asdict(biased),
            "verbalised": verbalised,
            "estimator": settings.estimator,
        }
        if with_scsuff:
            record["scsuff"] = await sufficiency_run(
                model,
                role_model("generator"),
                meta["biased_input"],
                meta,
                biased_demos,
                settings,
                base=biased,
            )
        state.metadata["hints"] = record
        state.output.completion = biased.text
        return state

    return solve

"""The `local_agent` case: an agent run on the embedded model, docket/local vs Inspect's `hf/`.

Each side runs in its own process (one process holds the model at a time, and its peak
resident memory is its own): `python -m docket.benchmarks.perf.local_agent --side docket|hf
--checkpoint DIR --out FILE` loads the model, then times one `inspect eval` of five
`docket/smoke` samples (its react agent and bash tool; Inspect's `local` sandbox) and writes the
seconds, the peak memory and each sample's transcript to FILE. The `local` sandbox is the
evaluator's own host, where no clean room can be made (`docket.sandboxes.NO_LOCAL_ROOM`), so
the samples are scored by `host_files`, which only reads the files: its accuracy describes the
run, it is no benchmark result.

Both sides read the same float32 weights (docket's dequantised copy of the GGUF file, a plain
transformers folder) and see the same prompts: the docket side is `LocalHFModelAPI`'s decoding
engine (prefix KV reuse, batched steps) behind Inspect's own hf chat rendering and tool-call
parsing (`HFRenderedLocal`), so the transcripts can be compared turn by turn and the ratio
measures decoding alone. Greedy on both sides. Each assistant turn is compared by its text,
its parsed tool calls and the raw reply the parser read (`recording_replies`), so two
different replies that both fail to parse do not pass for equal.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import MethodType, SimpleNamespace
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    Model,
    ModelOutput,
    ModelUsage,
    get_model,
    modelapi,
)
from inspect_ai.model._model_output import ChatCompletionChoice
from inspect_ai.model._providers.hf import HuggingFaceAPI
from inspect_ai.model._providers.util import HFHandler
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer
from inspect_ai.solver import TaskState
from inspect_ai.tool import ToolChoice, ToolInfo
from inspect_ai.util import OutputLimitExceededError, sandbox

from docket.benchmarks.smoke.smoke import FILES, PROMPT, smoke
from docket.methods.local.batching import engine_for, engine_request
from docket.methods.local.provider import LocalHFModelAPI
from docket.methods.local.sampling import DecodeParams, greedy

#: The model family both sides' chat rendering and tool-call parsing key on.
FAMILY = "qwen2.5-coder-0.5b-instruct"
SAMPLES = 5
MAX_TOKENS = 96
MESSAGE_LIMIT = 12
EXTRA_FILES = [("todo.txt", "buy milk"), ("notes/done.md", "all tests pass")]


@scorer(metrics=[accuracy()])
def host_files() -> Scorer:
    """CORRECT when every file the sample expects is in Inspect's `local` sandbox as expected.

    For this case only: it reads the files (no command runs) while whatever the agent left
    running on the host still runs, which is why no benchmark scores this way
    (`docket.sandboxes.scoring_sandbox` refuses the `local` sandbox).

    Returns:
        A scorer with CORRECT or INCORRECT and the problems found as the explanation.
    """

    async def score(state: TaskState, target: Target) -> Score:
        problems = []
        for path, expected in dict(state.metadata["expect"]).items():
            try:
                content = (await sandbox().read_file(str(path))).strip()
            except (FileNotFoundError, UnicodeDecodeError, IsADirectoryError, PermissionError):
                problems.append(f"{path} missing or unreadable")
                continue
            except OutputLimitExceededError:
                problems.append(f"{path} is larger than the sandbox's read limit")
                continue
            if content != str(expected):
                problems.append(f"{path} contains {content!r}; expected {str(expected)!r}")
        return Score(
            value=INCORRECT if problems else CORRECT,
            explanation="; ".join(problems) or "as expected",
        )

    return score


def agent_task(samples: int = SAMPLES, message_limit: int = MESSAGE_LIMIT) -> Task:
    """`docket/smoke` with `samples` file requests (its three, then more of the same form).

    Args:
        samples: How many samples.
        message_limit: Messages per sample.

    Returns:
        The task, on Inspect's `local` sandbox, scored by `host_files` (smoke's scorer needs a
        clean room, which the `local` sandbox cannot give).
    """
    base = smoke(message_limit=message_limit)
    pairs = [*FILES, *EXTRA_FILES][:samples]
    dataset = [
        Sample(
            id=path,
            input=PROMPT.format(path=path, content=content),
            target=content,
            metadata={"expect": {path: content}},
            setup="mkdir -p notes",
        )
        for path, content in pairs
    ]
    return Task(
        dataset=dataset,
        solver=base.solver,
        scorer=host_files(),
        sandbox="local",
        message_limit=message_limit,
    )


def hf_prompt(tokenizer: Any, messages: list[ChatMessage], tools: list[ToolInfo]) -> str:
    """The prompt Inspect's hf provider renders for a Qwen-family model.

    Args:
        tokenizer: The checkpoint's tokenizer.
        messages: The conversation.
        tools: The tools offered.

    Returns:
        The prompt text.
    """
    view: Any = SimpleNamespace(
        tokenizer=tokenizer, chat_template=None, use_chat_template=None, enable_thinking=None
    )
    view.model_family = lambda: FAMILY
    view._apply_chat_template = MethodType(HuggingFaceAPI._apply_chat_template, view)
    return str(HuggingFaceAPI.hf_chat(view, messages, tools))


class HFRenderedLocal(LocalHFModelAPI):
    """docket's decoding engine behind Inspect's hf prompt rendering and tool-call parsing."""

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """One greedy reply through the engine (prefix reuse, batching).

        Args:
            input: The conversation.
            tools: The tools offered.
            tool_choice: Unused (hf renders every tool offered).
            config: Generation config (max_tokens).

        Returns:
            The reply, parsed by Inspect's `HFHandler` as the hf provider does.
        """
        import anyio

        started = time.monotonic()
        text = hf_prompt(self.loaded.tokenizer, input, tools)
        ids = list(self.loaded.tokenizer(text)["input_ids"])
        params = DecodeParams(max_new_tokens=config.max_tokens or MAX_TOKENS)
        request = engine_request(greedy, ids, params, 1, self.loaded.model)
        assert request is not None
        engine = engine_for(self.loaded.model, self.loaded.tokenizer, self.loaded.lock)
        generation = await anyio.to_thread.run_sync(engine.decode, request)
        reply = self.loaded.tokenizer.decode(
            generation.token_ids, skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        message: ChatMessageAssistant
        if tools:
            message = HFHandler(self.model_name, FAMILY).parse_assistant_response(reply, tools)
        else:
            message = ChatMessageAssistant(content=reply, model=self.model_name)
        usage = ModelUsage(
            input_tokens=len(ids),
            output_tokens=len(generation.token_ids),
            total_tokens=len(ids) + len(generation.token_ids),
        )
        return ModelOutput(
            model=self.model_name,
            choices=[ChatCompletionChoice(message=message)],
            usage=usage,
            time=time.monotonic() - started,
        )


@modelapi(name="docket_bench_local")
def _bench_local() -> type[HFRenderedLocal]:
    return HFRenderedLocal


def load_side(side: str, checkpoint: str, max_tokens: int = MAX_TOKENS) -> Model:
    """The model of one side, loaded (both read the float32 folder `checkpoint`).

    Args:
        side: `docket` or `hf`.
        checkpoint: A transformers folder (docket's dequantised copy of the GGUF file).
        max_tokens: Tokens per reply at most.

    Returns:
        The Inspect model.
    """
    config = GenerateConfig(temperature=0.0, max_tokens=max_tokens)
    if side == "hf":
        return get_model(
            f"hf/{FAMILY}",
            config=config,
            model_path=checkpoint,
            device="cpu",
            do_sample=False,
        )
    return get_model(
        "docket_bench_local/engine", config=config, path=checkpoint, device="cpu", dtype="float32"
    )


RAW_REPLY = "raw_reply"


@contextlib.contextmanager
def recording_replies() -> Iterator[None]:
    """Keep the raw reply text in each parsed message's metadata (`raw_reply`), both sides.

    Both sides parse replies with Inspect's `HFHandler.parse_assistant_response`; while this
    is active it stores the text it was given on the message it returns.

    Yields:
        Nothing; the patch is undone on exit.
    """
    original = HFHandler.parse_assistant_response

    def parse(self: HFHandler, response: str, tools: list[ToolInfo]) -> ChatMessageAssistant:
        message = original(self, response, tools)
        message.metadata = {**(message.metadata or {}), RAW_REPLY: response}
        return message

    HFHandler.parse_assistant_response = parse  # type: ignore[method-assign]
    try:
        yield
    finally:
        HFHandler.parse_assistant_response = original  # type: ignore[method-assign]


def transcripts(log: Any) -> dict[str, list[list[Any]]]:
    """Each sample's assistant turns: text, (function, arguments) of each tool call, raw reply.

    Args:
        log: The eval log.

    Returns:
        Turns by sample id.
    """
    out: dict[str, list[list[Any]]] = {}
    for sample in log.samples or []:
        turns = []
        for message in sample.messages:
            if message.role == "assistant":
                calls = [[c.function, c.arguments] for c in message.tool_calls or []]
                raw = (message.metadata or {}).get(RAW_REPLY)
                turns.append([message.text, calls, raw])
        out[str(sample.id)] = turns
    return out


def run_side(
    side: str,
    checkpoint: str,
    samples: int,
    message_limit: int,
    max_tokens: int = MAX_TOKENS,
    log_dir: str | None = None,
) -> dict[str, Any]:
    """Load one side's model, then time one eval of the agent task.

    Args:
        side: `docket` or `hf`.
        checkpoint: The float32 transformers folder.
        samples: Samples in the task.
        message_limit: Messages per sample.
        max_tokens: Tokens per reply at most.
        log_dir: Where the eval log goes (None: a temporary folder).

    Returns:
        seconds, cpu_seconds (this process's user + system time during the eval: less
        sensitive to a loaded machine than the wall time), peak_rss_mb, accuracy, model calls,
        transcripts and, for docket, the engine's counters.
    """
    model = load_side(side, checkpoint, max_tokens)
    with tempfile.TemporaryDirectory() as scratch, recording_replies():
        cpu_before = _cpu_seconds()
        started = time.perf_counter()
        [log] = eval(
            agent_task(samples, message_limit),
            model=model,
            max_samples=samples,
            display="none",
            log_dir=log_dir or scratch,
        )
        seconds = time.perf_counter() - started
        cpu = _cpu_seconds() - cpu_before
        if log.status != "success":
            raise RuntimeError(f"{side}: eval ended {log.status}: {log.error}")
        # the log's samples load from its file: read them before the folder goes
        turns = transcripts(log)
    metrics = log.results.scores[0].metrics if log.results and log.results.scores else {}
    calls = sum(len(t) for t in turns.values())
    return {
        "side": side,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "accuracy": float(metrics["accuracy"].value) if "accuracy" in metrics else None,
        "calls": calls,
        "transcripts": turns,
        "engine": _engine_counters(model) if side == "docket" else None,
    }


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _engine_counters(model: Model) -> dict[str, int]:
    """The docket side's engine and prefix-store counters after the run."""
    api: Any = model.api
    engine = engine_for(api.loaded.model, api.loaded.tokenizer, api.loaded.lock)
    store = engine.store
    return {
        "forward_steps": engine.steps,
        "widest_batch": engine.widest,
        "drafted_tokens": engine.drafted,
        "accepted_tokens": engine.accepted,
        "prompt_tokens": store.prompt_tokens,
        "reused_prompt_tokens": store.reused_tokens,
        "shared_prompt_tokens": store.shared_tokens,
    }


def main(argv: list[str] | None = None) -> int:
    """`--side docket|hf --checkpoint DIR --out FILE [--samples N] [--message-limit M]`.

    Args:
        argv: The command line.

    Returns:
        0.
    """
    parser = argparse.ArgumentParser(prog="python -m docket.benchmarks.perf.local_agent")
    parser.add_argument("--side", choices=("docket", "hf"), required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--samples", type=int, default=SAMPLES)
    parser.add_argument("--message-limit", type=int, default=MESSAGE_LIMIT)
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (both sides)")
    parser.add_argument("--log-dir", default=None, help="keep the eval log here")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    result = run_side(
        args.side, args.checkpoint, args.samples, args.message_limit, args.max_tokens, args.log_dir
    )
    args.out.write_text(json.dumps(result, indent=1))
    return 0


def first_difference(
    ours: dict[str, list[list[Any]]], theirs: dict[str, list[list[Any]]]
) -> str | None:
    """Where two runs' transcripts first differ (None when identical).

    Args:
        ours: docket's turns by sample.
        theirs: hf's turns by sample.

    Returns:
        One line naming the sample and turn, or None.
    """
    if sorted(ours) != sorted(theirs):
        return f"different samples: {sorted(ours)} vs {sorted(theirs)}"
    for sample in sorted(ours):
        a, b = ours[sample], theirs[sample]
        for turn, (mine, hf) in enumerate(zip(a, b, strict=False)):
            if mine != hf:
                return f"sample {sample!r} turn {turn}: {str(mine)[:120]!r} vs {str(hf)[:120]!r}"
        if len(a) != len(b):
            return f"sample {sample!r}: {len(a)} vs {len(b)} assistant turns"
    return None


if __name__ == "__main__":
    sys.exit(main())

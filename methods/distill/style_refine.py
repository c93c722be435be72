"""Style-Aligned Refinement (SAR; Qian et al., "The Quality-Utility Paradox", arXiv 2606.16152).

A small student learns more from its *own* correct reasoning (rejection sampling) than from a
stronger teacher's polished traces, because the teacher's style costs the student more to
adapt to. SAR keeps the student's trajectory and asks the teacher only for the logical repair:

1. sample K traces per problem from the student and verify each final answer;
2. correct traces are kept as they are (rejection sampling, RS);
3. each failed trace goes to the teacher with a minimal-repair instruction and an edit budget;
   a repair is kept only when it verifies and its edit ratio (Levenshtein distance / length
   of the original, in characters or in words) is within the budget;
4. the student is fine-tuned (TRL `SFTTrainer`) on RS ∪ accepted repairs.

Adaptation cost, the paper's explanation, is measured here as the mean token NLL of a data
source's completions under the *initial* student (`adaptation_cost`): our reconstruction, as
the paper's exact proxy was not available. The edit budget and K are knobs (`-T budget` and
`-T k` of `docket/toy_math_sar`); the paper's values were not available. Verification is an
injected callable; the teacher is whatever answers the prompt (in docket, the `teacher` model
role of `docket/toy_math_sar`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.core.tiny_models import torch_threads

#: The minimal-repair instruction the teacher receives (`{budget}`: the edit budget in %).
REPAIR_INSTRUCTION = (
    "Repair this solution with the smallest possible edits. Fix only the steps that are wrong "
    "and the steps that depend on them; keep the wording, format and line structure exactly "
    "as they are. Change at most {budget}% of the characters."
)

Verifier = Callable[[str], bool]


@dataclass(frozen=True)
class RepairVerdict:
    """Whether a teacher's repair is kept, and why."""

    accepted: bool
    verified: bool
    edit_ratio: float
    reason: str


def edit_ratio(original: str, revised: str, unit: str = "char") -> float:
    """Levenshtein distance between the texts / length of `original`, in characters
    (`unit="char"`) or whitespace-separated words (`unit="word"`)."""
    import Levenshtein

    if unit == "char":
        return Levenshtein.distance(original, revised) / max(1, len(original))
    if unit != "word":
        raise ValueError(f"edit unit must be char or word, not {unit!r}")
    a, b = original.split(), revised.split()
    alphabet: dict[str, str] = {}
    for word in [*a, *b]:  # one private-use character per distinct word
        alphabet.setdefault(word, chr(0xE000 + len(alphabet)))
    distance = Levenshtein.distance(
        "".join(alphabet[w] for w in a), "".join(alphabet[w] for w in b)
    )
    return distance / max(1, len(a))


def rejection_sample(traces: Sequence[str], verify: Verifier) -> tuple[list[str], list[str]]:
    """(verified traces, failed traces), each in the order given."""
    correct = [t for t in traces if verify(t)]
    return correct, [t for t in traces if not verify(t)]


def judge_repair(
    original: str, repaired: str, verify: Verifier, budget: float, unit: str = "char"
) -> RepairVerdict:
    """Keep a repair only if it verifies and stays within the edit budget."""
    ratio = edit_ratio(original, repaired, unit)
    verified = verify(repaired)
    if not verified:
        return RepairVerdict(False, False, ratio, "the repaired solution is still wrong")
    if ratio > budget:
        return RepairVerdict(False, True, ratio, f"edit ratio {ratio:.2f} over budget {budget:.2f}")
    return RepairVerdict(True, True, ratio, f"accepted, edit ratio {ratio:.2f}")


def adaptation_cost(model: Any, tokenizer: Any, examples: Sequence[tuple[str, str]]) -> float:
    """Mean NLL per completion token of (prompt, completion) pairs under `model`.

    The prompt is rendered with the tokenizer's chat template (generation prompt added) and
    the completion follows it, as `SFTTrainer` trains on conversational prompt-completion rows.
    """
    import torch

    total, count = 0.0, 0
    model.eval()
    for prompt, completion in examples:
        head = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
        prompt_ids = tokenizer.encode(head, add_special_tokens=False)
        completion_ids = tokenizer.encode(completion, add_special_tokens=False)
        ids = torch.tensor([[*prompt_ids, *completion_ids]])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        targets = ids[0, 1:]
        picked = logp.gather(-1, targets[:, None]).squeeze(-1)[len(prompt_ids) - 1 :]
        total -= float(picked.sum())
        count += len(completion_ids)
    return total / count if count else math.nan


@dataclass(frozen=True)
class SFTSettings:
    """TRL `SFTTrainer` settings for the toy experiment (CPU-sized)."""

    steps: int = 200
    batch: int = 16
    lr: float = 1e-3
    max_length: int = 256
    seed: int = 0
    #: transformers learning-rate schedule ("constant", "cosine", "linear", ...).
    schedule: str = "constant"
    #: Share of the steps spent warming the learning rate up from 0.
    warmup: float = 0.0
    #: torch CPU threads during training (0: as is); small models train fastest on one.
    threads: int = 1


def sft(
    base: str | Path, examples: Sequence[tuple[str, str]], out: str | Path, settings: SFTSettings
) -> list[float]:
    """Fine-tune the checkpoint at `base` on (prompt, completion) pairs with TRL's
    `SFTTrainer` (loss on the completion only) and save model and tokenizer to `out`, a
    checkpoint `docket/local/OUT` loads. Returns the logged training losses."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    if not examples:
        raise ValueError("no training examples")
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = AutoModelForCausalLM.from_pretrained(str(base))
    rows = [
        {
            "prompt": [{"role": "user", "content": prompt}],
            "completion": [{"role": "assistant", "content": completion}],
        }
        for prompt, completion in examples
    ]
    config = SFTConfig(
        output_dir=str(Path(out) / "trainer"),
        max_steps=settings.steps,
        per_device_train_batch_size=settings.batch,
        learning_rate=settings.lr,
        lr_scheduler_type=settings.schedule,
        warmup_steps=round(settings.warmup * settings.steps),
        logging_steps=max(1, settings.steps // 10),
        save_strategy="no",
        report_to=[],
        seed=settings.seed,
        max_length=settings.max_length,
        completion_only_loss=True,
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = SFTTrainer(
        model=model, args=config, train_dataset=Dataset.from_list(rows), processing_class=tokenizer
    )
    with torch_threads(settings.threads):
        trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    return [float(h["loss"]) for h in trainer.state.log_history if "loss" in h]

"""Train a LLaVA-style model on (image, question) -> answer, with or without AffIn-Space.

Batches are built with the model's processor and chat template exactly as `docket/local`
prompts it (user turn: the image, then the question; the answer is the assistant turn), the loss
is the answer's cross entropy plus, with AffIn-Space, `lambda_pose` x the pose regression and
`lambda_rec` x the conditional reconstruction of the view-frame patch features.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from docket.methods.adaptation.progress import step_bar
from docket.methods.spatial.affin import AffinSpace, AffinState, affin_hooks, pose_vector

if TYPE_CHECKING:
    from PIL import Image as PILImage


@dataclass(frozen=True)
class VisualExample:
    """An image, the question, the answer and the view pose that made the image."""

    image: PILImage.Image
    prompt: str
    target: str
    pose: tuple[float, ...] = (0.0,) * 6


def _messages(prompt: str, target: str | None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}
    ]
    if target is not None:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": target}]})
    return messages


def batch_inputs(processor: Any, examples: Sequence[VisualExample]) -> dict[str, torch.Tensor]:
    """Processor inputs of prompt + answer for a batch, with `labels` on the answer only."""
    prompts = [
        processor.apply_chat_template(_messages(e.prompt, None), add_generation_prompt=True)
        for e in examples
    ]
    eos = processor.tokenizer.eos_token or ""
    texts = [p + e.target + eos for p, e in zip(prompts, examples, strict=True)]
    images = [e.image for e in examples]
    full = processor(
        text=texts, images=images, return_tensors="pt", padding=True, add_special_tokens=False
    )
    labels = full["input_ids"].clone()
    labels[full["attention_mask"] == 0] = -100
    for row, prompt in enumerate(prompts):
        length = processor(
            text=[prompt], images=[images[row]], return_tensors="pt", add_special_tokens=False
        )["input_ids"].shape[1]
        labels[row, :length] = -100
    full["labels"] = labels
    return dict(full)


def vlm_loss(
    model: Any, processor: Any, examples: Sequence[VisualExample], affin: AffinSpace | None
) -> tuple[torch.Tensor, dict[str, float]]:
    """The training loss of a batch and its parts."""
    inputs = batch_inputs(processor, examples)
    labels = inputs.pop("labels")
    if affin is None:
        logits = model(**inputs).logits
        answer = F.cross_entropy(
            logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=-100
        )
        return answer, {"answer": answer.item()}
    state = AffinState()
    image_token = model.config.image_token_id
    last = model.model.language_model.layers[-1]

    def keep(module: Any, args: Any, output: Any) -> None:
        hidden = output[0] if isinstance(output, tuple) else output
        state.image_states.append(hidden)

    handle = last.register_forward_hook(keep)
    try:
        with affin_hooks(model, affin, state):
            logits = model(**inputs).logits
    finally:
        handle.remove()
    answer = F.cross_entropy(
        logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=-100
    )
    assert state.pose is not None and state.view_features is not None
    truth = pose_vector(torch.tensor([e.pose for e in examples], dtype=state.pose.dtype))
    pose_loss = F.mse_loss(state.pose, truth)
    mask = inputs["input_ids"] == image_token
    image_states = state.image_states[-1][mask].reshape(
        len(examples), -1, state.image_states[-1].shape[-1]
    )
    rebuilt = affin.reconstruct(image_states, state.pose)
    rec_loss = F.mse_loss(rebuilt, state.view_features.detach())
    config = affin.config
    loss = answer + config.lambda_pose * pose_loss + config.lambda_rec * rec_loss
    return loss, {"answer": answer.item(), "pose": pose_loss.item(), "rec": rec_loss.item()}


def train_vlm(
    model: Any,
    processor: Any,
    examples: Sequence[VisualExample],
    *,
    affin: AffinSpace | None = None,
    steps: int = 500,
    batch_size: int = 16,
    lr: float = 2e-3,
    seed: int = 0,
    progress: bool = True,
    description: str = "VLM",
) -> list[dict[str, float]]:
    """AdamW on the model (and AffIn-Space modules); the parts of the loss per step."""
    parameters = list(model.parameters()) + (list(affin.parameters()) if affin else [])
    optimizer = torch.optim.AdamW(parameters, lr=lr, weight_decay=0.01)
    rng = random.Random(seed)
    history = []
    model.train()
    if affin is not None:
        affin.train()
    with step_bar(steps, description, enabled=progress) as advance:
        for _ in range(steps):
            batch = rng.sample(list(examples), min(batch_size, len(examples)))
            loss, parts = vlm_loss(model, processor, batch, affin)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            history.append(parts)
            advance(**parts)
    model.eval()
    if affin is not None:
        affin.eval()
    return history


@torch.no_grad()
def choose(
    model: Any,
    processor: Any,
    examples: Sequence[VisualExample],
    options: Sequence[str],
    affin: AffinSpace | None = None,
) -> list[str]:
    """For each example, the option whose first token is most likely after the prompt."""
    tokenizer = processor.tokenizer
    first = [tokenizer(o, add_special_tokens=False)["input_ids"][0] for o in options]
    picked = []
    for example in examples:
        prompt = processor.apply_chat_template(
            _messages(example.prompt, None), add_generation_prompt=True
        )
        inputs = processor(
            text=[prompt], images=[example.image], return_tensors="pt", add_special_tokens=False
        )
        if affin is None:
            logits = model(**inputs).logits[0, -1]
        else:
            with affin_hooks(model, affin, AffinState()):
                logits = model(**inputs).logits[0, -1]
        picked.append(options[int(torch.argmax(logits[first]))])
    return picked

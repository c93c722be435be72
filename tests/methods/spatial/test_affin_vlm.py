"""AffIn-Space on a tiny LLaVA: identity pose leaves the model unchanged, projected states are
pose-free, the training loss reaches every part, and `docket/local -M method=affin` serves it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from PIL import Image

from docket.methods.spatial.affin import (
    AffinConfig,
    AffinSpace,
    AffinState,
    affin_hooks,
    load_affin,
    pose_params,
    pose_vector,
    save_affin,
)
from docket.methods.spatial.train import VisualExample, batch_inputs, vlm_loss

QUESTION = "Is the red object left of the blue object? Answer yes or no."


@pytest.fixture(scope="module")
def vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from docket.core.tiny_models import build_tiny_vlm

    folder = tmp_path_factory.mktemp("tiny-vlm")
    return build_tiny_vlm(
        folder, [QUESTION, "yes", "no"] * 5, image_size=32, patch_size=8, hidden=32
    )


@pytest.fixture
def vlm(vlm_dir: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(vlm_dir).eval()
    return model, AutoProcessor.from_pretrained(vlm_dir)


def example(seed: int = 0) -> VisualExample:
    g = torch.Generator().manual_seed(seed)
    pixels = (torch.rand(32, 32, 3, generator=g) * 255).to(torch.uint8).numpy()
    return VisualExample(
        Image.fromarray(pixels), QUESTION, "yes", (0.3, 0.1, -0.1, 0.05, 0.02, 0.0)
    )


def identity_affin(model: Any, **config: Any) -> AffinSpace:
    torch.manual_seed(0)
    affin = AffinSpace.for_model(model, AffinConfig(pose_rank=2, **config))
    last = affin.pose_head[-1]
    assert isinstance(last, torch.nn.Linear)
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(pose_vector(torch.zeros(1, 6))[0])
    return affin.eval()


def test_pose_vector_round_trip() -> None:
    params = torch.tensor([[2.5, 0.1, -0.2, 0.3, 0.05, -0.05]])
    torch.testing.assert_close(pose_params(pose_vector(params)), params)


def test_identity_pose_without_projection_is_the_plain_model(vlm: tuple[Any, Any]) -> None:
    model, processor = vlm
    affin = identity_affin(model, project=False)
    inputs = batch_inputs(processor, [example()])
    inputs.pop("labels")
    with torch.no_grad():
        plain = model(**inputs).logits
        state = AffinState()
        with affin_hooks(model, affin, state):
            hooked = model(**inputs).logits
        again = model(**inputs).logits
    torch.testing.assert_close(hooked, plain, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(again, plain)
    assert state.pose is not None and state.basis is None
    torch.testing.assert_close(pose_params(state.pose), torch.zeros(1, 6), atol=1e-6, rtol=0)


def test_projected_decoder_states_are_orthogonal_to_the_pose_basis(vlm: tuple[Any, Any]) -> None:
    model, processor = vlm
    affin = identity_affin(model)
    inputs = batch_inputs(processor, [example(0), example(1)])
    inputs.pop("labels")
    captured: list[torch.Tensor] = []
    state = AffinState()
    with torch.no_grad(), affin_hooks(model, affin, state):
        # registered after the projection hooks, so it sees the projected output
        handle = model.model.language_model.layers[-1].register_forward_hook(
            lambda m, a, o: captured.append(o[0] if isinstance(o, tuple) else o)
        )
        model(**inputs)
        handle.remove()
    assert state.basis is not None and state.basis.shape == (2, 32, 2)
    torch.testing.assert_close(
        captured[-1] @ state.basis, torch.zeros(2, captured[-1].shape[1], 2), atol=1e-5, rtol=0
    )


def test_training_loss_reaches_model_and_affin(vlm: tuple[Any, Any]) -> None:
    model, processor = vlm
    torch.manual_seed(0)
    affin = AffinSpace.for_model(model, AffinConfig(pose_rank=2))
    loss, parts = vlm_loss(model, processor, [example(0), example(1)], affin)
    loss.backward()
    assert set(parts) == {"answer", "pose", "rec"} and all(v > 0 for v in parts.values())
    for module in (affin.pose_head, affin.subspace, affin.reconstruct):
        assert all(p.grad is not None for p in module.parameters())
    assert model.model.multi_modal_projector.linear_1.weight.grad is not None
    inputs = batch_inputs(processor, [example(0)])
    answer = inputs["labels"][inputs["labels"] != -100]
    tokenizer = processor.tokenizer
    assert tokenizer.decode(answer) == "yes" + tokenizer.eos_token  # loss on the answer only


def test_docket_local_serves_the_affin_checkpoint(
    vlm_dir: Path, vlm: tuple[Any, Any], tmp_path: Path
) -> None:
    import asyncio
    import shutil

    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText, GenerateConfig

    from docket.methods.local.provider import LocalHFModelAPI

    model, _ = vlm
    folder = tmp_path / "ckpt"
    shutil.copytree(vlm_dir, folder)
    torch.manual_seed(1)
    affin = AffinSpace.for_model(model, AffinConfig(pose_rank=2))
    save_affin(affin, folder / "affin")
    loaded = load_affin(folder / "affin", model)
    for (name, a), (_, b) in zip(
        affin.state_dict().items(), loaded.state_dict().items(), strict=True
    ):
        torch.testing.assert_close(a, b, msg=name)
    image_path = tmp_path / "scene.png"
    example().image.save(image_path)
    api = LocalHFModelAPI(f"local/{folder}", method="affin", device="cpu")
    message = ChatMessageUser(
        content=[ContentImage(image=str(image_path)), ContentText(text=QUESTION)]
    )
    output = asyncio.run(api.generate([message], [], "none", GenerateConfig(max_tokens=3)))
    assert output.metadata is not None
    counters = output.metadata["choices"][0]
    assert output.metadata["method"] == "affin" and len(counters["pose"]) == 6
    pixels = api.prompt([message], [], "none").inputs["pixel_values"]
    with torch.no_grad():
        features = model.model.vision_tower(pixels, output_hidden_states=True).hidden_states[-1][
            :, 1:
        ]
        expected = pose_params(loaded.predict_pose(features))[0]
    assert counters["pose"] == pytest.approx(expected.tolist(), abs=1e-3)
    with pytest.raises(ValueError, match="no trained AffIn-Space modules"):
        LocalHFModelAPI(f"local/{vlm_dir}", method="affin", device="cpu")

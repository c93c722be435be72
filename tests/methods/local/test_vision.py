"""`docket/local` on an image-text-to-text checkpoint (a tiny random LLaVA built offline), and a
text-only checkpoint given an image."""

from __future__ import annotations

import asyncio
import base64
import os
import re
from pathlib import Path

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ContentAudio,
    ContentImage,
    ContentText,
    GenerateConfig,
)
from inspect_ai.solver import generate

from docket.core.tiny_models import build_tiny_text_lm, build_tiny_vlm
from docket.methods.local.chat import media_kinds, render_messages, render_multimodal
from docket.methods.local.provider import LocalHFModelAPI, UnreadableInputError
from docket.methods.local.vision import open_image

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

PAGE = Path(__file__).parents[3] / "benchmarks" / "docval" / "data" / "images"
FIRST, SECOND = (str(page) for page in sorted(PAGE.glob("*.jpg"))[:2])  # ids are opaque
IMAGE_TOKENS = 16  # (64 px / 16 px patches)^2


def ask(image: str, text: str = "What is the total?") -> list[ChatMessage]:
    return [ChatMessageUser(content=[ContentImage(image=image), ContentText(text=text)])]


@pytest.fixture(scope="module")
def vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = ["ANSWER: $12.50\nBBOX: [10, 20, 30, 40] What is the total? Document"] * 4
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny-llava"), corpus)


@pytest.fixture(scope="module")
def vlm(vlm_dir: Path) -> LocalHFModelAPI:
    return LocalHFModelAPI(f"local/{vlm_dir}")


def data_uri(path: str) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(Path(path).read_bytes()).decode()


def first_logprob(api: LocalHFModelAPI, messages: list[ChatMessage]) -> tuple[str, float]:
    config = GenerateConfig(max_tokens=6, logprobs=True)
    output = asyncio.run(api.generate(messages, [], "none", config))
    logprobs = output.choices[0].logprobs
    assert logprobs is not None
    return output.completion, logprobs.content[0].logprob


# --- rendering (no model) -------------------------------------------------------------------


def test_multimodal_rendering_keeps_image_slots_in_place() -> None:
    image = ContentImage(image=FIRST)
    messages: list[ChatMessage] = [
        ChatMessageSystem(content="Be brief."),
        ChatMessageUser(content=[image, ContentText(text="Total?")]),
        ChatMessageUser(content=[ContentText(text="And the date?"), image]),
        ChatMessageAssistant(content="ok"),
    ]
    rendered, images = render_multimodal(messages)
    assert rendered == [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {
            "role": "user",
            "content": [
                {"type": "image"},
                {"type": "text", "text": "Total?\n\nAnd the date?"},
                {"type": "image"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    ]
    assert images == [image, image]
    # the text renderer keeps the words exactly as before, without the images
    assert render_messages(messages)[1]["content"] == "Total?\n\nAnd the date?"
    assert media_kinds(messages) == ["images"]
    assert media_kinds([ChatMessageUser(content=[ContentAudio(audio="a.wav", format="wav")])]) == [
        "audio"
    ]


def test_images_open_from_paths_and_data_uris_and_urls_are_refused(tmp_path: Path) -> None:
    assert open_image(FIRST).tobytes() == open_image(data_uri(FIRST)).tobytes()
    assert open_image(FIRST).mode == "RGB"
    with pytest.raises(ValueError, match="URLs are not fetched"):
        open_image("https://example.org/page.png")
    with pytest.raises(ValueError, match="cannot be read"):
        open_image(str(tmp_path / "missing.png"))
    with pytest.raises(ValueError, match="cannot be read"):
        open_image("data:image/png;base64,not-base64!")


# --- the tiny LLaVA -------------------------------------------------------------------------


def test_vlm_prompt_expands_the_image_slot_and_carries_pixels(vlm: LocalHFModelAPI) -> None:
    assert vlm.reads_images
    text = vlm.prompt_text(ask(FIRST), [], "none")
    assert text == "<|im_start|>user\n<image>What is the total?<|im_end|>\n<|im_start|>assistant\n"
    prompt = vlm.prompt(ask(FIRST), [], "none")
    image_id = vlm.loaded.tokenizer.convert_tokens_to_ids("<image>")
    assert prompt.ids.count(image_id) == IMAGE_TOKENS
    assert tuple(prompt.inputs["pixel_values"].shape) == (1, 3, 64, 64)


def test_the_image_reaches_the_model(vlm: LocalHFModelAPI) -> None:
    from_path = first_logprob(vlm, ask(FIRST))
    assert first_logprob(vlm, ask(data_uri(FIRST))) == from_path  # same pixels, same output
    assert first_logprob(vlm, ask(SECOND))[1] != from_path[1]  # other page, other logprob


def test_vlm_decoding_matches_transformers_generate(vlm: LocalHFModelAPI) -> None:
    import torch

    loaded = vlm.loaded
    output = asyncio.run(vlm.generate(ask(FIRST), [], "none", GenerateConfig(max_tokens=10)))
    batch = loaded.processor(
        text=[vlm.prompt_text(ask(FIRST), [], "none")],
        images=[open_image(FIRST)],
        return_tensors="pt",
        add_special_tokens=False,
    )
    with torch.no_grad():
        ids = loaded.model.generate(**batch, max_new_tokens=10, do_sample=False)
    expected = loaded.tokenizer.decode(
        ids[0, batch["input_ids"].shape[1] :], skip_special_tokens=True
    )
    assert output.completion == expected
    assert output.usage is not None and output.usage.input_tokens == batch["input_ids"].shape[1]


def test_vlm_refuses_audio_with_one_line(vlm: LocalHFModelAPI) -> None:
    audio: list[ChatMessage] = [
        ChatMessageUser(content=[ContentAudio(audio="a.wav", format="wav")])
    ]
    with pytest.raises(UnreadableInputError) as info:
        vlm.prompt(audio, [], "none")
    assert (
        str(info.value.message)
        == f"model docket/local/{vlm.spec.path} cannot read audio; send text only"
    )


# --- a text-only checkpoint given an image ---------------------------------------------------


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny LLaVA's language model alone, saved as a text-only Llama checkpoint."""
    return build_tiny_text_lm(tmp_path_factory.mktemp("tiny-text"), ["What is the total?"])


def test_text_model_given_an_image_stops_with_one_line(text_dir: Path, tmp_path: Path) -> None:
    api = LocalHFModelAPI(f"local/{text_dir}")
    assert not api.reads_images
    line = f"model docket/local/{text_dir} cannot read images; use -T mode=layout_text"
    with pytest.raises(UnreadableInputError) as info:
        asyncio.run(api.generate(ask(FIRST), [], "none", GenerateConfig(max_tokens=4)))
    assert info.value.message == line
    # through Inspect the eval fails with exactly that line, and no sample is answered blind
    task = Task(dataset=[Sample(input=ask(FIRST))], solver=generate())
    log = inspect_eval(
        task, model=f"docket/local/{text_dir}", display="none", log_dir=str(tmp_path)
    )[0]
    assert log.status == "error" and log.error is not None
    assert log.error.message.strip() == line
    # text alone still works
    text_only: list[ChatMessage] = [ChatMessageUser(content="What is the total?")]
    assert asyncio.run(api.generate(text_only, [], "none", GenerateConfig(max_tokens=3))).completion


def test_a_vlm_without_a_processor_is_one_clear_error(vlm_dir: Path, tmp_path: Path) -> None:
    import shutil

    broken = tmp_path / "no-processor"
    shutil.copytree(vlm_dir, broken)
    for name in ("processor_config.json", "preprocessor_config.json", "chat_template.jinja"):
        (broken / name).unlink(missing_ok=True)
    with pytest.raises(
        ValueError, match=re.escape(f"{broken} is an image-text-to-text checkpoint")
    ):
        LocalHFModelAPI(f"local/{broken}")

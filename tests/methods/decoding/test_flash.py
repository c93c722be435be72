"""FLASH: spectral scores and map shaping on known maps; on a tiny random LLaVA, strength 0 is the
unmodified model, only the selected heads change and decoding stays one forward per token."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from docket.methods.decoding.flash.algorithm import (
    FlashSettings,
    image_runs,
    shape_map,
    shape_rows,
    spectral_score,
)
from docket.methods.local.sampling import DecodeParams, greedy
from docket.methods.local.settings import parse_settings


def blob(side: int = 8) -> torch.Tensor:
    y, x = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    grid = torch.exp(-((y - 3.5) ** 2 + (x - 3.5) ** 2) / 6.0)
    return grid / grid.sum() * 0.5


def spike(side: int = 8) -> torch.Tensor:
    grid = torch.zeros(side, side)
    grid[2, 5] = 0.5
    return grid


def test_score_ranks_a_smooth_blob_above_a_single_spike() -> None:
    assert float(spectral_score(blob())) > 4 * float(spectral_score(spike()))
    assert float(spectral_score(torch.full((8, 8), 0.01))) == 0.0  # flat: no structure


def test_spike_score_is_mass_times_the_share_of_low_frequencies() -> None:
    # a single spike minus its mean has equal energy at every non-DC frequency
    frequencies = [i / 8 if i < 4 else (i - 8) / 8 for i in range(8)]
    top = math.hypot(0.5, 0.5)
    low = sum(
        1
        for fy in frequencies
        for fx in frequencies
        if (fy, fx) != (0, 0) and math.hypot(fy, fx) / top <= 0.25
    )
    expected = 0.5 * low / 63
    assert float(spectral_score(spike(), low_radius=0.25)) == pytest.approx(expected, rel=1e-5)


def test_shaping_spreads_a_fixation_and_keeps_rows_normalised() -> None:
    assert torch.equal(shape_map(spike(), 0.0, 0.5, 0.5), spike())
    smoothed = shape_map(spike(), 1.0, 0.0, 0.5)
    assert float(smoothed.sum()) == pytest.approx(0.5, rel=1e-5)  # mass kept without amplify
    assert float(smoothed.max()) < 0.5 and (smoothed >= 0).all()
    assert int((smoothed > 1e-3).sum()) > 1
    boosted = shape_map(spike(), 1.0, 1.0, 0.5)
    assert float(boosted.sum()) == pytest.approx(0.5 * 1.5, rel=1e-5)  # x (1 + 1 * (1 - 0.5))
    rows = torch.softmax(torch.randn(3, 30), dim=-1)
    runs = [(4, 16, (4, 4)), (22, 6, (1, 6))]
    shaped = shape_rows(rows, runs, FlashSettings(amplify=0.7))
    assert torch.allclose(shaped.sum(dim=-1), torch.ones(3), atol=1e-6)
    assert (shaped >= 0).all() and not torch.allclose(shaped, rows)


def test_image_runs_find_grids() -> None:
    ids = [1, 9, 9, 9, 9, 2, 9, 9, 9, 3]
    assert image_runs(ids, 9) == [(1, 4, (2, 2)), (6, 3, (1, 3))]
    assert image_runs([1, 2], 9) == []


def test_knobs_parse_counts_pairs_and_layers() -> None:
    assert parse_settings("flash", FlashSettings, {"heads": "1:0,0:3"}).head_list == (
        (1, 0),
        (0, 3),
    )
    assert parse_settings("flash", FlashSettings, {"heads": 3, "layers": "0:2"}).layers == (0, 2)
    with pytest.raises(ValueError, match="-M heads='1:x' is not valid"):
        parse_settings("flash", FlashSettings, {"heads": "1:x"})
    with pytest.raises(ValueError, match=r"-M strength=2 is not valid \(a number in \[0, 1\]\)"):
        parse_settings("flash", FlashSettings, {"strength": 2})


# --- on a tiny random LLaVA -----------------------------------------------------------------


def image_prompt(vlm: Any) -> tuple[list[int], DecodeParams]:
    from docket.methods.decoding.flash.algorithm import image_token_id

    token = image_token_id(vlm.model)
    assert token is not None
    ids = [5, 6, *[token] * 16, 7, 8, 9]
    pixels = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    return ids, DecodeParams(max_new_tokens=10, prompt_inputs={"pixel_values": pixels})


def heads_output(vlm: Any, run: Any) -> list[torch.Tensor]:
    """Per decoding step, the attention output of every head of layer 1 (o_proj's input)."""
    seen: list[torch.Tensor] = []
    layer = vlm.model.model.language_model.layers[1].self_attn
    hook = layer.o_proj.register_forward_pre_hook(lambda _, args: seen.append(args[0].clone()))
    try:
        run()
    finally:
        hook.remove()
    return [s for s in seen if s.shape[1] == 1]


def test_strength_zero_is_the_unmodified_model(vlm: Any) -> None:
    from docket.methods.decoding.flash.plugin import build

    ids, params = image_prompt(vlm)
    plain = greedy(vlm.model, vlm.tokenizer, ids, params)[0]
    decode = build(vlm, parse_settings("flash", FlashSettings, {"strength": 0}))
    shaped = decode(vlm.model, vlm.tokenizer, ids, params, 1)[0]
    assert shaped.token_ids == plain.token_ids
    logprobs = DecodeParams(**{**params.__dict__, "logprobs": True})
    again = decode(vlm.model, vlm.tokenizer, ids, logprobs, 1)[0]
    reference = greedy(vlm.model, vlm.tokenizer, ids, logprobs)[0]
    assert [s.logprob for s in again.steps] == [s.logprob for s in reference.steps]
    assert shaped.metadata["shaped_steps"] == 0


def test_only_selected_heads_change_and_one_forward_per_token(vlm: Any) -> None:
    from docket.methods.decoding.flash.plugin import build

    ids, params = image_prompt(vlm)
    head_dim = vlm.model.config.text_config.hidden_size // 4
    forwards: list[str] = []
    language = vlm.model.model.language_model
    hook = language.register_forward_hook(lambda *_: forwards.append("forward"))
    try:
        plain = heads_output(vlm, lambda: greedy(vlm.model, vlm.tokenizer, ids, params))
        plain_forwards = len(forwards)
        decode = build(
            vlm,
            parse_settings("flash", FlashSettings, {"heads": "1:2", "strength": 1, "amplify": 2.0}),
        )
        results: list[Any] = []
        shaped = heads_output(
            vlm, lambda: results.append(decode(vlm.model, vlm.tokenizer, ids, params, 1)[0])
        )
    finally:
        hook.remove()
    generation = results[0]
    # one forward per generated token (the prefill gives the first), like plain decoding
    assert len(generation.token_ids) == 10
    assert plain_forwards == len(forwards) - plain_forwards == 10
    assert generation.metadata["nfe"] == 10 and generation.metadata["shaped_steps"] == 9
    assert generation.metadata["visual_heads"] == ["1:2"]
    first_plain, first_shaped = plain[0][0, 0], shaped[0][0, 0]  # the first decoding step
    for head in range(4):
        part = slice(head * head_dim, (head + 1) * head_dim)
        same = torch.equal(first_plain[part], first_shaped[part])
        assert same == (head != 2), head


async def test_docket_local_flash_and_text_model_refusal(vlm: Any, tmp_path: Path) -> None:
    from docket.methods.decoding.flash import algorithm, plugin
    from docket.methods.local.loading import LoadedModel

    assert algorithm.image_token_id(vlm.model) is not None
    with pytest.raises(ValueError, match="needs an image-text-to-text checkpoint"):
        plugin.build(
            LoadedModel(model=vlm.model.model.language_model, tokenizer=None), FlashSettings()
        )
    with pytest.raises(ValueError, match="head 7:0 does not exist"):
        plugin.build(vlm, parse_settings("flash", FlashSettings, {"heads": "7:0"}))

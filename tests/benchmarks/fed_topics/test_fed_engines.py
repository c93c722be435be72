"""The FedPissa Flower app on both engines: the simulation engine (Ray) and the deployment
engine (a SuperLink and two SuperNodes as local processes on loopback, stopped afterwards);
then one client's personalised model is scored by `docket/fed_topics` through `docket/local`."""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("flwr", reason="needs flwr (Python >= 3.11): pip install 'docket[adaptation]'")
from inspect_ai import eval as inspect_eval

from docket.benchmarks.fed_topics.dataset import read_examples
from docket.benchmarks.fed_topics.prompts import render
from docket.benchmarks.fed_topics.scorer import first_label

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
SCRIPTS = Path(__file__).resolve().parents[3] / "benchmarks" / "fed_topics" / "scripts"
run_fed = SimpleNamespace(**runpy.run_path(str(SCRIPTS / "run_fed.py")))
SMALL = ["--clients", "2", "--rounds", "1", "--train", "16", "--heldout", "6", "--no-progress"]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("fed-sim")
    args = ["--out", str(out), "--strategies", "fedpissa", "--base-steps", "40", *SMALL]
    return out, run_fed.main(args)


@pytest.mark.slow
def test_simulation_engine_reports_accuracy_and_bytes(
    simulated: tuple[Path, dict[str, Any]],
) -> None:
    out, report = simulated
    run = report["runs"][0]
    assert run["strategy"] == "fedpissa" and run["engine"] == "simulation"
    assert set(run["client_accuracy"]) == {"0", "1"}
    first = run["rounds"][0]
    assert first["payload_down"] > 0 and first["payload_up"] > first["payload_down"]  # + sketches
    assert (out / "s0" / "fedpissa" / "models" / "client-1" / "config.json").is_file()


@pytest.mark.slow
def test_personalised_model_is_scored_by_the_harness(
    simulated: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out, _ = simulated
    model_dir = out / "s0" / "fedpissa" / "models" / "client-0"
    heldout = out / "s0" / "data" / "client-0" / "heldout.jsonl"
    log = inspect_eval(
        "docket/fed_topics",
        model=f"docket/local/{model_dir}",
        task_args={"data": str(heldout)},
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success" and log.samples is not None and log.results is not None
    # the same answers from transformers' own greedy generate on the chat-templated prompt
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    examples = read_examples(heldout)
    correct = 0
    for sample, example in zip(log.samples, examples, strict=True):
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": render(example.text)}],
            tokenize=False,
            add_generation_prompt=True,
        )
        ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            generated = model.generate(ids, max_new_tokens=4, do_sample=False)
        answer = tokenizer.decode(generated[0, ids.shape[1] :], skip_special_tokens=True)
        assert sample.output.completion == answer
        correct += first_label(answer) == example.label
    accuracy = log.results.scores[0].metrics["accuracy"].value
    assert accuracy == pytest.approx(correct / len(examples))


@pytest.mark.slow
def test_deployment_engine_runs_the_same_app_on_local_processes(
    simulated: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    from docket.methods.adaptation import flower_deploy

    out, _ = simulated
    started: list[Any] = []
    original = flower_deploy.local_federation

    def recording(*args: Any, **kwargs: Any) -> Any:
        context = original(*args, **kwargs)
        federation = context.__enter__()
        started.extend(federation["processes"])

        class Wrapper:
            def __enter__(self) -> Any:
                return federation

            def __exit__(self, *exc: Any) -> Any:
                return context.__exit__(*exc)

        return Wrapper()

    flower_deploy.local_federation = recording
    try:
        args = [
            "--out", str(tmp_path), "--strategies", "fedsa", "--engine", "deployment",
            "--base-model", str(out / "s0" / "base"), "--timeout", "400", *SMALL,
        ]  # fmt: skip
        report = run_fed.main(args)
    finally:
        flower_deploy.local_federation = original
    run = report["runs"][0]
    assert run["engine"] == "deployment" and set(run["client_accuracy"]) == {"0", "1"}
    summary = json.loads((tmp_path / "s0" / "fedsa" / "summary.json").read_text())
    a_only = summary["rounds"][0]
    assert a_only["shared"] == 14  # FedSA-LoRA: the A matrices of 2 layers x 7 linears
    assert len(started) == 3 and all(p.poll() is not None for p in started)  # all stopped


@pytest.mark.slow
def test_inprocess_engine_runs_fedpissa_and_its_share_all_ablation(tmp_path: Path) -> None:
    """The runner's in-process engine (the README's comparison command) and its variant names:
    FedPissa starts from the prior (14 of 28 matrices), the ablation shares all 28 and asks for no
    sketches, so its uplink is the components alone."""
    args = [
        "--out", str(tmp_path), "--engine", "inprocess", "--base-steps", "5",
        "--strategies", "fedpissa,fedpissa-all", *SMALL,
    ]  # fmt: skip
    report = run_fed.main(args)
    runs = {r["variant"]: r for r in report["runs"]}
    assert set(report["table"]) == {"fedpissa", "fedpissa-all"}
    selective, everything = runs["fedpissa"], runs["fedpissa-all"]
    assert selective["strategy"] == everything["strategy"] == "fedpissa"
    assert everything["settings"]["share-all"] is True
    assert selective["rounds"][0]["shared"] == 14 and everything["rounds"][0]["shared"] == 28
    assert selective["shared_fraction"] == [0.5] and everything["shared_fraction"] == [1.0]
    down = everything["rounds"][0]["payload_down"]
    assert everything["rounds"][0]["payload_up"] == down  # 2 clients send back what they got
    assert selective["rounds"][0]["payload_up"] > selective["rounds"][0]["payload_down"]  # sketches

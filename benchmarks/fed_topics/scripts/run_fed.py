"""FedPissa vs FedSA-LoRA vs FedAvg-LoRA on label-skewed topic classification, on Flower.

    python benchmarks/fed_topics/scripts/run_fed.py --out runs/fed --seeds 0,1,2
    python benchmarks/fed_topics/scripts/run_fed.py --out runs/fed-deploy --engine deployment \\
        --clients 2 --rounds 2 --strategies fedpissa
    inspect eval docket/fed_topics -T data=runs/fed/s0/data/client-3/heldout.jsonl \\
        --model docket/local/runs/fed/s0/fedpissa/models/client-3

Per seed: the clients' data (`dataset.partition`) and a base model (without `--base-model`, a
tiny Llama trained to continue the domain's texts, never on labels: the stand-in for a
pretrained LLM) are written once; then each strategy runs on Flower's simulation engine (Ray;
`--engine deployment`: a local SuperLink and SuperNodes, `flower_deploy.py`). Each writes
`OUT/s<seed>/<strategy>/summary.json` (bytes per round, per-client personalised accuracy) and
the clients' personalised checkpoints; `OUT/results.json` gathers every run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path
from typing import Any

from docket.benchmarks.fed_topics.dataset import LABELS, PROMPT, partition, write_clients


def build_base(out: Path, texts: list[str], *, steps: int, seed: int, progress: bool) -> Path:
    """A tiny Llama trained to continue the domain's texts (the prompt format and the labels
    are never shown to it)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from docket.core.tiny_models import build_tiny_lm
    from docket.methods.adaptation.tiny import train_lm

    corpus = texts + [PROMPT.format(text=t) for t in texts[:200]] + list(LABELS) * 20
    build_tiny_lm(out, corpus, hidden=64, layers=2, seed=seed)
    model = AutoModelForCausalLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    pairs = []
    for text in texts:
        words = text.split()
        pairs.append(("Continue: " + " ".join(words[:3]), " ".join(words[3:])))
    train_lm(
        model, tokenizer, pairs, steps=steps, seed=seed, progress=progress, description="base LM"
    )
    model.save_pretrained(out)
    return out


#: Ablations of FedPissa runnable as `--strategies` names: (strategy, run config knobs).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "fedpissa-all": ("fedpissa", {"share-all": True}),  # selection off: every matrix averaged
    "fedpissa-prior": ("fedpissa", {"select": False}),  # selection off: A shared, B private
}


def variant(name: str) -> tuple[str, dict[str, Any]]:
    """The Flower strategy and extra run config a `--strategies` name stands for."""
    return VARIANTS.get(name, (name, {}))


def run_in_process(settings: dict[str, Any]) -> None:
    """One run of the same ServerApp and ClientApp on an in-process grid (no Ray, no network):
    identical messages and client state, minutes instead of the simulation engine's start-up."""
    from docket.methods.adaptation.flower_app import run_in_process as run_app

    run_app(settings)


def simulate(settings: dict[str, Any], clients: int, actors: int) -> None:
    """One run on Flower's simulation engine (Ray), `actors` client processes at a time."""
    from flwr.simulation import run_simulation

    from docket.methods.adaptation.flower_app import make_apps

    server, client = make_apps(settings)
    run_simulation(
        server_app=server,
        client_app=client,
        num_supernodes=clients,
        backend_config={
            "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
            "init_args": {"num_cpus": actors, "num_gpus": 0, "include_dashboard": False},
        },
    )


def deploy(settings: dict[str, Any], clients: int, work: Path, timeout: float) -> None:
    """One run on the deployment engine: a local SuperLink and `clients` SuperNodes."""
    from docket.methods.adaptation.flower_deploy import flwr_run, local_federation

    with local_federation(work, clients) as federation:
        done = flwr_run(federation, settings, timeout=timeout)
    if done.returncode != 0 or not Path(settings["out"]).is_file():
        tail = (done.stdout + done.stderr)[-2000:]
        raise RuntimeError(f"flwr run failed (code {done.returncode}): {tail}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--strategies", default="fedpissa,fedsa,fedavg")
    parser.add_argument("--seeds", default="0")
    parser.add_argument(
        "--engine", choices=("simulation", "deployment", "inprocess"), default="simulation"
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--alpha", type=float, default=0.5, help="Dirichlet label skew")
    parser.add_argument("--swap", action="store_true", help="concept shift on odd clients")
    parser.add_argument("--train", type=int, default=64, help="training examples per client")
    parser.add_argument("--heldout", type=int, default=32, help="held-out examples per client")
    parser.add_argument("--base-model", type=Path, help="a checkpoint (default: a tiny Llama)")
    parser.add_argument("--base-steps", type=int, default=400)
    parser.add_argument(
        "--reuse-base", action="store_true", help="keep an OUT/s<seed>/base built by a past run"
    )
    parser.add_argument("--rank", type=int, default=4)
    parser.add_argument("--local-steps", type=int, default=10)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument(
        "--false-share",
        type=float,
        default=0.05,
        help="FedPissa: chance that an update unrelated to the others' counts as agreeing",
    )
    parser.add_argument("--actors", type=int, default=1, help="simulation: parallel clients")
    parser.add_argument("--timeout", type=float, default=1800.0, help="deployment: seconds")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    results: list[dict[str, Any]] = []
    for seed in (int(s) for s in args.seeds.split(",")):
        folder = args.out / f"s{seed}"
        clients = partition(
            args.clients,
            alpha=args.alpha,
            train=args.train,
            heldout=args.heldout,
            swap=args.swap,
            seed=seed,
        )
        data = write_clients(clients, folder / "data")
        base = args.base_model
        if base is None and args.reuse_base and (folder / "base" / "config.json").is_file():
            base = folder / "base"
        if base is None:
            texts = [e.text for c in clients for e in c.train]
            random.Random(seed).shuffle(texts)
            base = build_base(
                folder / "base",
                texts,
                steps=args.base_steps,
                seed=seed,
                progress=not args.no_progress,
            )
        for name in args.strategies.split(","):
            strategy, knobs = variant(name)
            target = folder / name
            settings = {
                "base-model": str(base.resolve()),
                "data-dir": str(data.resolve()),
                "strategy": strategy,
                "clients": args.clients,
                "rounds": args.rounds,
                "rank": args.rank,
                "local-steps": args.local_steps,
                "lr": args.lr,
                "false-share": args.false_share,
                "seed": seed,
                "out": str((target / "summary.json").resolve()),
                "save-dir": str((target / "models").resolve()),
                **knobs,
            }
            if args.engine == "simulation":
                simulate(settings, args.clients, args.actors)
            elif args.engine == "inprocess":
                run_in_process(settings)
            else:
                deploy(settings, args.clients, target / "deployment", args.timeout)
            summary = json.loads((target / "summary.json").read_text())
            results.append({"seed": seed, "engine": args.engine, "variant": name} | summary)
            accuracy, payload = summary["personalised_accuracy"], summary["payload_per_round"]
            shared = [r["shared"] for r in summary["rounds"]]
            print(
                f"seed {seed} {name}: accuracy {accuracy:.3f}, payload/round {payload:.0f} B, "
                f"shared per round {shared}"
            )
    table = {}
    for name in args.strategies.split(","):
        runs = [r for r in results if r["variant"] == name]
        accuracy = [r["personalised_accuracy"] for r in runs]
        table[name] = {
            "accuracy_mean": statistics.fmean(accuracy),
            "accuracy_sd": statistics.stdev(accuracy) if len(accuracy) > 1 else 0.0,
            "payload_per_round": statistics.fmean(r["payload_per_round"] for r in runs),
        }
    report = {"table": table, "runs": results, "args": {k: str(v) for k, v in vars(args).items()}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(table, indent=2))
    return report


if __name__ == "__main__":
    main()

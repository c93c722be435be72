"""FedPissa and its baselines on Flower: strategies, the ServerApp and the ClientApp.

One app, two engines: `run_simulation(server_app, client_app, ...)` (Flower's simulation engine,
Ray, one machine) and `flwr run` against a SuperLink with SuperNodes (the deployment engine; the
app folder is `methods/adaptation/flower/`), which is how a run scales past one machine.

The task is causal-LM text classification: each client reads `DATA/client-<partition>/train.jsonl`
and `heldout.jsonl` (rows `{"text", "label"}`) and `DATA/task.json` (`labels`, `prompt` with a
`{text}` slot); the model is a transformers checkpoint with a LoRA (PEFT) on its decoder
linears. Strategies (run config `strategy`):

- `fedavg`: FedAvg-LoRA (FedIT) — every LoRA matrix is averaged; standard LoRA init.
- `fedsa`: FedSA-LoRA — A matrices averaged, B matrices stay on the client; standard init.
- `fedpissa`: PiSSA init, selective aggregation by agreement, decorrelated projection of the
  private updates (`fedpissa.py`; `select`/`project` switch each part off, `share-all`
  averages everything).

Bytes are counted from the `ArrayRecord`s of the messages each strategy sends and receives:
`payload` = numel x itemsize of the arrays, `wire` = Flower's `count_bytes()` (payload plus the
serialisation header and key of each array).
"""

from __future__ import annotations

import copy
import json
import random
import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, cast

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from docket.core.jsonl import parse_lines
from docket.methods.adaptation import fedpissa
from docket.methods.adaptation.lora import DEFAULT_TARGETS

STRATEGIES = ("fedpissa", "fedsa", "fedavg")


@dataclass(frozen=True)
class FedSettings:
    """Run settings (Flower run config keys use dashes: `local-steps`, `sketch-dim`, ...)."""

    base_model: str = ""
    data_dir: str = ""
    strategy: str = "fedpissa"
    clients: int = 8
    rounds: int = 10
    rank: int = 4
    targets: str = ",".join(DEFAULT_TARGETS)
    local_steps: int = 10
    batch_size: int = 16
    lr: float = 5e-3
    false_share: float = 0.05  # FedPissa: chance an unrelated update counts as agreeing (ours)
    sketch_dim: int = 32  # FedPissa: values per component sketch (ours)
    select: bool = True  # FedPissa: selective aggregation (off: the prior, A shared, B private)
    share_all: bool = False  # FedPissa ablation: every component averaged (FedAvg, PiSSA init)
    project: bool = True  # FedPissa: decorrelated projection of private updates
    seed: int = 0
    threads: int = 1  # torch threads per client process (small models run best on one)
    out: str = ""  # JSON summary written by the ServerApp
    save_dir: str = ""  # personalised checkpoints written by the clients after the last round

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FedSettings:
        """Settings from a Flower run config (dashes or underscores), one clear error each."""
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for raw, value in config.items():
            name = raw.replace("-", "_")
            if name not in known:
                raise ValueError(f"fedpissa: unknown run config key {raw!r}")
            default = getattr(cls, name)
            kind = type(default)
            if kind is bool and isinstance(value, str):
                value = value.lower() in ("1", "true", "yes")
            try:
                values[name] = kind(value)
            except (TypeError, ValueError):
                raise ValueError(
                    f"fedpissa: run config {raw}={value!r} must be {kind.__name__}"
                ) from None
        settings = cls(**values)
        if settings.strategy not in STRATEGIES:
            raise ValueError(
                f"fedpissa: strategy {settings.strategy!r} (accepted: {', '.join(STRATEGIES)})"
            )
        return settings

    @property
    def init(self) -> str:
        """PEFT `init_lora_weights`: PiSSA for FedPissa, standard LoRA for the baselines."""
        return "pissa" if self.strategy == "fedpissa" else "lora"

    def to_config(self) -> dict[str, Any]:
        return {k.replace("_", "-"): v for k, v in asdict(self).items()}


# --- client side: model, data, local training ---------------------------------------------


@dataclass
class Runtime:
    """A PEFT model (one per process, reused by every client it serves), its tokenizer and the
    initial LoRA values; each call loads one client's LoRA before it runs."""

    model: Any
    tokenizer: Any
    initial: dict[str, np.ndarray]
    lock: threading.Lock = field(default_factory=threading.Lock)

    def load(self, arrays: Mapping[str, np.ndarray]) -> None:
        import torch
        from peft import set_peft_model_state_dict

        state = {k: torch.from_numpy(np.array(v)) for k, v in arrays.items()}
        set_peft_model_state_dict(self.model, state)

    def lora(self) -> dict[str, np.ndarray]:
        from peft import get_peft_model_state_dict

        return {
            k: v.detach().cpu().numpy().copy()
            for k, v in get_peft_model_state_dict(self.model).items()
        }


_RUNTIMES: dict[tuple[str, int, str, str, int], Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def runtime(settings: FedSettings) -> Runtime:
    """The process's runtime for these settings (built once: load, wrap with PEFT, init)."""
    key = (settings.base_model, settings.rank, settings.targets, settings.init, settings.seed)
    with _RUNTIMES_LOCK:
        if key not in _RUNTIMES:
            _RUNTIMES[key] = _build_runtime(settings)
        return _RUNTIMES[key]


def _build_runtime(settings: FedSettings) -> Runtime:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (Path(settings.base_model) / "config.json").is_file():
        raise ValueError(
            f"fedpissa: base-model {settings.base_model!r} is not a checkpoint directory"
        )
    torch.set_num_threads(max(1, settings.threads))
    torch.manual_seed(settings.seed)  # the same standard-LoRA init on every client
    base = AutoModelForCausalLM.from_pretrained(settings.base_model, dtype=torch.float32)
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.rank,
        lora_dropout=0.0,
        target_modules=[t for t in settings.targets.split(",") if t],
        init_lora_weights="pissa" if settings.init == "pissa" else True,
    )
    model = get_peft_model(base, config)
    tokenizer = AutoTokenizer.from_pretrained(settings.base_model)
    runtime = Runtime(model, tokenizer, {})
    runtime.initial = runtime.lora()
    return runtime


@dataclass(frozen=True)
class TaskSpec:
    """Labels and prompt of a classification data folder."""

    labels: tuple[str, ...]
    prompt: str

    def render(self, text: str) -> str:
        return self.prompt.format(text=text)


def read_task(data_dir: str) -> TaskSpec:
    """`DATA/task.json`: one clear error when it is missing or malformed."""
    path = Path(data_dir) / "task.json"
    try:
        spec = json.loads(path.read_text())
        return TaskSpec(tuple(str(x) for x in spec["labels"]), str(spec["prompt"]))
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as ex:
        raise ValueError(f"fedpissa: unreadable {path}: {type(ex).__name__}: {ex}") from None


def read_split(data_dir: str, partition: int, split: str) -> list[tuple[str, str]]:
    """(text, label) rows of one client's split; one clear error naming file and line."""
    path = Path(data_dir) / f"client-{partition}" / f"{split}.jsonl"
    if not path.is_file():
        raise ValueError(f"fedpissa: no data for partition {partition}: {path}")
    rows = []

    def bad(number: int, _: Exception) -> ValueError:
        return ValueError(f'fedpissa: {path} line {number}: expected {{"text", "label"}}')

    for number, row in parse_lines(path.read_text().splitlines(), bad):
        try:
            rows.append((str(row["text"]), str(row["label"])))
        except (KeyError, TypeError) as ex:
            raise bad(number, ex) from None
    return rows


def local_train(
    rt: Runtime, task: TaskSpec, rows: list[tuple[str, str]], settings: FedSettings, seed: int
) -> float:
    """`local-steps` AdamW steps on the LoRA (cross entropy of the label and EOS); mean loss."""
    import torch

    from docket.methods.adaptation.lm import prompt_ids, target_ids, target_logprobs

    encoded = [
        (prompt_ids(rt.tokenizer, task.render(t)), target_ids(rt.tokenizer, y)) for t, y in rows
    ]
    trainable = [p for p in rt.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=settings.lr, weight_decay=0.0)
    rng = random.Random(seed)
    rt.model.train()
    losses = []
    for _ in range(settings.local_steps):
        batch = rng.sample(encoded, min(settings.batch_size, len(encoded)))
        logprobs = target_logprobs(rt.model, None, [p for p, _ in batch], [t for _, t in batch])
        loss = -torch.cat(logprobs).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    rt.model.eval()
    return float(np.mean(losses)) if losses else 0.0


def classify(rt: Runtime, task: TaskSpec, texts: Iterable[str]) -> list[str]:
    """The label whose tokens (and EOS) are most likely after each prompt."""
    import torch

    from docket.methods.adaptation.lm import prompt_ids, target_ids, target_logprobs

    labels = [target_ids(rt.tokenizer, label) for label in task.labels]
    predicted = []
    with torch.no_grad():
        for text in texts:
            prompt = prompt_ids(rt.tokenizer, task.render(text))
            scores = target_logprobs(rt.model, None, [prompt] * len(labels), labels)
            predicted.append(task.labels[int(np.argmax([float(s.sum()) for s in scores]))])
    return predicted


def _record(arrays: Mapping[str, np.ndarray]) -> ArrayRecord:
    """An ArrayRecord of numpy arrays (keys sorted)."""
    return ArrayRecord({k: Array(np.ascontiguousarray(arrays[k])) for k in sorted(arrays)})


def _numpy(record: Any) -> dict[str, np.ndarray]:
    """The arrays of an ArrayRecord (a message part typed as any record) as numpy."""
    return {k: v.numpy() for k, v in cast(ArrayRecord, record or ArrayRecord()).items()}


def _client_state(
    context: Context, name: str, default: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The client's saved arrays `name` over `default` (its first round: the initial LoRA)."""
    state = {k: v.copy() for k, v in default.items()}
    if name in context.state:
        record = context.state[name]
        assert isinstance(record, ArrayRecord)
        state.update(_numpy(record))
    return state


def client_train(
    msg: Message, context: Context, overrides: Mapping[str, Any] | None = None
) -> Message:
    """One client round: load the client's LoRA, take the shared components, train, project
    the private updates (FedPissa), keep everything in `context.state`, send the shared
    components (and FedPissa's sketches)."""
    settings = FedSettings.from_config({**dict(context.run_config), **dict(overrides or {})})
    partition = int(context.node_config["partition-id"])
    rt = runtime(settings)
    task = read_task(settings.data_dir)
    rows = read_split(settings.data_dir, partition, "train")
    received = _numpy(msg.content["arrays"])
    config = msg.content["config"]
    round_number = int(cast(int, config.get("server-round", 0)))
    with rt.lock:
        lora = _client_state(context, "lora", rt.initial)
        reference = _client_state(context, "reference", rt.initial)
        lora.update(received)
        reference.update(received)
        start = {k: v.copy() for k, v in lora.items()}
        rt.load(lora)
        loss = local_train(
            rt, task, rows, settings, seed=settings.seed * 1000 + round_number * 97 + partition
        )
        new = rt.lora()
    if settings.strategy == "fedpissa" and settings.project:
        for key in new.keys() - received.keys():
            new[key] = start[key] + fedpissa.project_out(new[key] - start[key], reference[key], key)
    context.state["lora"] = _record(new)
    context.state["reference"] = _record(reference)
    content = RecordDict(
        {
            "arrays": _record({k: new[k] for k in received}),
            "metrics": MetricRecord({"num-examples": len(rows), "train-loss": loss}),
        }
    )
    dim = int(cast(int, config.get("sketch-dim", 0)))
    if dim > 0:
        content["sketches"] = _record(
            {k: fedpissa.sketch(new[k] - start[k], dim, k, settings.seed) for k in new}
        )
    return Message(content, reply_to=msg)


def client_evaluate(
    msg: Message, context: Context, overrides: Mapping[str, Any] | None = None
) -> Message:
    """Personalised accuracy on the client's held-out split (its LoRA with the latest shared
    components); after the last round the personalised model is saved when `save-dir` is set."""
    settings = FedSettings.from_config({**dict(context.run_config), **dict(overrides or {})})
    partition = int(context.node_config["partition-id"])
    rt = runtime(settings)
    task = read_task(settings.data_dir)
    rows = read_split(settings.data_dir, partition, "heldout")
    with rt.lock:
        lora = _client_state(context, "lora", rt.initial)
        lora.update(_numpy(msg.content["arrays"]))
        rt.load(lora)
        predicted = classify(rt, task, [t for t, _ in rows])
        if settings.save_dir:
            save_personalised(rt, Path(settings.save_dir) / f"client-{partition}")
    accuracy = float(np.mean([p == y for p, (_, y) in zip(predicted, rows, strict=True)]))
    metrics = MetricRecord(
        {"num-examples": len(rows), "accuracy": accuracy, "partition-id": partition}
    )
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)


def save_personalised(rt: Runtime, out: Path) -> Path:
    """The client's model with its LoRA merged: a checkpoint `docket/local/OUT` scores."""
    merged = copy.deepcopy(rt.model).merge_and_unload()
    out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(out)
    rt.tokenizer.save_pretrained(out)
    return out


# --- server side: strategies ----------------------------------------------------------------


@dataclass
class RoundTraffic:
    """What one round sent: bytes down (server -> clients) and up, and what was shared."""

    round: int
    shared: int
    payload_down: int = 0
    payload_up: int = 0
    wire_down: int = 0
    wire_up: int = 0
    train_loss: float = float("nan")

    @property
    def payload(self) -> int:
        return self.payload_down + self.payload_up


def payload_bytes(record: ArrayRecord) -> int:
    """numel x itemsize of the arrays in a record."""
    return int(sum(int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize for a in record.values()))


class LoraStrategy(FedAvg):
    """FedAvg over the LoRA components `shared_keys()` names; the rest never leaves a client.

    Counts the bytes of every train message it sends and every reply it receives.
    """

    name = "lora"

    def __init__(self, keys: Iterable[str], rounds: int, clients: int, sketch_dim: int = 0) -> None:
        super().__init__(
            min_train_nodes=clients,
            min_evaluate_nodes=clients,
            min_available_nodes=clients,
        )
        self.keys = sorted(keys)
        self.rounds = rounds
        self.sketch_dim = sketch_dim
        self.traffic: list[RoundTraffic] = []
        self.client_accuracy: dict[int, float] = {}
        self.last_shared: list[str] = []

    def shared_keys(self, server_round: int) -> list[str]:
        raise NotImplementedError

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        shared = self.shared_keys(server_round)
        self.last_shared = shared
        subset = ArrayRecord({k: arrays[k] for k in shared})
        config["sketch-dim"] = self.sketch_dim
        messages = list(super().configure_train(server_round, subset, config, grid))
        traffic = RoundTraffic(server_round, len(shared))
        for message in messages:
            record = cast(ArrayRecord, message.content["arrays"])
            traffic.payload_down += payload_bytes(record)
            traffic.wire_down += record.count_bytes()
        self.traffic.append(traffic)
        self._global = arrays
        return messages

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """Sample-weighted average of the shared components (FedAvg); the reply's sketches are
        read by `after_round`, never averaged into the model."""
        valid = [r for r in replies if not r.has_error()]
        traffic = self.traffic[-1]
        for reply in valid:
            for name in ("arrays", "sketches"):
                if name in reply.content:
                    record = cast(ArrayRecord, reply.content[name])
                    traffic.payload_up += payload_bytes(record)
                    traffic.wire_up += record.count_bytes()
        merged = {k: v.numpy() for k, v in self._global.items()}
        if not valid:
            return _record(merged), None
        contents = [r.content for r in valid]
        weights = [float(c["metrics"][self.weighted_by_key]) for c in contents]  # type: ignore[arg-type]
        updates = [_numpy(c["arrays"]) for c in contents]
        if any(set(u) != set(self.last_shared) for u in updates):
            raise ValueError("fedpissa: a client replied with other components than were shared")
        if self.last_shared:
            merged.update(fedpissa.weighted_average(updates, weights))
        metrics = self.train_metrics_aggr_fn(contents, self.weighted_by_key)
        if "train-loss" in metrics:
            traffic.train_loss = float(metrics["train-loss"])  # type: ignore[arg-type]
        self.after_round(valid)
        return _record(merged), metrics

    def after_round(self, replies: list[Message]) -> None:
        """Hook for strategies that learn from a round (FedPissa's agreement)."""

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        if server_round != self.rounds:
            return []  # personalised accuracy is measured once, after the last round
        subset = ArrayRecord({k: arrays[k] for k in self.last_shared})
        return super().configure_evaluate(server_round, subset, config, grid)

    def aggregate_evaluate(
        self, server_round: int, replies: Iterable[Message]
    ) -> MetricRecord | None:
        replies = list(replies)
        for reply in replies:
            if not reply.has_error():
                metrics = reply.content["metrics"]
                self.client_accuracy[int(metrics["partition-id"])] = float(metrics["accuracy"])  # type: ignore[arg-type]
        return super().aggregate_evaluate(server_round, replies)

    def summary_dict(self) -> dict[str, Any]:
        accuracies = [self.client_accuracy[k] for k in sorted(self.client_accuracy)]
        return {
            "strategy": self.name,
            "rounds": [asdict(t) | {"payload": t.payload} for t in self.traffic],
            "payload_per_round": float(np.mean([t.payload for t in self.traffic]))
            if self.traffic
            else 0.0,
            "client_accuracy": {str(k): v for k, v in sorted(self.client_accuracy.items())},
            "personalised_accuracy": float(np.mean(accuracies)) if accuracies else float("nan"),
        }


class FedAvgLoRA(LoraStrategy):
    """FedIT / FedAvg-LoRA: every LoRA matrix is averaged every round."""

    name = "fedavg"

    def shared_keys(self, server_round: int) -> list[str]:
        return list(self.keys)


class FedSALoRA(LoraStrategy):
    """FedSA-LoRA: A matrices averaged, B matrices personal."""

    name = "fedsa"

    def shared_keys(self, server_round: int) -> list[str]:
        return [k for k in self.keys if fedpissa.is_lora_a(k)]


class FedPissaStrategy(LoraStrategy):
    """FedPissa (our reconstruction): the first round shares FedSA-LoRA's split (A matrices);
    then a component is shared exactly when every client's update sketch agrees with the
    others' weighted sum beyond the cosine that orthogonal updates' sketches exceed with
    probability `false_share` (`fedpissa.AgreementSelector`). `select=False` keeps the prior
    every round; `share_all=True` averages every component every round (FedAvg)."""

    name = "fedpissa"

    def __init__(
        self,
        keys: Iterable[str],
        rounds: int,
        clients: int,
        *,
        sketch_dim: int = 32,
        false_share: float = 0.05,
        select: bool = True,
        share_all: bool = False,
    ) -> None:
        selecting = select and not share_all
        super().__init__(keys, rounds, clients, sketch_dim=sketch_dim if selecting else 0)
        prior = set(self.keys) if share_all else fedpissa.fedsa_prior(self.keys)
        threshold = fedpissa.null_agreement_threshold(sketch_dim, false_share) if selecting else 1.0
        self.selector = fedpissa.AgreementSelector(prior, threshold)
        self.select = selecting

    def shared_keys(self, server_round: int) -> list[str]:
        return self.selector.shared()

    def after_round(self, replies: list[Message]) -> None:
        if not self.select:
            return
        sent = [r.content for r in replies if "sketches" in r.content]
        if len(sent) < 2:
            return
        sketches = [cast(ArrayRecord, c["sketches"]) for c in sent]
        weights = [float(c["metrics"][self.weighted_by_key]) for c in sent]  # type: ignore[arg-type]
        self.selector.update({k: [s[k].numpy() for s in sketches] for k in self.keys}, weights)

    def summary_dict(self) -> dict[str, Any]:
        summary = super().summary_dict()
        summary["agreement_threshold"] = self.selector.threshold
        summary["agreement_history"] = self.selector.history
        summary["shared_final"] = self.selector.shared()
        summary["shared_fraction"] = [t.shared / len(self.keys) for t in self.traffic]
        return summary


def make_strategy(settings: FedSettings, keys: Iterable[str]) -> LoraStrategy:
    """The strategy `settings.strategy` names."""
    if settings.strategy == "fedavg":
        return FedAvgLoRA(keys, settings.rounds, settings.clients)
    if settings.strategy == "fedsa":
        return FedSALoRA(keys, settings.rounds, settings.clients)
    return FedPissaStrategy(
        keys,
        settings.rounds,
        settings.clients,
        sketch_dim=settings.sketch_dim,
        false_share=settings.false_share,
        select=settings.select,
        share_all=settings.share_all,
    )


def server_main(
    grid: Grid, context: Context, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Run the strategy for `rounds` rounds; write the summary to `out` when set."""
    settings = FedSettings.from_config({**dict(context.run_config), **dict(overrides or {})})
    initial = runtime(settings).initial
    strategy = make_strategy(settings, initial)
    strategy.start(
        grid=grid,
        initial_arrays=_record(initial),
        num_rounds=settings.rounds,
        train_config=ConfigRecord({}),
        evaluate_config=ConfigRecord({}),
    )
    summary = strategy.summary_dict() | {"settings": settings.to_config()}
    if settings.out:
        Path(settings.out).parent.mkdir(parents=True, exist_ok=True)
        Path(settings.out).write_text(json.dumps(summary, indent=2))
    return summary


def make_apps(overrides: Mapping[str, Any] | None = None) -> tuple[ServerApp, ClientApp]:
    """A ServerApp and ClientApp whose settings are the run config plus `overrides` (the
    simulation engine's `run_simulation` passes no run config)."""
    extra = dict(overrides or {})
    server = ServerApp()
    client = ClientApp()

    @server.main()
    def _main(grid: Grid, context: Context) -> None:
        server_main(grid, context, extra)

    @client.train()
    def _train(msg: Message, context: Context) -> Message:
        return client_train(msg, context, extra)

    @client.evaluate()
    def _evaluate(msg: Message, context: Context) -> Message:
        return client_evaluate(msg, context, extra)

    return server, client


#: The apps `flwr run methods/adaptation/flower` loads (settings from the run config).
_APPS = make_apps()
server_app = _APPS[0]
client_app = _APPS[1]


class InProcessGrid(Grid):
    """A Flower `Grid` that hands each message to the ClientApp in this process, one `Context`
    per node kept across rounds: the whole app (strategies, messages, client state, byte
    counts) without Ray or a network, for tests and debugging. Node ids are 1..N and node `i`
    has `partition-id = i - 1`."""

    def __init__(self, client_app: ClientApp, nodes: int, run_config: Mapping[str, Any]) -> None:
        self.client_app = client_app
        self.contexts = {
            node: Context(
                run_id=0,
                node_id=node,
                node_config={"partition-id": node - 1, "num-partitions": nodes},
                state=RecordDict(),
                run_config=dict(run_config),
            )
            for node in range(1, nodes + 1)
        }
        self.sent: list[Message] = []
        self.replies: list[Message] = []
        self._run: Any = None

    def set_run(self, run: Any) -> None:
        self._run = run

    @property
    def run(self) -> Any:
        return self._run

    def create_message(
        self,
        content: RecordDict,
        message_type: str,
        dst_node_id: int,
        group_id: str,
        ttl: float | None = None,
    ) -> Message:
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self.contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        raise NotImplementedError("InProcessGrid only supports send_and_receive")

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        raise NotImplementedError("InProcessGrid only supports send_and_receive")

    def send_and_receive(
        self, messages: Iterable[Message], *, timeout: float | None = None
    ) -> Iterable[Message]:
        replies = []
        for message in messages:
            self.sent.append(message)
            context = self.contexts[message.metadata.dst_node_id]
            replies.append(self.client_app(message, context))
        self.replies.extend(replies)
        return replies


def run_in_process(settings: Mapping[str, Any]) -> tuple[dict[str, Any], InProcessGrid]:
    """Run the app with `settings` (run config keys) on an `InProcessGrid`; return the
    ServerApp's summary and the grid (its messages and the clients' contexts)."""
    from flwr.supercore.task_identity import TaskIdentity

    parsed = FedSettings.from_config(settings)
    _, client = make_apps()
    # what a SuperLink-started ServerApp process has: the identity its messages are sent under
    for name in ("_run_id", "_node_id", "_task_id"):
        if getattr(TaskIdentity, name) is None:
            setattr(TaskIdentity, name, 0)
    grid = InProcessGrid(client, parsed.clients, settings)
    context = Context(
        run_id=0, node_id=0, node_config={}, state=RecordDict(), run_config=dict(settings)
    )
    return server_main(grid, context), grid

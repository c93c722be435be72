"""`docket suite PRESET --executor ray [--ray-address HOST:PORT]`: the suite's units on Ray.

Each unit (task x model x stage, `docket.suite.unit_costs`) is one Ray task that runs the
unit's eval_set into the suite's log folder (a folder every node sees at the same path, or an
S3 store), the costliest first. A unit reserves one CPU, plus its `max_sandboxes` (1 unless
set) when its task runs bwrap or docker sandboxes on the node, at most a node's CPUs.

- Node loss: a unit is retried by Ray (`max_retries`, system failures only: a worker or node
  that died, not an error of the eval) on another node; the retry resumes from the log through
  Inspect's eval-set logic, so a sample finished before the loss is reused, never counted twice.
- Endpoint cap: every call a unit makes to a network model waits for a slot of that endpoint
  (`provider/name @ base URL`) in one async actor of the run, pinned to the driver's node
  (`NodeAffinitySchedulingStrategy`, no CPU): at most the plans' `max_connections` calls
  (Inspect's 10 when none is set; `--max-connections` sets it) are in flight to an endpoint
  across the whole cluster, what one process's Inspect allows. Slots are leases: a unit's
  attempt sends a heartbeat, and the slots of an attempt that stopped (its node lost) are freed
  when Ray starts its retry or after `LEASE_S` without a heartbeat.
- Progress: the driver shows units queued, running, done, failed and retried (a rich bar on a
  terminal, one plain line per event otherwise); the workers' output stays in Ray's logs, and
  Ray's own notices are shown as one printable line each.

The driver's `AWS_*`, `INSPECT_*`, `DOCKET_*`, `HF_*`, `*_API_KEY` and `*_BASE_URL` variables
reach the units (the job's `runtime_env`), so the nodes need docket installed, not the keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import re
import socket
import threading
import time
import uuid
import warnings
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docket.core.text import printable

if TYPE_CHECKING:
    from inspect_ai.model import Model
    from rich.console import Console

    from docket.suite import ModelSpec, TaskPlan

#: Ray retries of a unit whose worker or node died (Ray's default for tasks).
UNIT_RETRIES = 3
#: Seconds a unit attempt's endpoint slots outlive its last heartbeat.
LEASE_S = 10.0
#: Seconds between a unit attempt's heartbeats.
HEARTBEAT_S = 2.0
#: Calls in flight per endpoint when no plan sets `max_connections` (Inspect's default).
DEFAULT_CAP = 10
#: Seconds to wait for a TCP answer at `--ray-address`.
CONNECT_TIMEOUT_S = 5.0
#: Environment variables of the driver passed on to the units.
FORWARDED_PREFIXES = ("AWS_", "INSPECT_", "DOCKET_", "HF_")
FORWARDED_SUFFIXES = ("_API_KEY", "_BASE_URL")


class RayExecutorError(ValueError):
    """`--executor ray` cannot run: one line naming the flag and the fix."""


# --- the endpoint cap: pure asyncio, tested without Ray --------------------------------------


class EndpointSlots:
    """A counting semaphore of `cap` slots held by tokens of named holders (unit attempts).

    A token is granted at most once; a release of a token not yet granted withdraws it (or,
    when it arrives first, makes its acquire return False at once), so a caller that gave up
    waiting never leaks a slot. Waiters are served in arrival order.

    Args:
        cap: Most tokens held at once (at least 1).
    """

    def __init__(self, cap: int) -> None:
        self.cap = max(1, int(cap))
        self.held: dict[str, str] = {}  # token -> holder
        self.waiting: OrderedDict[str, tuple[str, asyncio.Future[bool]]] = OrderedDict()
        self.withdrawn: dict[str, str] = {}  # released before its acquire arrived -> holder
        #: Most tokens ever held at once.
        self.peak = 0

    async def acquire(self, holder: str, token: str) -> bool:
        """Wait for a slot.

        Args:
            holder: The unit attempt asking.
            token: This call's token (unique).

        Returns:
            True once the slot is held; False when the token was released or its holder dropped
            before a slot was free.
        """
        if self.withdrawn.pop(token, None) is not None:
            return False
        if len(self.held) < self.cap and not self.waiting:
            self._grant(token, holder)
            return True
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.waiting[token] = (holder, future)
        return await future

    def release(self, token: str, holder: str = "") -> None:
        """Free the token's slot, withdraw its wait, or (not seen yet) refuse its acquire.

        Args:
            token: The token of one call.
            holder: Its holder (so `drop` forgets a withdrawn token with its holder).
        """
        if self.held.pop(token, None) is not None:
            self._wake()
        elif token in self.waiting:
            _, future = self.waiting.pop(token)
            if not future.done():
                future.set_result(False)
        else:
            self.withdrawn[token] = holder

    def drop(self, holder: str) -> int:
        """Free every slot and wait of `holder` (an attempt that stopped).

        Args:
            holder: The unit attempt.

        Returns:
            How many held slots were freed.
        """
        freed = [t for t, h in self.held.items() if h == holder]
        for token in freed:
            del self.held[token]
        for token in [t for t, (h, _) in self.waiting.items() if h == holder]:
            _, future = self.waiting.pop(token)
            if not future.done():
                future.set_result(False)
        for token in [t for t, h in self.withdrawn.items() if h == holder]:
            del self.withdrawn[token]
        self._wake()
        return len(freed)

    def _grant(self, token: str, holder: str) -> None:
        self.held[token] = holder
        self.peak = max(self.peak, len(self.held))

    def _wake(self) -> None:
        while self.waiting and len(self.held) < self.cap:
            token, (holder, future) = self.waiting.popitem(last=False)
            if future.done():
                continue
            self._grant(token, holder)
            future.set_result(True)


class Coordinator:
    """The run's shared state on the driver's node: endpoint slots, leases and unit events.

    Run as one async Ray actor (`ray.remote(Coordinator)`); plain asyncio otherwise.

    Args:
        caps: Slots per endpoint key.
        lease_s: Seconds an attempt's slots outlive its last heartbeat.
        clock: Seconds, monotonic (tests pass their own).
    """

    def __init__(
        self,
        caps: dict[str, int],
        lease_s: float = LEASE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.slots = {endpoint: EndpointSlots(cap) for endpoint, cap in caps.items()}
        self.lease_s = lease_s
        self.clock = clock
        self.seen: dict[str, float] = {}  # holder -> last heartbeat
        self.attempts: dict[str, str] = {}  # unit -> its current holder
        self.events: list[tuple[str, str, str]] = []  # (unit, holder, node)
        self._reaper: asyncio.Task[None] | None = None

    def _touch(self, holder: str) -> None:
        self.seen[holder] = self.clock()
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_loop())

    async def _reap_loop(self) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 4)
            self.reap()

    def reap(self) -> list[str]:
        """Drop the holders whose last heartbeat is older than the lease.

        Returns:
            The holders dropped.
        """
        now = self.clock()
        expired = [h for h, seen in self.seen.items() if now - seen > self.lease_s]
        for holder in expired:
            self._drop(holder)
        return expired

    def _drop(self, holder: str) -> None:
        self.seen.pop(holder, None)
        for slots in self.slots.values():
            slots.drop(holder)

    async def started(self, unit: str, holder: str, node: str) -> None:
        """An attempt of `unit` started on `node`: a previous attempt's slots are freed (Ray
        retries a task only once its attempt has died)."""
        self._touch(holder)
        previous = self.attempts.get(unit)
        if previous is not None and previous != holder:
            self._drop(previous)
        self.attempts[unit] = holder
        self.events.append((unit, holder, node))

    async def acquire(self, endpoint: str, holder: str, token: str) -> bool:
        """Wait for a slot of `endpoint` (see `EndpointSlots.acquire`)."""
        self._touch(holder)
        return await self.slots[endpoint].acquire(holder, token)

    async def release(self, endpoint: str, holder: str, token: str) -> None:
        """Free or withdraw one call's slot."""
        self.slots[endpoint].release(token, holder)

    async def heartbeat(self, holder: str) -> None:
        """The attempt is alive: its lease starts again."""
        if holder in self.seen:
            self.seen[holder] = self.clock()

    async def end(self, holder: str) -> None:
        """The attempt finished: its slots are freed."""
        self._drop(holder)

    async def drain(self) -> list[tuple[str, str, str]]:
        """The unit starts seen since the last call."""
        events, self.events = self.events, []
        return events

    async def stats(self) -> dict[str, tuple[int, int, int]]:
        """(cap, held now, most held at once) per endpoint."""
        return {e: (s.cap, len(s.held), s.peak) for e, s in self.slots.items()}


# --- planning: units, endpoints, CPUs ---------------------------------------------------------


def endpoint_key(spec: ModelSpec) -> str:
    """`provider/name @ base URL` of a model (`@ default` for the provider's own).

    Args:
        spec: A model of the suite.

    Returns:
        The key its calls are capped under.
    """
    base_url = spec.base_url or spec.args.get("base_url") or "default"
    return f"{spec.model} @ {str(base_url).rstrip('/')}"


def endpoint_caps(plans: list[TaskPlan]) -> dict[str, int]:
    """The cap of every network endpoint the plans call: the smallest `max_connections` among
    the plans that call it, `DEFAULT_CAP` where none sets it.

    Args:
        plans: The suite's plans.

    Returns:
        Slots by endpoint key.
    """
    from docket import endpoints

    caps: dict[str, int] = {}
    for item in plans:
        given = item.eval_args.get("max_connections")
        cap = int(given) if isinstance(given, int) and given > 0 else DEFAULT_CAP
        for spec in [*item.models, *item.roles.values()]:
            if endpoints.is_network(spec.model):
                key = endpoint_key(spec)
                caps[key] = min(caps.get(key, cap), cap)
    return caps


@dataclass
class Unit:
    """One task x model x stage: its eval_set, its share of the cost and the CPUs it reserves."""

    key: tuple[int, int]
    item: TaskPlan
    cost: float
    cpus: float

    @property
    def label(self) -> str:
        """`task / stage / model`."""
        return f"{self.item.task} / {self.item.stage} / {self.item.models[0].label}"

    @property
    def name(self) -> str:
        """The unit's key as text (its Ray task name and the coordinator's key)."""
        return f"{self.key[0]}.{self.key[1]}"


def unit_cpus(item: TaskPlan, largest_node: float) -> float:
    """CPUs a unit of `item` reserves: 1, plus its `max_sandboxes` (1 unless set) when its task
    runs bwrap or docker sandboxes on the node, at most `largest_node`.

    Args:
        item: One plan.
        largest_node: The CPUs of the cluster's largest node.

    Returns:
        The CPUs (at least 1 when the node has one).
    """
    from docket.suite import task_sandbox

    cpus = 1.0
    if task_sandbox(item) in ("bwrap", "docker"):
        given = item.eval_args.get("max_sandboxes")
        cpus += float(given) if isinstance(given, int) and given > 0 else 1.0
    return max(min(cpus, largest_node), min(1.0, largest_node))


def plan_units(plans: list[TaskPlan], largest_node: float, by_stage: bool = False) -> list[Unit]:
    """Every unit of the plans, the costliest first (`docket.suite.unit_costs`).

    Args:
        plans: The suite's plans.
        largest_node: The CPUs of the cluster's largest node.
        by_stage: Keep the stages' order first (a time budget skips later stages).

    Returns:
        The units in submission order; a plan of several models shares its folder
        (`shared_dir`), as shards do.
    """
    from docket.suite import unit_costs

    costs = unit_costs(plans)
    stages = list(dict.fromkeys(p.stage for p in plans))
    units = [
        Unit(
            key=(i, j),
            item=replace(p, models=[m], shared_dir=p.shared_dir or len(p.models) > 1),
            cost=costs[(i, j)],
            cpus=unit_cpus(p, largest_node),
        )
        for i, p in enumerate(plans)
        for j, m in enumerate(p.models)
    ]
    rank = {s: (k if by_stage else 0) for k, s in enumerate(stages)}
    return sorted(units, key=lambda u: (rank[u.item.stage], -u.cost, u.key))


def forwarded_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The driver's variables the units get (`FORWARDED_PREFIXES`, `FORWARDED_SUFFIXES`).

    Args:
        environ: The environment (default: this process's).

    Returns:
        The variables, by name.
    """
    found = os.environ if environ is None else environ
    return {
        k: v
        for k, v in found.items()
        if k.startswith(FORWARDED_PREFIXES) or k.endswith(FORWARDED_SUFFIXES)
    }


# --- the flags ---------------------------------------------------------------------------------


def check_flags(
    executor: str, address: str | None, shard: str | None, emit_flow: str | None
) -> None:
    """`RayExecutorError` (one line) for flags that cannot go together or a malformed address.

    Args:
        executor: `--executor` (`local` or `ray`).
        address: `--ray-address`.
        shard: `--shard`.
        emit_flow: `--emit-flow`.
    """
    if executor != "ray":
        if address is not None:
            raise RayExecutorError("--ray-address needs --executor ray")
        return
    if shard is not None:
        raise RayExecutorError(
            "--executor ray runs every unit on the cluster itself; drop --shard (it is for "
            "separate processes)"
        )
    if emit_flow is not None:
        raise RayExecutorError(
            "--executor ray runs the suite; --emit-flow writes a spec and runs nothing: use one"
        )
    if importlib.util.find_spec("ray") is None:
        raise RayExecutorError("--executor ray needs ray (pip install 'docket[ray]')")
    if address is not None:
        check_reachable(address)


def parse_address(address: str) -> tuple[str, int]:
    """`HOST:PORT` of a Ray cluster's GCS (what `ray start --head` prints).

    Args:
        address: The flag's value.

    Returns:
        (host, port); `RayExecutorError` (one line) for anything else.
    """
    found = re.fullmatch(r"([A-Za-z0-9.\-]+):(\d{1,5})", address.strip())
    if found is None or not 0 < int(found.group(2)) < 65536:
        raise RayExecutorError(
            f"--ray-address {printable(address)!r}: expected HOST:PORT of the cluster's head "
            "(ray start --head prints it)"
        )
    return found.group(1), int(found.group(2))


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """`RayExecutorError` (one line) when nothing answers at `address`.

    Args:
        address: `HOST:PORT`.
        timeout: Seconds to wait for the TCP connection.
    """
    host, port = parse_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as ex:
        reason = ex.strerror or type(ex).__name__
        raise RayExecutorError(
            f"--ray-address {address}: nothing answers there ({reason}); start the head with "
            "`ray start --head` and pass the address it prints"
        ) from None


# --- the unit, on a node --------------------------------------------------------------------

#: The current attempt in this worker process (a Ray worker runs one task at a time): its
#: coordinator and holder id, read by the endpoint slots of every model it built.
_ATTEMPT: dict[str, Any] = {}


@contextlib.asynccontextmanager
async def _cluster_slot(endpoint: str) -> AsyncIterator[None]:
    if not _ATTEMPT:  # a model of an earlier unit, called outside one (nothing to cap)
        yield
        return
    coordinator, holder = _ATTEMPT["coordinator"], _ATTEMPT["holder"]
    token = uuid.uuid4().hex
    try:
        while not await coordinator.acquire.remote(endpoint, holder, token):
            token = uuid.uuid4().hex  # dropped (lease lapsed): ask again
        yield
    finally:
        coordinator.release.remote(endpoint, holder, token)


def _cap_endpoint(spec: ModelSpec, model: Model) -> None:
    from docket import endpoints
    from docket.core.inspect_private import wrap_connection_slot

    if endpoints.is_network(spec.model):
        key = endpoint_key(spec)
        wrap_connection_slot(model, lambda: _cluster_slot(key))


@contextlib.contextmanager
def _heartbeat(coordinator: Any, holder: str) -> Iterator[None]:
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            coordinator.heartbeat.remote(holder)

    thread = threading.Thread(target=beat, name="docket-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=HEARTBEAT_S + 1)


def run_unit(
    item: TaskPlan, name: str, coordinator: Any, marker: str | None
) -> tuple[bool, list[str]]:
    """Run one unit's eval_set on this node (the body of the unit's Ray task).

    Args:
        item: The unit's plan (one model).
        name: The unit's key (`Unit.name`).
        coordinator: The run's `Coordinator` actor.
        marker: A file the driver wrote in a local log folder (None for an S3 store): a node
            that cannot see it cannot write where the report reads.

    Returns:
        (success with no errored sample, problem lines), as `docket.suite.run_plan`.
    """
    import ray

    from docket.suite import run_plan

    holder = uuid.uuid4().hex
    node = ray.get_runtime_context().get_node_id()
    ray.get(coordinator.started.remote(name, holder, node))
    label = f"{item.task} / {item.stage} / {item.models[0].label}"
    if marker is not None and not Path(marker).exists():
        folder = Path(marker).parent
        return False, [
            f"{label}: node {node[:8]} does not see the log folder {folder}; give every node "
            "the same shared folder, or --log-dir s3://BUCKET/PREFIX"
        ]
    _ATTEMPT.update(coordinator=coordinator, holder=holder)
    try:
        with _heartbeat(coordinator, holder):
            return run_plan([item], None, display="none", hook=_cap_endpoint)
    finally:
        _ATTEMPT.clear()
        ray.get(coordinator.end.remote(holder))


# --- the driver ------------------------------------------------------------------------------


class Board:
    """The driver's view of the units: counts, a rich bar on a terminal, plain lines otherwise.

    Args:
        console: Where to show it.
        total: Units in the run.
        quiet: Show nothing (`--display none`).
    """

    def __init__(self, console: Console, total: int, quiet: bool = False) -> None:
        self.console = console
        self.total = total
        self.quiet = quiet
        self.started: dict[str, int] = {}  # unit -> attempts seen
        self.done = 0
        self.failed = 0
        self.finished: set[str] = set()
        self._progress: Any = None
        self._bar: Any = None

    @property
    def running(self) -> int:
        """Units started and not finished."""
        return len(set(self.started) - self.finished)

    @property
    def retried(self) -> int:
        """Units started more than once."""
        return sum(1 for n in self.started.values() if n > 1)

    def summary(self) -> str:
        """`3/10 done, 2 running, 0 failed, 1 retried`."""
        return (
            f"{self.done}/{self.total} done, {self.running} running, {self.failed} failed, "
            f"{self.retried} retried"
        )

    def __enter__(self) -> Board:
        if not self.quiet and self.console.is_terminal:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("ray units"),
                BarColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                console=self.console,
            )
            self._progress.start()
            self._bar = self._progress.add_task(self.summary(), total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def say(self, line: str) -> None:
        """One line above the bar (or on its own), control characters escaped."""
        if not self.quiet:
            self.console.print(printable(line), soft_wrap=True, markup=False, highlight=False)

    def _update(self) -> None:
        if self._progress is not None:
            self._progress.update(
                self._bar, completed=self.done + self.failed, description=self.summary()
            )

    def start(self, unit: Unit, node: str) -> None:
        """An attempt of `unit` started on `node`."""
        attempt = self.started.get(unit.name, 0) + 1
        self.started[unit.name] = attempt
        again = f" again (attempt {attempt})" if attempt > 1 else ""
        self._update()
        self.say(f"started{again}: {unit.label} on node {node[:8]}")

    def finish(self, unit: Unit, ok: bool, seconds: float, problems: list[str]) -> None:
        """`unit` ended: `ok` or with its problem lines."""
        self.finished.add(unit.name)
        if ok:
            self.done += 1
            line = f"done: {unit.label} ({seconds:.0f} s)"
        else:
            self.failed += 1
            line = f"failed: {unit.label}: {problems[0] if problems else 'failed'}"
        self._update()
        self.say(line)


@contextlib.contextmanager
def _ray_notices(say: Callable[[str], None]) -> Iterator[None]:
    """Ray's notices to the driver (a task retried, a node marked dead) as `say` lines.

    Ray prints them from a thread with terminal colours (`ray._private.worker`'s
    `print_to_stdstream`); here each becomes one line, its control characters escaped.
    """
    import ray._private.worker as ray_worker

    original = getattr(ray_worker, "print_to_stdstream", None)

    def shown(data: dict[str, Any], ignore_prefix: bool = False) -> None:
        for line in data.get("lines") or []:
            text = str(line).strip().splitlines()
            if text:
                say(f"ray: {text[0]}")

    if original is not None:
        ray_worker.print_to_stdstream = shown
    try:
        yield
    finally:
        if original is not None:
            ray_worker.print_to_stdstream = original


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[list[str]]:
    """File descriptor 2 into a temporary file while Ray connects (its C++ client writes its
    retries there); the lines it wrote are yielded's list once the block ends."""
    import tempfile

    captured: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.extend(sink.read().decode(errors="replace").splitlines())


def connect(address: str | None, env: dict[str, str]) -> None:
    """Connect this process to the cluster at `address` (None: `RAY_ADDRESS`, else a local
    Ray started here); `RayExecutorError` (one line) when it cannot.

    Args:
        address: `HOST:PORT` of the head.
        env: Variables the units get (the job's `runtime_env`).
    """
    import ray

    if address is not None:
        check_reachable(address)
    options: dict[str, Any] = {
        "log_to_driver": False,
        "logging_level": logging.ERROR,
        "runtime_env": {"env_vars": env} if env else None,
    }
    if address is None and not os.environ.get("RAY_ADDRESS"):
        options["include_dashboard"] = False
    try:
        with warnings.catch_warnings(), _quiet_stderr() as lines:
            warnings.simplefilter("ignore")
            ray.init(address=address, **options)
    except Exception as ex:  # noqa: BLE001 - Ray's errors are many; the user gets one line
        reason = str(ex).strip().splitlines()[0] if str(ex).strip() else type(ex).__name__
        where = f"--ray-address {address}" if address else "Ray"
        hint = next((line for line in lines if "Failed" in line), "")
        detail = f" ({hint.split('] ')[-1]})" if hint else ""
        raise RayExecutorError(printable(f"{where}: cannot connect: {reason}{detail}")) from None


def run_on_ray(
    plans: list[TaskPlan],
    budget_minutes: float | None,
    log_dir: Path | str,
    console: Console,
    address: str | None = None,
    quiet: bool = False,
) -> tuple[bool, list[str]]:
    """Run every unit of `plans` as a Ray task; (all succeeded with no errored sample, problem
    lines), as `docket.suite.run_plan`.

    Args:
        plans: The suite's plans.
        budget_minutes: After this many minutes, no unit of a later stage starts.
        log_dir: The suite's log folder (every node must see a local one at the same path) or
            S3 location.
        console: Where progress goes.
        address: `HOST:PORT` of the head (None: `RAY_ADDRESS`, else a local Ray).
        quiet: No progress lines.

    Returns:
        Whether every unit succeeded with no errored sample, and the problem lines; a unit lost
        after `UNIT_RETRIES` retries is one line.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from docket.core import logstore

    connect(address, forwarded_env())
    marker: Path | None = None
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        largest = max((float(n.get("Resources", {}).get("CPU", 0)) for n in nodes), default=1.0)
        units = plan_units(plans, largest, by_stage=budget_minutes is not None)
        if not logstore.is_remote(log_dir):
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            marker = Path(log_dir) / f".docket-ray-{uuid.uuid4().hex}"
            marker.write_text("docket suite --executor ray: every node must see this folder\n")
        caps = endpoint_caps(plans)
        here = ray.get_runtime_context().get_node_id()
        coordinator = (
            ray.remote(Coordinator)
            .options(
                num_cpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
            )
            .remote(caps)
        )
        task = ray.remote(run_unit)
        board = Board(console, len(units), quiet)
        cpus = sum(float(n.get("Resources", {}).get("CPU", 0)) for n in nodes)
        board.say(
            f"ray: {len(units)} units on {len(nodes)} nodes ({cpus:g} CPUs); "
            + (
                "calls in flight per endpoint: "
                + ", ".join(f"{k} {v}" for k, v in sorted(caps.items()))
                if caps
                else "no network endpoint"
            )
        )
        with board, _ray_notices(board.say):
            ok, problems = _drive(units, task, coordinator, board, budget_minutes, marker)
        board.say(f"ray: {board.summary()}")
        return ok, problems
    finally:
        if marker is not None:
            marker.unlink(missing_ok=True)
        ray.shutdown()


def _drive(
    units: list[Unit],
    task: Any,
    coordinator: Any,
    board: Board,
    budget_minutes: float | None,
    marker: Path | None,
) -> tuple[bool, list[str]]:
    """Submit the units (no more at once than the cluster has CPUs, so a time budget can stop
    later stages), follow their starts and results."""
    import ray
    from ray.exceptions import GetTimeoutError, RayError

    started_at = time.monotonic()
    first_stage = units[0].item.stage if units else ""
    by_name = {u.name: u for u in units}
    pending = list(units)
    running: dict[Any, tuple[Unit, float]] = {}
    ok, problems = True, []
    while pending or running:
        window = max(1, int(ray.cluster_resources().get("CPU", 1)))
        while pending and len(running) < window:
            unit = pending.pop(0)
            elapsed = (time.monotonic() - started_at) / 60
            late = unit.item.stage != first_stage
            if budget_minutes is not None and late and elapsed > budget_minutes:
                problems.append(f"{unit.label}: skipped, time budget spent")
                continue
            ref = task.options(
                num_cpus=unit.cpus,
                max_retries=UNIT_RETRIES,
                retry_exceptions=False,
                name=f"docket-unit-{unit.name}",
            ).remote(unit.item, unit.name, coordinator, str(marker) if marker else None)
            running[ref] = (unit, time.monotonic())
        ready, _ = (
            ray.wait(list(running), num_returns=len(running), timeout=0.5) if running else ([], [])
        )
        try:
            for name, _holder, node in ray.get(coordinator.drain.remote(), timeout=10):
                board.start(by_name[name], node)
        except GetTimeoutError:
            pass
        for ref in ready:
            unit, since = running.pop(ref)
            try:
                unit_ok, lines = ray.get(ref)
            except RayError as ex:
                unit_ok, lines = False, [printable(f"{unit.label}: {unit_error(ex)}")]
            problems.extend(lines)
            ok &= unit_ok
            board.finish(unit, unit_ok, time.monotonic() - since, lines)
    return ok, problems


def unit_error(error: BaseException) -> str:
    """One line for a unit Ray could not finish: the unit's own exception (it raised), or the
    system failure that outlived every retry (its worker or node lost each time).

    Args:
        error: What `ray.get` raised.

    Returns:
        `raised NAME: first line`, or `lost after N retries: NAME: first line`.
    """
    from ray.exceptions import RayTaskError

    cause = error.cause if isinstance(error, RayTaskError) else None
    shown = cause if isinstance(cause, BaseException) else error
    text = str(shown).strip()
    first = text.splitlines()[0] if text else ""
    if cause is not None:
        return f"raised {type(shown).__name__}: {first}"
    return f"lost after {UNIT_RETRIES} retries: {type(shown).__name__}: {first}"

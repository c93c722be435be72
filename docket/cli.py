"""The `docket` command: what docket registers, suite runs, leaderboard reports, regression gates,
new benchmarks.

Exit codes: 0 ok (regress: every row passed); 1 unreadable logs (report) or a shown regression
(regress) or a failed eval (suite) or an errored sample or unfinished run (check); 2 bad input:
a missing or empty log directory, a bad flag or file, runs that cannot be compared, or (regress)
a row the data cannot decide, or (new) a refused benchmark name.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import docket
from docket.core.text import printable

if TYPE_CHECKING:
    from docket.reports.trust import LogWarning
    from docket.suite import TaskPlan

EXIT_BAD_INPUT = 2


def _error(console: Console, message: object) -> int:
    console.print(f"[red]error:[/red] {escape(printable(message))}", soft_wrap=True)
    return EXIT_BAD_INPUT


def _store_error(console: Console, location: str, write: bool = False) -> int | None:
    """Exit 2 with one line when `location` is a log store that cannot be used (the preflight
    of `docket.core.logstore`), None when it can (or is a local folder)."""
    from docket.core.logstore import store_problem

    problem = store_problem(location, write=write)
    return _error(console, problem) if problem else None


def _warn_logs(warnings: list[LogWarning]) -> None:
    """One `warning:` line on stderr per log left out or in doubt (`docket.reports.trust`)."""
    stderr = Console(stderr=True)
    for warning in warnings:
        stderr.print(f"warning: {printable(warning)}", soft_wrap=True, markup=False)


def _first_doc_line(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


def _list(console: Console) -> int:
    from docket import _models as models
    from docket import _registry as registry
    from docket.agents.scripted.policy import load_policies
    from docket.benchmarks.presets import listed_tasks, preset_names

    listed = listed_tasks()
    if not console.is_terminal:  # pipes and CI logs: full names, no 80-column squeeze
        console = Console(width=max(console.width, 200))
    tasks = Table(title="tasks (inspect eval docket/<task>)")
    for column in ("task", "version", "benchmark"):
        tasks.add_column(column, no_wrap=True)
    tasks.add_column("description")
    for name in registry.REGISTERED["task"]:
        entry = listed.get(name, {})
        function = getattr(registry, name.split("/", 1)[1], None)
        tasks.add_row(
            name,
            str(entry.get("version", "?")),
            str(entry.get("benchmark", "?")),
            _first_doc_line(function),
        )
    console.print(tasks)
    console.print(_roles_table(listed))
    other = Table(title="model providers, sandboxes, presets")
    other.add_column("kind", no_wrap=True)
    other.add_column("name", no_wrap=True)
    other.add_column("what")
    for kind in models.BACKENDS:
        other.add_row("model", f"docket/{kind}", _first_doc_line(models.backend_class(kind)))
    for name in registry.REGISTERED["sandboxenv"]:
        other.add_row("sandbox", name, "-T sandbox=" + name.split("/", 1)[1])
    for name in preset_names():
        other.add_row("suite preset", name, f"docket suite {name}")
    console.print(other)
    policies = Table(title="scripted policies (--model docket/scripted -M policy=NAME)")
    policies.add_column("policy")
    policies.add_column("args")
    policies.add_column("what")
    for spec in load_policies().values():
        policies.add_row(spec.name, ", ".join(spec.args) or "-", spec.doc)
    console.print(policies)
    console.print(_methods_table())
    return 0


def _roles_table(listed: dict[str, dict[str, Any]]) -> Table:
    """The model roles of each task (listing.yaml): required or optional, and what each does."""
    from docket.bindings import role_help, when_text

    table = Table(title="model roles (inspect eval ... --model-role ROLE=provider/model)")
    for column in ("task", "role", "needed"):
        table.add_column(column, no_wrap=True)
    table.add_column("what it does")
    for name, entry in listed.items():
        helps = role_help(name)
        required = [str(r) for r in entry.get("roles") or []]
        optional = [str(r) for r in entry.get("optional_roles") or []]
        for role in [*required, *optional]:
            when = when_text(name, role)
            needed = "required" if role in required else "optional"
            if role not in required and when:
                needed += f", used with {when}"
            table.add_row(name, role, needed, helps.get(role, ""))
    return table


def _methods_table() -> Table | str:
    """The `docket/local -M method=` plugins with each knob's default and help, as their
    settings dataclasses declare them; one line when the methods extra is not installed."""
    try:
        from docket.methods.local.registry import find_plugin, plugin_names
        from docket.methods.local.settings import knob_fields

        plugins = [find_plugin(name) for name in plugin_names()]
    except ImportError as error:
        return f"docket/local methods: install docket[methods] to list them ({error.name} missing)"
    table = Table(title="docket/local methods (-M method=NAME, then its -M knobs)")
    for column in ("method", "knob", "default"):
        table.add_column(column, no_wrap=True)
    table.add_column("what")
    for plugin in plugins:
        if plugin is None:
            continue
        table.add_row(plugin.name, "", "", plugin.description)
        for found in knob_fields(plugin.settings):
            table.add_row("", found.name, repr(found.default), str(found.metadata["help"]))
    return table


def _serve(console: Console, out: Path, port: int) -> int:
    from docket.reports.serve import make_server, url_of

    server = make_server(out, port)
    console.print(
        f"Serving {out} at {url_of(server)} (Ctrl-C stops). The log viewer bundle needs a web "
        "server: browsers block its log requests from file:// pages.",
        soft_wrap=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _report(console: Console, args: argparse.Namespace) -> int:
    from docket.core.headline import HeadlineError
    from docket.core.logstore import LogStoreError
    from docket.reports.headline import parse_flags
    from docket.reports.leaderboard import ReportOptions, build_report, print_summary
    from docket.reports.overrides import OverrideError
    from docket.reports.prices import PriceError
    from docket.reports.regress import BaselineError

    stop = _store_error(console, args.log_dir)
    if stop is not None:
        return stop
    try:
        options = ReportOptions(
            headline_flags=parse_flags(args.headline),
            overrides=args.overrides,
            prices=args.prices,
            history=args.history,
            baseline=args.baseline,
            bundle=args.bundle or args.serve,
            max_errors=args.max_errors,
        )
        files = build_report(args.log_dir, args.out, options=options)
    except (
        FileNotFoundError,
        RuntimeError,
        HeadlineError,
        OverrideError,
        PriceError,
        BaselineError,
        LogStoreError,
    ) as ex:
        return _error(console, ex)
    print_summary(console, files.data)
    _warn_logs(files.warnings)
    for error in files.errors:
        _error(console, error)
    console.print(f"Markdown: {files.markdown}\nJSON: {files.json}", soft_wrap=True)
    if files.bundle is not None:
        console.print(f"Log viewer bundle: {files.bundle / 'index.html'}", soft_wrap=True)
    if files.baseline_exit:
        console.print(f"Against the baseline: exit {files.baseline_exit} (see the report)")
    console.print(f"HTML: {files.html}", soft_wrap=True)
    code = 1 if files.errors else 0
    if args.serve:
        _serve(console, Path(args.out), args.port)
    return code


def _regress(console: Console, args: argparse.Namespace) -> int:
    from docket.core.headline import HeadlineError
    from docket.core.logstore import LogStoreError
    from docket.reports import regress
    from docket.reports.headline import parse_flags
    from docket.reports.logs import load_logs
    from docket.reports.runs import build_runs

    stop = _store_error(console, args.logs)
    if stop is not None:
        return stop
    try:
        flags = parse_flags(args.headline)
        loaded = load_logs(args.logs)
    except (FileNotFoundError, HeadlineError, LogStoreError) as ex:
        return _error(console, ex)
    if loaded.files == 0:
        return _error(console, f"{args.logs}: no Inspect logs (*.eval or Inspect-named *.json)")
    runs = build_runs(loaded, flags)
    _warn_logs(loaded.warnings)
    if args.write_baseline:
        for error in loaded.errors:
            _error(console, error)
        if loaded.errors:
            console.print("[red]baseline not written: fix or remove the unreadable logs[/red]")
            return EXIT_BAD_INPUT
        for line in regress.left_out(runs):
            console.print(f"left out: {printable(line)}", soft_wrap=True, markup=False)
        regress.print_errored(console, runs, args.max_errors)
        if regress.errored_count(runs) > args.max_errors:
            return _error(
                console,
                f"baseline not written: {regress.errored_count(runs)} errored samples exceed "
                f"--max-errors {args.max_errors} (rerun them, or raise --max-errors)",
            )
        if not any(run.scored for run in runs):
            return _error(console, f"{args.logs}: no scored runs; baseline not written")
        count = regress.write_baseline(runs, args.baseline)
        console.print(
            f"Baseline with {count} entries (of {len(runs)} runs) written to "
            f"{Path(args.baseline).resolve()}",
            soft_wrap=True,
        )
        return regress.EXIT_OK
    try:
        baseline = regress.read_baseline_file(args.baseline)
    except regress.BaselineError as ex:
        return _error(console, ex)
    if baseline.assumed:
        console.print(baseline.assumed, soft_wrap=True, markup=False)
    comparisons = regress.compare(
        baseline.entries,
        runs,
        tolerance=args.tolerance,
        alpha=args.alpha,
        min_coverage=args.min_coverage,
        headline_flags=flags,
    )
    regress.print_comparisons(console, comparisons, loaded.errors)
    regress.print_errored(console, runs, args.max_errors)
    return regress.exit_code(
        comparisons,
        loaded.errors,
        regress.errored_count(runs),
        args.max_errors,
        regress.blocking_warnings(loaded.warnings),
    )


def _power(console: Console, args: argparse.Namespace) -> int:
    from docket.core.headline import HeadlineError
    from docket.core.logstore import LogStoreError
    from docket.reports import power, regress
    from docket.reports.headline import parse_flags
    from docket.reports.logs import load_logs
    from docket.reports.runs import build_runs

    try:
        if args.baseline:
            baseline = regress.read_baseline_file(args.baseline)
            entries, source = baseline.entries, args.baseline
            if baseline.assumed:
                console.print(baseline.assumed, soft_wrap=True, markup=False)
        else:
            stop = _store_error(console, args.logs)
            if stop is not None:
                return stop
            loaded = load_logs(args.logs)
            if loaded.files == 0:
                return _error(
                    console, f"{args.logs}: no Inspect logs (*.eval or Inspect-named *.json)"
                )
            for error in loaded.errors:
                _error(console, error)
            runs = build_runs(loaded, parse_flags(args.headline))
            _warn_logs(loaded.warnings)
            entries = [regress.baseline_entry(run) for run in runs if run.scored]
            source = args.logs
    except (FileNotFoundError, HeadlineError, regress.BaselineError, LogStoreError) as ex:
        return _error(console, ex)
    if not entries:
        return _error(console, f"{source}: no scored rows")
    drop = args.drop if args.drop is not None else args.tolerance
    rows = [power.entry_power(entry, args.alpha, drop) for entry in entries]
    table = Table(title=f"docket power (alpha {args.alpha:g}, power {power.POWER:g})")
    for column in ("task", "model", "kind", "n", "clusters", "detectable drop", f"n for {drop:g}"):
        table.add_column(column)
    for row in rows:
        clusters = f"{row.clusters} (deff {row.deff:.2f})" if row.cluster_field else "–"
        table.add_row(
            escape(printable(row.task)),
            escape(printable(row.model)),
            row.kind,
            str(row.n),
            clusters,
            f"{row.detectable:.4f}",
            str(row.needed) if row.needed is not None else f"> {power.MAX_N}",
        )
    if not console.is_terminal:
        console = Console(width=max(console.width, 160))
    console.print(table)
    for line in power.power_lines(rows, args.tolerance, args.alpha):
        console.print(printable(line), soft_wrap=True, markup=False)
    return 0


def _generate(console: Console, args: argparse.Namespace) -> int:
    import importlib

    from docket.benchmarks.presets import listings
    from docket.core.splits import secret_seed, write_manifest

    found = listings()
    able = sorted(name for name, listing in found.items() if listing.get("generate"))
    spec = found.get(args.benchmark, {}).get("generate")
    if not spec:
        return _error(
            console, f"{args.benchmark}: no split generator; one of: {', '.join(able) or 'none'}"
        )
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        return _error(console, f"{out}: exists and is not empty; choose a new --out")
    try:
        seed = secret_seed(args.seed)
    except ValueError as ex:
        return _error(console, ex)
    if args.size is not None and args.size < 1:
        return _error(console, "--size must be at least 1")
    module, _, function = str(spec).partition(":")
    generator = getattr(importlib.import_module(module), function)
    out.mkdir(parents=True, exist_ok=True)
    try:
        generator(seed=seed, out=out, size=args.size)
    except (ValueError, OSError) as ex:
        return _error(console, f"{args.benchmark}: the split was not written: {ex}")
    sha256 = write_manifest(out, args.benchmark)
    console.print(f"{args.benchmark}: split {sha256[:12]} written to {out.resolve()}")
    console.print(f"Run it with -T data={out.resolve()} (the seed is not stored: keep it secret)")
    return 0


def _new(console: Console, args: argparse.Namespace) -> int:
    from docket.scaffold import ScaffoldError, new_benchmark

    root = Path(args.dir)
    try:
        written = new_benchmark(args.name, root)
    except (ScaffoldError, OSError) as ex:
        return _error(console, ex)
    for path in written:
        console.print(f"wrote {path.relative_to(root).as_posix()}", soft_wrap=True)
    console.print(
        f"docket/{args.name} is registered (its listing.yaml); run its test: pytest -q "
        f"tests/benchmarks/{args.name}",
        soft_wrap=True,
    )
    return 0


def _check(console: Console, log_dir: str) -> int:
    from docket.check import check
    from docket.core.logstore import is_remote

    stop = _store_error(console, log_dir)
    if stop is not None:
        return stop
    if not is_remote(log_dir) and not Path(log_dir).is_dir():
        return _error(console, f"{log_dir}: no such directory")
    runs = check(log_dir)
    if not runs:
        return _error(console, f"{log_dir}: no Inspect logs in it")
    lines = [line for run in runs for line in run.lines()]
    for line in lines:
        console.print(f"[red]error:[/red] {escape(line)}", soft_wrap=True)
    samples = sum(run.samples for run in runs)
    if lines:
        console.print(f"{len(lines)} problem(s) in {len(runs)} run(s)", soft_wrap=True)
        return 1
    console.print(f"ok: {len(runs)} run(s) finished, {samples} samples, none errored")
    return 0


def _role_flags(values: list[str] | None) -> dict[str, str]:
    roles: dict[str, str] = {}
    for value in values or []:
        role, sep, model = value.partition("=")
        if not (sep and role and "/" in model):
            raise ValueError(f"--role {value!r}: expected ROLE=provider/model")
        roles[role] = model
    return roles


def _suite(console: Console, args: argparse.Namespace) -> int:
    from docket import suite
    from docket.core import logstore
    from docket.reports.leaderboard import build_report

    flags = {
        "max_tokens": args.max_tokens,
        "max_connections": args.max_connections,
        "attempt_timeout": args.attempt_timeout,
        "time_limit": args.time_limit,
    }
    eval_args = {key: value for key, value in flags.items() if value is not None}
    try:
        overrides = suite.Overrides(
            model_args=suite.parse_assignments("-M", args.model_arg),
            task_args=suite.parse_assignments("-T", args.task_arg),
            eval_args=eval_args,
            base_url=args.base_url,
        )
        shard = suite.Shard.parse(args.shard) if args.shard else None
        if args.executor == "ray" or args.ray_address is not None:
            from docket.ray_executor import check_flags

            check_flags(args.executor, args.ray_address, args.shard, args.emit_flow)
        preset = suite.load_preset(args.preset)
        location = args.log_dir or preset.log_dir
        logstore.check_scheme(location)
        log_dir: Path | str = (
            logstore.resolve(location) if logstore.is_remote(location) else Path(location).resolve()
        )
        plans = suite.plan(
            preset,
            log_dir,
            tasks=args.task,
            models=args.model,
            roles=_role_flags(args.role),
            limit=args.limit,
            stages=args.stage,
            overrides=overrides,
        )
    except (suite.PresetError, ValueError) as ex:
        return _error(console, ex)
    if shard is not None:
        console.print(suite.shard_line(plans, shard), soft_wrap=True, markup=False)
        plans = suite.shard_plans(plans, shard)
    for line in suite.describe(plans):
        console.print(line, soft_wrap=True, markup=False)
    warning = suite.limit_warning(preset, args.limit)
    if warning:
        console.print(f"[yellow]{escape(warning)}[/yellow]", soft_wrap=True)
    if args.dry_run:
        return 0
    if not plans:
        console.print(f"shard {shard}: no units to run", soft_wrap=True, markup=False)
        return 0
    if args.emit_flow:
        return _emit_flow(console, args, plans, str(log_dir), preset.name)
    problem = logstore.store_problem(log_dir, write=True)  # a dead store, like a dead endpoint
    stops = [problem] if problem else suite.check_prerequisites(plans)  # `docket doctor`'s lines
    if not stops:
        stops = suite.check_endpoints(plans)
    if not stops:  # agent tasks: does each network model that gets tools return tool calls?
        from docket.probe import check_tool_calls

        stops = check_tool_calls(plans)
    if not stops:
        stops = suite.fit_image_tasks(
            plans, lambda line: console.print(f"[yellow]{escape(line)}[/yellow]", soft_wrap=True)
        )
    if stops:
        for line in stops:
            _error(console, line)
        console.print("nothing ran", soft_wrap=True)
        return 1
    if args.executor == "ray":
        from docket.ray_executor import RayExecutorError, run_on_ray

        try:
            ok, problems = run_on_ray(
                plans,
                preset.budget_minutes,
                log_dir,
                console,
                address=args.ray_address,
                quiet=args.display == "none",
            )
        except RayExecutorError as ex:
            return _error(console, ex)
    else:
        ok, problems = suite.run_plan(plans, preset.budget_minutes, display=args.display)
    for line in problems:
        console.print(f"[yellow]{escape(printable(line))}[/yellow]", soft_wrap=True)
    if shard is not None:
        console.print(
            f"shard {shard} done; once every shard has finished: docket report {log_dir} -o OUT",
            soft_wrap=True,
            markup=False,
        )
        return 0 if ok else 1
    name = logstore.name(log_dir)
    default_out = Path.cwd() if logstore.is_remote(log_dir) else Path(log_dir).parent
    out = Path(args.out).resolve() if args.out else default_out / f"{name}-report"
    if not logstore.has_files(log_dir):
        _error(console, f"no task wrote a log to {log_dir}: nothing to report")
        return 1
    files = build_report(log_dir, out)
    for error in files.errors:
        _error(console, error)
    console.print(f"Logs: {log_dir}  (inspect view --log-dir {log_dir})", soft_wrap=True)
    console.print(f"Markdown: {files.markdown}", soft_wrap=True)
    console.print("Leaderboard HTML:")
    print(files.html)
    return 0 if ok and not files.errors else 1


def _emit_flow(
    console: Console, args: argparse.Namespace, plans: list[TaskPlan], log_dir: str, preset: str
) -> int:
    """`docket suite PRESET --emit-flow FILE`: the plan as an Inspect Flow spec; nothing runs."""
    from docket.suite import PresetError

    try:
        from docket import flow
    except ImportError as ex:
        return _error(console, f"--emit-flow needs {ex.name} (pip install 'docket[flow]')")
    try:
        spec = flow.flow_spec(plans, log_dir, preset)
        path = flow.write_spec(spec, Path(args.emit_flow), f"docket suite {args.preset}")
    except PresetError as ex:
        return _error(console, ex)
    console.print(f"Flow spec: {path}  (flow run {path})", soft_wrap=True, markup=False)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="docket", description=__doc__)
    parser.add_argument("--version", action="version", version=f"docket {docket.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="tasks (version, description), providers, sandboxes, presets")
    headline_help = (
        "TASK=METRIC:higher|lower (METRIC may be SCORE/METRIC): the headline of a task that "
        "does not declare one (repeatable)"
    )
    report = commands.add_parser(
        "report", help="HTML/Markdown/JSON leaderboard (exit 1 unreadable logs, 2 bad input)"
    )
    report.add_argument(
        "log_dir", metavar="LOGDIR", help="directory of Inspect logs, or s3://bucket/prefix"
    )
    report.add_argument("-o", "--out", required=True, help="output directory")
    report.add_argument("--bundle", action="store_true", help="also bundle the logs (inspect view)")
    report.add_argument(
        "--serve",
        action="store_true",
        help="bundle, then serve OUT on 127.0.0.1 (the viewer bundle is blank from file://)",
    )
    report.add_argument("--port", type=int, default=7575, help="port for --serve (7575)")
    report.add_argument("--headline", action="append", metavar="SPEC", help=headline_help)
    report.add_argument("--overrides", metavar="FILE", help="human score overrides (YAML/JSON)")
    report.add_argument("--prices", metavar="FILE", help="price table (default: shipped one)")
    report.add_argument("--history", metavar="DIR", help="directory of baseline files: trends")
    report.add_argument(
        "--baseline", metavar="FILE", help="add a regress section (flipped samples)"
    )
    report.add_argument(
        "--max-errors",
        type=int,
        default=0,
        metavar="N",
        help="with --baseline: errored samples allowed before its exit is 2 (0)",
    )
    gate = commands.add_parser(
        "regress",
        help="compare headlines with a baseline (exit 0 pass, 1 regression, 2 cannot decide or "
        "not comparable)",
    )
    gate.add_argument("--baseline", required=True, metavar="FILE", help="baseline JSON")
    gate.add_argument(
        "--logs", required=True, metavar="LOGDIR", help="directory of Inspect logs, or s3://..."
    )
    gate.add_argument(
        "--write-baseline", action="store_true", help="write FILE from LOGDIR instead of comparing"
    )
    gate.add_argument(
        "--tolerance",
        type=float,
        default=0.05,
        help="largest drop a pass allows (absolute): pass needs the drop's upper bound <= it, "
        "a regression a significant drop > it (0.05)",
    )
    gate.add_argument(
        "--alpha", type=float, default=0.05, help="one-sided level of both tests (0.05)"
    )
    gate.add_argument(
        "--min-coverage",
        type=float,
        default=0.95,
        help="share of the baseline's samples the run must cover, else exit 2 (0.95)",
    )
    gate.add_argument("--headline", action="append", metavar="SPEC", help=headline_help)
    gate.add_argument(
        "--max-errors",
        type=int,
        default=0,
        metavar="N",
        help="errored samples (no successful model call, or an error) allowed before exit 2 (0)",
    )
    power = commands.add_parser(
        "power",
        help="per task: the smallest drop a baseline's n can detect, and the n a drop needs",
    )
    source = power.add_mutually_exclusive_group(required=True)
    source.add_argument("--baseline", metavar="FILE", help="baseline JSON")
    source.add_argument("--logs", metavar="LOGDIR", help="directory of Inspect logs, or s3://...")
    power.add_argument("--tolerance", type=float, default=0.05, help="the gate's tolerance (0.05)")
    power.add_argument("--alpha", type=float, default=0.05, help="one-sided level (0.05)")
    power.add_argument("--drop", type=float, help="the drop whose n is wanted (the tolerance)")
    power.add_argument("--headline", action="append", metavar="SPEC", help=headline_help)
    suite = commands.add_parser(
        "suite",
        help="run every benchmark with a preset (offline, api, local, local-server, or a YAML "
        "file); exit 1 when an endpoint fails its probe call or a task has errored samples "
        "(named; re-run next time)",
    )
    suite.add_argument(
        "preset",
        metavar="PRESET",
        help="offline | api | local | local-server | path to a preset YAML",
    )
    suite.add_argument("--model", action="append", help="run these models instead (repeatable)")
    suite.add_argument("--role", action="append", help="ROLE=provider/model (repeatable)")
    suite.add_argument(
        "--task", action="append", help="only these tasks (repeatable; scsuff = docket/scsuff)"
    )
    suite.add_argument("--limit", type=int, help="samples per task (overrides the preset)")
    suite.add_argument("--stage", action="append", help="only these stages of the preset")
    suite.add_argument(
        "--log-dir",
        help="log directory or S3 store s3://bucket/prefix (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, "
        "AWS_SECRET_ACCESS_KEY; default: the preset's)",
    )
    suite.add_argument(
        "--shard",
        metavar="I/N",
        help="run the I-th of N parts of the plan's units (task x model x stage, balanced by "
        "expected cost); N processes with the same arguments write the log set one would",
    )
    suite.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: the eval_sets in this process; ray: each unit (task x model x stage) as "
        "a Ray task, retried on node loss, calls per endpoint capped at --max-connections "
        "across the cluster (pip install 'docket[ray]')",
    )
    suite.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="the Ray cluster's head (what `ray start --head` prints; default: RAY_ADDRESS, "
        "else a local Ray); the log folder must be one every node sees, or s3://",
    )
    suite.add_argument(
        "-o",
        "--out",
        help="report directory (default: LOGDIR-report; ./NAME-report for s3://.../NAME)",
    )
    suite.add_argument("--display", default="plain", help="Inspect display (plain, rich, none)")
    suite.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    suite.add_argument(
        "--emit-flow",
        metavar="FILE",
        help="write the plan as an Inspect Flow spec (.py with docket's preflight and "
        "errored-sample handling, or .yaml) and run nothing; then `flow run FILE`",
    )
    suite.add_argument(
        "-M",
        "--model-arg",
        action="append",
        metavar="[TASK:]KEY=VALUE",
        help="model arg of the models under test, every task or TASK's (repeatable)",
    )
    suite.add_argument(
        "-T",
        "--task-arg",
        action="append",
        metavar="[TASK:]KEY=VALUE",
        help="task arg, every task or TASK's; wins over the preset's (repeatable)",
    )
    suite.add_argument("--max-tokens", type=int, help="max_tokens of every model and role")
    suite.add_argument("--max-connections", type=int, help="max_connections of every task")
    suite.add_argument(
        "--attempt-timeout",
        type=int,
        metavar="S",
        help="seconds one model call may take before it is abandoned and retried (overrides "
        "the preset's: api 120; a slow local server or CPU model needs more)",
    )
    suite.add_argument(
        "--time-limit",
        type=int,
        metavar="S",
        help="seconds each sample may run in all (overrides the preset's 600)",
    )
    suite.add_argument(
        "--base-url",
        help="base URL of the models under test and of the --role models (an openai/ model on "
        "a server other than OpenAI's uses chat completions; -M responses_api=true to not)",
    )
    doctor = commands.add_parser(
        "doctor", help="check what a run needs, one line per item with its fix (exit 1: cannot run)"
    )
    doctor.add_argument(
        "--sandbox", default="bwrap", choices=("bwrap", "docker", "k8s"), help="sandbox (bwrap)"
    )
    doctor.add_argument("--model", action="append", default=[], help="model to check (repeatable)")
    check = commands.add_parser(
        "check",
        help="exit 1 when a run in LOGDIR did not finish or a sample errored (for CI: "
        "inspect eval ... && docket check logs)",
    )
    check.add_argument(
        "log_dir", metavar="LOGDIR", help="directory of Inspect logs, or s3://bucket/prefix"
    )
    generate = commands.add_parser(
        "generate", help="write a private test split from a secret seed (run it with -T data=DIR)"
    )
    generate.add_argument("benchmark", metavar="BENCHMARK", help="benchmark folder, e.g. correct")
    generate.add_argument("--seed", required=True, help="secret seed (any string; not stored)")
    generate.add_argument("--out", required=True, help="new directory for the split")
    generate.add_argument("--size", type=int, help="items to generate (default: the shipped size)")
    new = commands.add_parser(
        "new",
        help="scaffold a benchmark: its folder, listing, README, reference policies and test "
        "(docs: Add a benchmark)",
    )
    new.add_argument("kind", choices=("benchmark",), help="what to scaffold: benchmark")
    new.add_argument("name", metavar="NAME", help="lowercase Python identifier, e.g. my_bench")
    new.add_argument(
        "--dir", default=".", metavar="ROOT", help="the docket checkout to write into (.)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `docket` console script.

    Args:
        argv: Command-line arguments without the program name (default: `sys.argv[1:]`).

    Returns:
        The exit code: 0 ok; 1 unreadable logs, a significant regression or a failed eval;
        2 bad input (see the module docstring).
    """
    parser = _parser()
    args = parser.parse_args(argv)
    console = Console()
    if args.command == "list":
        return _list(console)
    if args.command == "report":
        return _report(console, args)
    if args.command == "generate":
        return _generate(console, args)
    if args.command == "check":
        return _check(console, args.log_dir)
    if args.command == "new":
        return _new(console, args)
    if args.command == "doctor":
        from docket.doctor import doctor

        return doctor(args.sandbox, args.model)
    if args.command == "regress":
        if args.tolerance < 0 or not 0 < args.alpha < 1 or not 0 <= args.min_coverage <= 1:
            return _error(
                console, "--tolerance must be >= 0, --alpha in (0, 1), --min-coverage in [0, 1]"
            )
        if args.max_errors < 0:
            return _error(console, "--max-errors must be >= 0")
        return _regress(console, args)
    if args.command == "power":
        drop = args.tolerance if args.drop is None else args.drop
        if not args.tolerance > 0 or not 0 < args.alpha < 1 or not drop > 0:
            return _error(console, "--tolerance and --drop must be > 0, --alpha in (0, 1)")
        return _power(console, args)
    if args.command == "suite":
        for flag in ("limit", "max_tokens", "max_connections", "attempt_timeout", "time_limit"):
            value = getattr(args, flag)
            if value is not None and value < 1:
                return _error(console, f"--{flag.replace('_', '-')} must be at least 1")
        return _suite(console, args)
    parser.error(f"unknown command {args.command}")
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    raise SystemExit(main())

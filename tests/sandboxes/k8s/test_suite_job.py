"""`docket suite` shards as a Kubernetes Indexed Job (`sandboxes/k8s/suite_job.py`), checked
offline: there is no cluster here. Every manifest is read into the official `kubernetes`
client's model of its kind and written back unchanged (an unknown or misplaced field does not
survive), the Job's shape is asserted on the models, the Role is checked against what the
k8s sandbox's own code and Helm chart touch, and the agent image layer against the chart's
values schema."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from docket.sandboxes import k8s_values
from docket.sandboxes.k8s import suite_job
from docket.sandboxes.k8s.suite_job import EXAMPLE, JobSettings, check, main, render

k8s_sandbox = pytest.importorskip(
    "k8s_sandbox", reason="inspect-k8s-sandbox is not installed (pip install 'docket[k8s]')"
)
kubernetes = pytest.importorskip("kubernetes")
jsonschema = pytest.importorskip("jsonschema")

SANDBOX = Path(k8s_sandbox.__file__).parent
CHART = SANDBOX / "resources" / "helm" / "agent-env"


def _by_kind(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["kind"]: m for m in manifests}


def test_the_committed_manifests_are_the_renderers_example() -> None:
    committed = suite_job.EXAMPLE_YAML.read_text()
    assert committed == suite_job.render_yaml(EXAMPLE)  # regenerate: python -m ... (see file)
    assert list(yaml.safe_load_all(committed)) == render(EXAMPLE)


def test_every_manifest_survives_the_kubernetes_models() -> None:
    models = [check(m) for m in yaml.safe_load_all(suite_job.EXAMPLE_YAML.read_text())]
    assert [type(m).__name__ for m in models] == [
        "V1ServiceAccount",
        "V1Role",
        "V1RoleBinding",
        "V1ConfigMap",
        "V1Job",
    ]
    job = models[-1]
    assert (job.spec.completion_mode, job.spec.completions, job.spec.parallelism) == (
        "Indexed",
        4,
        4,
    )
    assert job.spec.backoff_limit_per_index == 1
    pod = job.spec.template.spec
    assert (pod.service_account_name, pod.restart_policy) == ("docket-runner", "Never")
    [container] = pod.containers
    assert container.command + container.args == [
        "docket",
        "suite",
        "api",
        "--shard",
        "$(JOB_COMPLETION_INDEX)/4",
        "--log-dir",
        "s3://docket-logs/runs/api",
        "-T",
        "sandbox=k8s",
        "--display",
        "plain",
    ]
    env = {e.name: e.value for e in container.env}
    assert env == {
        "INSPECT_SANDBOX_VALUES": "/etc/docket/values.yaml",
        "AWS_ENDPOINT_URL": "http://minio.storage.svc:9000",
    }
    # credentials by reference only: Secrets the cluster already has, no key in the manifests
    assert [s.secret_ref.name for s in container.env_from] == ["docket-s3", "docket-model-keys"]
    assert not any(m.kind == "Secret" for m in models)
    binding = models[2]
    assert binding.role_ref.name == models[1].metadata.name == "docket-runner"
    assert [(s.kind, s.name, s.namespace) for s in binding.subjects] == [
        ("ServiceAccount", "docket-runner", "docket")
    ]


@pytest.mark.parametrize("shards", [1, 7, 250])
def test_one_pod_per_shard(shards: int) -> None:
    settings = JobSettings(preset="api", shards=shards, image="r/docket:1", bucket="logs")
    job = check(_by_kind(render(settings))["Job"])
    assert job.spec.completion_mode == "Indexed"
    assert job.spec.completions == job.spec.parallelism == shards
    args = job.spec.template.spec.containers[0].args
    assert args[args.index("--shard") + 1] == f"$(JOB_COMPLETION_INDEX)/{shards}"
    assert args[args.index("--log-dir") + 1] == "s3://logs"  # no prefix: the bucket's root


def test_fields_the_kubernetes_api_does_not_have_are_rejected() -> None:
    job = _by_kind(render(EXAMPLE))["Job"]

    def broken(edit: Any) -> dict[str, Any]:
        copied = copy.deepcopy(job)
        edit(copied)
        return copied

    container = ("spec", "template", "spec", "containers", 0)

    def at(doc: dict[str, Any], path: tuple[str | int, ...]) -> Any:
        for key in path:
            doc = doc[key]  # type: ignore[index]
        return doc

    cases = {
        # a typo, a field one level off, a snake_case name: none is in the API
        "spec.template.spec.containers[0].envFrm": lambda d: at(d, container).update(envFrm=[]),
        "spec.template.completionMode": lambda d: d["spec"]["template"].update(
            completionMode="Indexed"
        ),
        "spec.completion_mode": lambda d: d["spec"].update(completion_mode="Indexed"),
    }
    for where, edit in cases.items():
        with pytest.raises(ValueError, match=re.escape(f"Job: {where} is not a field")):
            check(broken(edit))
    with pytest.raises(ValueError, match="V1JobSpec: completions: Input should be a valid int"):
        check(broken(lambda d: d["spec"].update(completions="four")))
    with pytest.raises(ValueError, match="V1Container: name"):
        check(broken(lambda d: at(d, container).pop("name")))
    with pytest.raises(ValueError, match="apiVersion 'batch/v2', expected batch/v1"):
        check(broken(lambda d: d.update(apiVersion="batch/v2")))
    with pytest.raises(ValueError, match="kind 'CronJob'"):
        check(broken(lambda d: d.update(kind="CronJob")))


def _chart_kinds() -> set[tuple[str, str]]:
    """(apiVersion, kind) of every object the agent-env chart's templates create."""
    found = set()
    for template in (CHART / "templates").glob("*.yaml"):
        text = template.read_text()
        found |= set(re.findall(r"^apiVersion: (\S+)\s*\nkind: (\w+)", text, re.M))
    return found


def _plural(kind: str) -> str:
    lower = kind.lower()
    return lower[:-1] + "ies" if lower.endswith("y") else lower + "s"


def test_the_role_allows_what_the_k8s_sandbox_and_its_chart_do() -> None:
    role = check(_by_kind(render(EXAMPLE))["Role"])
    allowed = {
        (group, resource, verb)
        for rule in role.rules
        for group in rule.api_groups
        for resource in rule.resources
        for verb in rule.verbs
    }
    assert all(verb in suite_job.VERBS for _, _, verb in allowed)  # no "*"
    manage = {"get", "list", "create", "update", "patch", "delete"}
    # Helm installs, upgrades and uninstalls the chart's objects and keeps releases in Secrets
    kinds = _chart_kinds()
    assert ("apps/v1", "StatefulSet") in kinds and ("cilium.io/v2", "CiliumNetworkPolicy") in kinds
    for api_version, kind in sorted(kinds) + [("v1", "Secret")]:
        group = api_version.rpartition("/")[0]
        for verb in manage:
            assert (group, _plural(kind), verb) in allowed, (kind, verb)
    # the sandbox's own API calls (read_namespaced_pod, connect_get_namespaced_pod_exec, ...)
    calls = set()
    for source in SANDBOX.rglob("*.py"):
        calls |= set(
            re.findall(r"\b(list|read|connect_get)_namespaced_(\w+?)\b", source.read_text())
        )
    assert ("connect_get", "pod_exec") in calls and ("list", "event") in calls
    for action, resource in calls:
        if action == "connect_get":  # an exec: POST (create) or a websocket GET
            plural = _plural(resource.split("_")[0]) + "/" + resource.split("_")[1]
            needed = {"create", "get"}
        else:
            plural, needed = _plural(resource), {"list" if action == "list" else "get"}
        for verb in needed:
            assert ("", plural, verb) in allowed, (action, resource)
    # and nothing outside the namespace: a Role, not a ClusterRole
    assert role.metadata.namespace == EXAMPLE.namespace


def test_the_agent_image_layer_passes_the_charts_schema() -> None:
    """The ConfigMap's values, layered last over docket's k8s-values.yaml (as the sandbox's
    INSPECT_SANDBOX_VALUES is), still pass the chart's values.schema.json and set the image."""

    def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for key, value in over.items():
            both = isinstance(value, dict) and isinstance(base.get(key), dict)
            out[key] = merge(base[key], value) if both else value
        return out

    configmap = _by_kind(render(EXAMPLE))["ConfigMap"]
    layer = yaml.safe_load(configmap["data"]["values.yaml"])
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    values = merge(merge(values, yaml.safe_load(Path(k8s_values()).read_text())), layer)
    jsonschema.validate(values, json.loads((CHART / "values.schema.json").read_text()))
    default = values["services"]["default"]
    assert default["image"] == EXAMPLE.sandbox_image
    assert default["securityContext"]["runAsNonRoot"] is True  # docket's shape is kept
    job = _by_kind(render(EXAMPLE))["Job"]["spec"]["template"]["spec"]
    [container] = job["containers"]
    values_file = {e["name"]: e.get("value") for e in container["env"]}["INSPECT_SANDBOX_VALUES"]
    assert f"{container['volumeMounts'][0]['mountPath']}/values.yaml" == values_file
    assert job["volumes"][0]["configMap"]["name"] == configmap["metadata"]["name"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"shards": 0}, "--shards 0: must be 1 to 100000"),
        ({"bucket": "Bad_Bucket"}, "--bucket 'Bad_Bucket': must be an S3 bucket name"),
        ({"image": "r/docket:1 --x"}, "--image 'r/docket:1 --x': must be an image reference"),
        ({"namespace": "Docket"}, "--namespace 'Docket': must be a DNS label"),
        ({"endpoint": "minio:9000"}, "--endpoint 'minio:9000': must be an http(s) URL"),
        ({"suite_args": ("$(HOME)",)}, "--suite-arg '$(HOME)': no '$'"),
        ({"prefix": "runs/a b"}, "--prefix 'runs/a b': must be an S3 key prefix"),
    ],
)
def test_a_bad_setting_is_one_line(change: dict[str, Any], message: str) -> None:
    settings = JobSettings(**{**EXAMPLE.__dict__, **change})
    with pytest.raises(ValueError, match=re.escape(message)):
        render(settings)


def test_the_command_prints_checked_manifests_or_one_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["--preset", "local", "--shards", "3", "--image", "r/docket:1", "--bucket", "logs"]
    assert main([*base, "--prefix", "runs/local", "--suite-arg=--limit=10"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    settings = JobSettings(
        preset="local",
        shards=3,
        image="r/docket:1",
        bucket="logs",
        prefix="runs/local",
        suite_args=("--limit=10",),
    )
    assert docs == render(settings)
    assert docs[-1]["metadata"]["name"] == "docket-local"
    assert docs[-1]["spec"]["template"]["spec"]["containers"][0]["args"][-1] == "--limit=10"
    assert main([*base, "--shards", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "error: --shards 0: must be 1 to 100000\n"

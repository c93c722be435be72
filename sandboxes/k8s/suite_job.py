"""`docket suite PRESET` as a Kubernetes Indexed Job: one pod per shard, logs to S3.

`render(JobSettings(...))` gives the manifests, in apply order:

- ServiceAccount `docket-runner` and a Role/RoleBinding with what the `k8s` sandbox
  (inspect-k8s-sandbox) does in the namespace: Helm keeps its release records in Secrets and
  installs the agent-env chart (ConfigMaps, PVCs, ServiceAccounts, Services, a StatefulSet,
  CiliumNetworkPolicies); the sandbox reads pods and their events and execs into them.
- ConfigMap `docket-sandbox-values`: the agent image the cluster pulls, layered over docket's
  `images/default/k8s-values.yaml` through the sandbox's `INSPECT_SANDBOX_VALUES`.
- The Job: `completionMode: Indexed`, `completions` = `parallelism` = the shard count; pod I runs
  `docket suite PRESET --shard $(JOB_COMPLETION_INDEX)/N --log-dir s3://BUCKET/PREFIX -T
  sandbox=k8s` (Kubernetes expands `$(JOB_COMPLETION_INDEX)`, the index the Job controller
  gives each pod). Credentials come from Secrets by reference (`envFrom`); the S3 endpoint (for
  a store other than AWS) is `AWS_ENDPOINT_URL`. A failed shard is retried once
  (`backoffLimitPerIndex`) and resumes from its logs in the store.

`check(manifest)` reads each manifest into the official `kubernetes` client's model for its kind
and writes it back: a field the API does not have (a typo, a field in the wrong place) does not
survive the round trip and is one line. No cluster is needed, or used.

    python -m docket.sandboxes.k8s.suite_job --preset api --shards 8 \\
        --image REGISTRY/docket:0.1 --bucket docket-logs --prefix runs/api \\
        --sandbox-image REGISTRY/docket-sandbox-default:0.1 > job.yaml
    kubectl apply -f job.yaml
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

#: The example the committed `suite-job.yaml` is rendered from (a test keeps them equal).
EXAMPLE_YAML = Path(__file__).with_name("suite-job.yaml")

RUNNER = "docket-runner"
VALUES_CONFIGMAP = "docket-sandbox-values"
VALUES_DIR = "/etc/docket"
#: The k8s sandbox's variable naming an operator's values file, layered over a task's.
SANDBOX_VALUES_ENV = "INSPECT_SANDBOX_VALUES"
#: docket's default agent image (`images/default/k8s-values.yaml`).
DEFAULT_SANDBOX_IMAGE = "docket-sandbox-default:0.1"
#: Kubernetes' ceiling for an Indexed Job's completions.
MAX_SHARDS = 100_000

#: Every verb a Role rule may name.
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
_MANAGE = ["get", "list", "watch", "create", "update", "patch", "delete"]
_READ = ["get", "list", "watch"]

#: The Role's rules: (API group, resources, verbs, why).
RULES: tuple[tuple[str, tuple[str, ...], list[str], str], ...] = (
    ("", ("secrets",), _MANAGE, "Helm's release records (its default storage driver)"),
    (
        "",
        ("configmaps", "persistentvolumeclaims", "serviceaccounts", "services"),
        _MANAGE,
        "the agent-env chart's objects",
    ),
    ("apps", ("statefulsets",), _MANAGE, "the agent-env chart's StatefulSet"),
    ("cilium.io", ("ciliumnetworkpolicies",), _MANAGE, "the chart's network policies"),
    ("", ("pods",), _READ, "the sandbox waits for its pods and reads them"),
    ("", ("pods/exec",), ["create", "get"], "every sandbox exec"),
    ("", ("events",), _READ, "the sandbox's diagnostics of a pod that fails"),
)

#: Kind -> (apiVersion, the `kubernetes` client's model).
MODELS = {
    "ServiceAccount": ("v1", "V1ServiceAccount"),
    "Role": ("rbac.authorization.k8s.io/v1", "V1Role"),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", "V1RoleBinding"),
    "ConfigMap": ("v1", "V1ConfigMap"),
    "Job": ("batch/v1", "V1Job"),
}

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_PREFIX = re.compile(r"^[A-Za-z0-9!_.*'()/-]*$")
_PRESET = re.compile(r"^[A-Za-z0-9_./-]+$")
_IMAGE = re.compile(
    r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$"
)
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|M|G|T)?$")
_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~/-]*)?$")


@dataclass(frozen=True)
class JobSettings:
    """What the Job runs, where its logs go and which Secrets it reads.

    Attributes:
        preset: The suite preset (`api`, ...) or a preset file's path inside the image.
        shards: Pods, one shard each (`docket suite --shard I/N`).
        image: The runner image: docket with its `k8s` extra, and helm >= 3.13 on PATH.
        bucket: The S3 bucket of the log store.
        prefix: The run's folder in the bucket (`runs/api`; empty: the bucket's root).
        endpoint: The S3 endpoint of a store other than AWS (MinIO, Ceph, ...).
        s3_secret: A Secret with `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (and
            optionally `AWS_REGION`), passed to the runner as its environment.
        model_secrets: Secrets with the model providers' keys (`OPENAI_API_KEY`, ...).
        namespace: The namespace of the Job and of the agents' sandboxes.
        sandbox_image: The agent image as the cluster pulls it (pushed from
            `docket-sandbox-default:0.1`).
        name: The Job's name (default `docket-<preset>`).
        cpu: The runner's CPU request.
        memory: The runner's memory request and limit.
        suite_args: More `docket suite` arguments (`--limit`, `--model`, ...).
    """

    preset: str
    shards: int
    image: str
    bucket: str
    prefix: str = ""
    endpoint: str | None = None
    s3_secret: str = "docket-s3"
    model_secrets: tuple[str, ...] = ()
    namespace: str = "docket"
    sandbox_image: str = DEFAULT_SANDBOX_IMAGE
    name: str | None = None
    cpu: str = "1"
    memory: str = "2Gi"
    suite_args: tuple[str, ...] = field(default_factory=tuple)

    @property
    def job_name(self) -> str:
        """The Job's name: `name`, else `docket-` and the preset's file stem, DNS-safe."""
        if self.name:
            return self.name
        stem = Path(self.preset).stem.lower()
        return "docket-" + re.sub(r"[^a-z0-9-]+", "-", stem).strip("-")[:40]

    @property
    def log_dir(self) -> str:
        """`s3://BUCKET/PREFIX`."""
        prefix = self.prefix.strip("/")
        return f"s3://{self.bucket}/{prefix}" if prefix else f"s3://{self.bucket}"


def validate(settings: JobSettings) -> None:
    """Refuse settings Kubernetes or S3 would refuse, or that would change the manifests' shape.

    Args:
        settings: The Job's settings.

    Raises:
        ValueError: One line naming the setting and what it must be.
    """
    if not 1 <= settings.shards <= MAX_SHARDS:
        raise ValueError(f"--shards {settings.shards}: must be 1 to {MAX_SHARDS}")
    checks = [
        ("--preset", settings.preset, _PRESET, "letters, digits and ._/- only"),
        ("--image", settings.image, _IMAGE, "an image reference (registry/name:tag)"),
        ("--sandbox-image", settings.sandbox_image, _IMAGE, "an image reference"),
        ("--bucket", settings.bucket, _BUCKET, "an S3 bucket name (3-63 of a-z 0-9 . -)"),
        ("--prefix", settings.prefix, _PREFIX, "an S3 key prefix (letters, digits, !_.*'()/-)"),
        ("--cpu", settings.cpu, _QUANTITY, "a Kubernetes quantity (1, 500m)"),
        ("--memory", settings.memory, _QUANTITY, "a Kubernetes quantity (2Gi)"),
    ]
    names = [("--namespace", settings.namespace), ("--s3-secret", settings.s3_secret)]
    names += [("--model-secret", s) for s in settings.model_secrets]
    names.append(("--name", settings.job_name))
    checks += [
        (flag, value, _DNS_LABEL, "a DNS label (a-z 0-9 -, at most 63)") for flag, value in names
    ]
    if settings.endpoint is not None:
        checks.append(("--endpoint", settings.endpoint, _URL, "an http(s) URL"))
    for flag, value, pattern, what in checks:
        if not pattern.match(value):
            raise ValueError(f"{flag} {value!r}: must be {what}")
    for arg in settings.suite_args:
        if "$" in arg or not arg.isprintable():
            raise ValueError(
                f"--suite-arg {arg!r}: no '$' (Kubernetes expands $(...)) or control characters"
            )


def _labels(settings: JobSettings) -> dict[str, str]:
    return {"app.kubernetes.io/name": "docket", "app.kubernetes.io/instance": settings.job_name}


def _meta(name: str, settings: JobSettings) -> dict[str, Any]:
    return {"name": name, "namespace": settings.namespace, "labels": _labels(settings)}


def rbac(settings: JobSettings) -> list[dict[str, Any]]:
    """The runner's ServiceAccount, Role (`RULES`) and RoleBinding."""
    rules = [
        {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}
        for group, resources, verbs, _ in RULES
    ]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(RUNNER, settings)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(RUNNER, settings),
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(RUNNER, settings),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": RUNNER},
            "subjects": [
                {"kind": "ServiceAccount", "name": RUNNER, "namespace": settings.namespace}
            ],
        },
    ]


def sandbox_values(settings: JobSettings) -> dict[str, Any]:
    """The values layered over docket's k8s-values.yaml: the agent image the cluster pulls."""
    return {"services": {"default": {"image": settings.sandbox_image}}}


def suite_command(settings: JobSettings) -> list[str]:
    """The pod's command: `docket suite PRESET --shard $(JOB_COMPLETION_INDEX)/N ...`."""
    return [
        "docket",
        "suite",
        settings.preset,
        "--shard",
        f"$(JOB_COMPLETION_INDEX)/{settings.shards}",
        "--log-dir",
        settings.log_dir,
        "-T",
        "sandbox=k8s",
        "--display",
        "plain",
        *settings.suite_args,
    ]


def job(settings: JobSettings) -> dict[str, Any]:
    """The Indexed Job: one pod per shard, each running `suite_command`."""
    env = [{"name": SANDBOX_VALUES_ENV, "value": f"{VALUES_DIR}/values.yaml"}]
    if settings.endpoint:
        env.append({"name": "AWS_ENDPOINT_URL", "value": settings.endpoint})
    secrets = [settings.s3_secret, *settings.model_secrets]
    container = {
        "name": "docket",
        "image": settings.image,
        "command": suite_command(settings)[:2],
        "args": suite_command(settings)[2:],
        "env": env,
        "envFrom": [{"secretRef": {"name": name}} for name in secrets],
        "resources": {
            "requests": {"cpu": settings.cpu, "memory": settings.memory},
            "limits": {"memory": settings.memory},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "sandbox-values", "mountPath": VALUES_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(settings.job_name, settings),
        "spec": {
            "completionMode": "Indexed",
            "completions": settings.shards,
            "parallelism": settings.shards,
            "backoffLimitPerIndex": 1,
            "ttlSecondsAfterFinished": 7 * 24 * 3600,
            "template": {
                "metadata": {"labels": _labels(settings)},
                "spec": {
                    "serviceAccountName": RUNNER,
                    "restartPolicy": "Never",
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
                    "containers": [container],
                    "volumes": [
                        {"name": "sandbox-values", "configMap": {"name": VALUES_CONFIGMAP}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    }


def render(settings: JobSettings) -> list[dict[str, Any]]:
    """Every manifest of the run, in apply order (RBAC, the values ConfigMap, the Job).

    Args:
        settings: The Job's settings (`validate`d here).

    Returns:
        The manifests as plain data; `ValueError` (one line) for a bad setting.
    """
    validate(settings)
    values = yaml.safe_dump(sandbox_values(settings), sort_keys=False)
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(VALUES_CONFIGMAP, settings),
        "data": {"values.yaml": values},
    }
    return [*rbac(settings), configmap, job(settings)]


def render_yaml(settings: JobSettings) -> str:
    """`render` as one multi-document YAML file for `kubectl apply -f`."""
    header = (
        f"# docket suite {settings.preset} as a Kubernetes Indexed Job ({settings.shards} "
        "shards), written by\n# python -m docket.sandboxes.k8s.suite_job; see "
        "docs/run-at-scale.md.\n"
    )
    return header + yaml.safe_dump_all(render(settings), sort_keys=False)


def _first_difference(left: Any, right: Any, path: str = "") -> str | None:
    """The first path where `left` has something `right` does not (or has it otherwise)."""
    if isinstance(left, dict) and isinstance(right, dict):
        for key, value in left.items():
            if key not in right:
                return f"{path}.{key}".lstrip(".")
            found = _first_difference(value, right[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            found = _first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        return None
    return None if left == right else (path.lstrip(".") or "(document)")


def check(manifest: dict[str, Any]) -> Any:
    """Read a manifest into the `kubernetes` client's model of its kind and back, unchanged.

    Args:
        manifest: One manifest (plain data, as `render` gives or `yaml.safe_load` reads).

    Returns:
        The client's model object (`V1Job`, ...).

    Raises:
        ValueError: One line: an unknown kind or apiVersion, a missing required field, or a
            field the Kubernetes API does not have (it does not survive the round trip).
    """
    from kubernetes.client import ApiClient

    kind = manifest.get("kind")
    if kind not in MODELS:
        raise ValueError(f"kind {kind!r}: not one of {', '.join(MODELS)}")
    version, model = MODELS[str(kind)]
    if manifest.get("apiVersion") != version:
        raise ValueError(f"{kind}: apiVersion {manifest.get('apiVersion')!r}, expected {version}")

    client = ApiClient()
    text = json.dumps(manifest)
    deserialize: Any = client.deserialize
    try:
        if "content_type" in inspect.signature(deserialize).parameters:
            obj = deserialize(text, model, "application/json")  # kubernetes >= 35
        else:  # older clients read a response object's `data`
            obj = deserialize(SimpleNamespace(data=text), model)
    except (ValueError, TypeError) as ex:  # the models validate types and required fields
        lines = str(ex).splitlines()
        detail = f"{lines[0]}: {lines[1]}: {lines[2].strip()}" if len(lines) > 2 else lines[0]
        raise ValueError(f"{kind}: {detail}") from None
    back = client.sanitize_for_serialization(obj)
    where = _first_difference(manifest, back)
    if where is not None:
        raise ValueError(f"{kind}: {where} is not a field of the Kubernetes API ({model})")
    return obj


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m docket.sandboxes.k8s.suite_job",
        description="docket suite shards as a Kubernetes Indexed Job (YAML on stdout)",
    )
    parser.add_argument("--preset", required=True, help="suite preset (or its path in the image)")
    parser.add_argument("--shards", type=int, required=True, help="pods, one shard each")
    parser.add_argument("--image", required=True, help="runner image (docket[k8s] and helm)")
    parser.add_argument("--bucket", required=True, help="S3 bucket of the log store")
    parser.add_argument("--prefix", default="", help="the run's folder in the bucket")
    parser.add_argument("--endpoint", help="S3 endpoint (AWS_ENDPOINT_URL) of a non-AWS store")
    parser.add_argument("--s3-secret", default="docket-s3", help="Secret with the S3 keys")
    parser.add_argument(
        "--model-secret", action="append", default=[], help="Secret with model API keys"
    )
    parser.add_argument("--namespace", default="docket", help="namespace (docket)")
    parser.add_argument(
        "--sandbox-image", default=DEFAULT_SANDBOX_IMAGE, help="agent image the cluster pulls"
    )
    parser.add_argument("--name", help="Job name (default docket-PRESET)")
    parser.add_argument("--cpu", default="1", help="runner CPU request (1)")
    parser.add_argument("--memory", default="2Gi", help="runner memory (2Gi)")
    parser.add_argument(
        "--suite-arg",
        action="append",
        default=[],
        help="one more docket suite argument (--suite-arg=--limit=10)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Print the manifests, each checked against the Kubernetes API's models.

    Args:
        argv: The command line (default: `sys.argv[1:]`).

    Returns:
        0, or 2 with one `error:` line on stderr for a bad setting.
    """
    args = _parser().parse_args(argv)
    settings = JobSettings(
        preset=args.preset,
        shards=args.shards,
        image=args.image,
        bucket=args.bucket,
        prefix=args.prefix,
        endpoint=args.endpoint,
        s3_secret=args.s3_secret,
        model_secrets=tuple(args.model_secret),
        namespace=args.namespace,
        sandbox_image=args.sandbox_image,
        name=args.name,
        cpu=args.cpu,
        memory=args.memory,
        suite_args=tuple(args.suite_arg),
    )
    try:
        text = render_yaml(settings)
        for manifest in render(settings):
            check(manifest)
    except ValueError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


#: The settings `suite-job.yaml` is rendered from.
EXAMPLE = JobSettings(
    preset="api",
    shards=4,
    image="registry.example.com/docket:0.1",
    bucket="docket-logs",
    prefix="runs/api",
    endpoint="http://minio.storage.svc:9000",
    model_secrets=("docket-model-keys",),
    sandbox_image="registry.example.com/docket-sandbox-default:0.1",
)


if __name__ == "__main__":
    sys.exit(main())

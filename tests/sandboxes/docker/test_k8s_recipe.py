"""docket's default image on inspect-k8s-sandbox: `images/default/k8s-values.yaml`, rendered
through the agent-env chart's logic offline (no cluster, no helm binary) and checked.

The chart is Go templates rendered by `helm`, which neither PyPI nor Debian ships, so
`render_default_container` reproduces the few template lines that turn a service's values into
its container (each is asserted to be in the installed chart's `services.yaml`, so a chart that
changes them fails here), and the values are validated against the chart's own
`values.schema.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from docket.sandboxes import image_config
from docket.sandboxes.bwrap.config import BwrapConfig

k8s_sandbox = pytest.importorskip(
    "k8s_sandbox", reason="inspect-k8s-sandbox is not installed (pip install 'docket[k8s]')"
)
jsonschema = pytest.importorskip("jsonschema")

VALUES = Path(image_config()).with_name("k8s-values.yaml")
CHART = Path(k8s_sandbox.__file__).parent / "resources" / "helm" / "agent-env"

#: services.yaml lines `render_default_container` mirrors, with what each renders.
TEMPLATE_LINES = (
    'runtimeClassName: {{ $service.runtimeClassName | default "gvisor" }}',
    "image: {{ $service.image }}",
    "toYaml $service.command",
    "workingDir: {{ $service.workingDir }}",
    "{{- if $service.resources }}",
    "{{- toYaml $service.resources | nindent 10 }}",
    "{{- with $service.securityContext }}",
    "{{- with $service.volumeMounts }}",
    "-  {{- toYaml . | nindent 10 }}",  # a volume given as an object goes in as it is
)


def _values() -> dict[str, Any]:
    """The chart's default values with docket's file merged over them, as helm merges."""

    def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for key, value in over.items():
            both = isinstance(value, dict) and isinstance(base.get(key), dict)
            out[key] = merge(base[key], value) if both else value
        return out

    chart = yaml.safe_load((CHART / "values.yaml").read_text())
    return merge(chart, yaml.safe_load(VALUES.read_text()))


def render_default_container(values: dict[str, Any]) -> dict[str, Any]:
    """The default service's pod fields as services.yaml renders them (see TEMPLATE_LINES)."""
    service = values["services"]["default"]
    fallback = {"memory": "2Gi", "cpu": "500m"}  # the template's Guaranteed-QoS default
    return {
        "runtimeClassName": service.get("runtimeClassName") or "gvisor",
        "image": service["image"],
        "command": service.get("command"),
        "workingDir": service.get("workingDir"),
        "resources": service.get("resources") or {"limits": fallback, "requests": fallback},
        "securityContext": service.get("securityContext") or None,
        "volumeMounts": service.get("volumeMounts") or [],
        "volumes": [volume for volume in service.get("volumes", []) if isinstance(volume, dict)],
    }


def test_chart_template_still_renders_these_fields() -> None:
    template = (CHART / "templates" / "services.yaml").read_text()
    for line in TEMPLATE_LINES:
        assert line in template, line


def test_values_pass_the_charts_schema() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.validate(_values(), schema)
    with pytest.raises(jsonschema.ValidationError):  # the schema does bite
        jsonschema.validate({**_values(), "services": {"Bad_Name": {}}}, schema)


def test_rendered_spec_matches_compose_and_bwrap_defaults() -> None:
    compose = yaml.safe_load(Path(image_config()).read_text())["services"]["default"]
    container = render_default_container(_values())
    defaults = BwrapConfig()
    assert defaults.memory_mb is not None
    assert container["image"] == compose["image"] == "docket-sandbox-default:0.1"
    assert container["workingDir"] == compose["working_dir"] == "/workspace"
    assert container["command"] == compose["command"].split()
    limits = container["resources"]["limits"]
    assert limits == container["resources"]["requests"]  # Guaranteed QoS
    assert limits["memory"] == f"{defaults.memory_mb // 1024}Gi" == "2Gi"
    assert compose["mem_limit"] == "2g" and float(limits["cpu"]) == compose["cpus"] == 1.0
    security = container["securityContext"]
    assert (security["runAsUser"], security["runAsGroup"], security["runAsNonRoot"]) == (
        1000,
        1000,
        True,
    )
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert container["runtimeClassName"] == "gvisor"


def test_read_only_root_with_sized_writable_places_like_compose() -> None:
    compose = yaml.safe_load(Path(image_config()).read_text())["services"]["default"]
    container = render_default_container(_values())
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert compose["read_only"] is True
    sizes = {volume["name"]: volume["emptyDir"]["sizeLimit"] for volume in container["volumes"]}
    mounted = {mount["mountPath"]: sizes[mount["name"]] for mount in container["volumeMounts"]}
    # compose's tmpfs sizes where it has them; its volumes have none (docker cp cannot read a
    # tmpfs), so here the workspace and /tmp get bwrap's max_disk_mb
    tmpfs = dict(entry.split(":", 1) for entry in compose["tmpfs"])
    assert mounted == {
        "/var/tmp": tmpfs["/var/tmp"].split(",")[0].removeprefix("size=").replace("m", "Mi"),
        "/dev/shm": compose["shm_size"].replace("m", "Mi"),
        "/workspace": f"{BwrapConfig().max_disk_mb}Mi".replace("1024Mi", "1Gi"),
        "/tmp": "1Gi",
        "/home/agent": "256Mi",
    }
    volumes = {entry.split(":")[1] for entry in compose["volumes"]}
    assert volumes == {"/workspace", "/tmp", "/home/agent"}

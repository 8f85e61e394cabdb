"""The field tables `check` decodes against (webhook/data/fields/) agree with two
sources that were not made from them: kubernetes-validate's strict JSON schemas of
each release (its own copy of upstream's OpenAPI) for 1.35, 1.36 and 1.37, and the
`kubernetes` client's models (generated from 1.37's OpenAPI), type by type, field
by field, shape by shape. And, where the Go module cache holds the releases, the
tables are what tools/field_schemas.py makes of upstream's swagger.json."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes_validate
import pytest

from tests import paths
from webhook.validation.fields import FieldSchema, field_schema

RELEASES = ("1.35", "1.36", "1.37")
KINDS = {
    "v1": ("Pod", "PodTemplate", "ReplicationController"),
    "apps/v1": ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"),
    "batch/v1": ("Job", "CronJob"),
}


def _table(release: str) -> FieldSchema:
    table = field_schema(release)
    assert table is not None, f"no field table for {release}"
    return table


# ---- kubernetes-validate -----------------------------------------------------------------

SCHEMAS = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


@cache
def _definitions(release: str) -> dict[str, Any]:
    path = SCHEMAS / f"v{release}.0-local-strict" / "_definitions.json"
    defs: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    return defs


def _validate_shape(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A property of kubernetes-validate's schema in the tables' notation."""
    if "$ref" in prop:
        name = prop["$ref"].rpartition("/")[2]
        return name if defs[name].get("properties") else ""
    kinds = prop.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "array" in kinds:
        return "[" + _validate_shape(prop.get("items", {}), defs)
    if "object" in kinds and isinstance(prop.get("additionalProperties"), dict):
        return "{" + _validate_shape(prop["additionalProperties"], defs)
    return ""


@pytest.mark.parametrize("release", RELEASES)
def test_every_type_has_kubernetes_validates_fields_and_shapes(release: str) -> None:
    """Each type of the table has exactly the properties kubernetes-validate's schema
    of that release gives it, each of the same shape."""
    defs = _definitions(release)
    table = _table(release)
    differ = {
        name: sorted(
            set(fields.items())
            ^ {(f, _validate_shape(p, defs)) for f, p in defs[name]["properties"].items()}
        )
        for name, fields in table.types.items()
    }
    assert {name: d for name, d in differ.items() if d} == {}


@pytest.mark.parametrize("release", RELEASES)
def test_the_table_reaches_every_type_a_kind_holds(release: str) -> None:
    """Every kind check validates has its root, and every object type its fields
    lead to is in the table: nothing below a kind is left unchecked."""
    defs = _definitions(release)
    table = _table(release)
    roots = {}
    for name, d in defs.items():
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            api = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
            if gvk["kind"] in KINDS.get(api, ()):
                roots[f"{api} {gvk['kind']}"] = name
    assert dict(table.kinds) == roots
    reached, todo = set(), list(roots.values())
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        for prop in defs[name]["properties"].values():
            shape = _validate_shape(prop, defs).lstrip("[{")
            if shape:
                todo.append(shape)
    assert set(table.types) == reached


# ---- the kubernetes client's models (1.37) ------------------------------------------------

_LIST = re.compile(r"^List\[(.*)\]$")
_DICT = re.compile(r"^Dict\[str, (.*)\]$")


def _model(type_name: str) -> Any:
    """The client's model class of an OpenAPI type name (`io.k8s.api.core.v1.PodSpec`
    is V1PodSpec; a name two groups share is prefixed with the group: CoreV1...)."""
    *prefix, version, kind = type_name.split(".")
    plain = version[0].upper() + version[1:] + kind
    group = prefix[-1] if prefix[-1] not in ("v1", "api") else "core"
    return getattr(kubernetes.client, group.capitalize() + plain, None) or getattr(
        kubernetes.client, plain
    )


def _client_shape(openapi_type: str, names: dict[str, str]) -> str:
    for pattern, mark in ((_LIST, "["), (_DICT, "{")):
        m = pattern.match(openapi_type)
        if m:
            return mark + _client_shape(m.group(1), names)
    return names.get(openapi_type, "")


def test_release_1_37_matches_the_kubernetes_clients_models() -> None:
    """The kubernetes client 37 (generated from v1.37's OpenAPI): each type's JSON
    keys (attribute_map) and their shapes (openapi_types) are the table's."""
    table = _table("1.37")
    models = {name: _model(name) for name in table.types}
    names = {cls.__name__: name for name, cls in models.items()}
    got = {
        name: {
            cls.attribute_map[attr]: _client_shape(kind, names)
            for attr, kind in cls.openapi_types.items()
        }
        for name, cls in models.items()
    }
    assert got == {name: dict(fields) for name, fields in table.types.items()}


# ---- upstream's swagger.json, through the generator --------------------------------------


def _module_cache() -> Path | None:
    go = shutil.which("go")
    if go is None:
        return None
    out = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=False)
    path = Path(out.stdout.strip()) if out.returncode == 0 else None
    return path if path is not None and path.is_dir() else None


def test_the_tables_are_what_the_generator_makes_of_upstreams_openapi() -> None:
    """tools/field_schemas.py --check: each committed table equals the generator's
    output on k8s.io/kubernetes's swagger.json of its release (module cache only)."""
    from tools import field_schemas

    cache_dir = _module_cache()
    versions = field_schemas.RELEASES.values()
    held = cache_dir is not None and all(
        (cache_dir / f"k8s.io/kubernetes@{v}").is_dir() for v in versions
    )
    if not held:
        pytest.skip("the Go module cache does not hold k8s.io/kubernetes at every release")
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off"}
    out = subprocess.run(
        [sys.executable, "-m", "tools.field_schemas", "--check"],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr

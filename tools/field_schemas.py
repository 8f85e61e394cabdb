"""Generate webhook/data/fields/<release>.json, the field tables `check` decodes
objects against, from upstream's own OpenAPI (api/openapi-spec/swagger.json of
k8s.io/kubernetes at the release's patch, from the Go module proxy).

kube-apiserver finds unknown and duplicate fields while it decodes the JSON body
into the Go types of the release (sigs.k8s.io/json, strict). swagger.json is
generated from the same Go types, one definition per type, one property per json
tag (inline structs promoted), so it names exactly the keys the decoder knows. What
the decoder does not look into (a type with its own UnmarshalJSON: RawExtension,
FieldsV1, IntOrString, Quantity, Time) is a definition without properties, kept as
an opaque leaf.

Each table keeps only the types reachable from the kinds `check` validates, and per
field only its shape:

    ""          a leaf: a scalar or an opaque value, never looked into
    "T"         an object of the type T (a Go struct)
    "[" + s     a list whose items have the shape s
    "{" + s     a map (string keys) whose values have the shape s

    python -m tools.field_schemas              # write every release's table
    python -m tools.field_schemas --check      # exit 1 when a table differs

The module directory of each release is found with `go mod download -json`.
"""

from __future__ import annotations

import argparse
import json
import subprocess  # nosec B404 - runs the go tool with fixed arguments
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "webhook" / "data" / "fields"

# The patch of each supported release (the control plane's wrappers, tests/e2e/go/).
RELEASES = {"1.35": "v1.35.4", "1.36": "v1.36.3", "1.37": "v1.37.2"}

# The kinds `check` validates (webhook.api.kube.TEMPLATE_PATHS), by apiVersion.
KINDS = {
    "v1": ("Pod", "PodTemplate", "ReplicationController"),
    "apps/v1": ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"),
    "batch/v1": ("Job", "CronJob"),
}

_REF = "#/definitions/"


def module_dir(version: str) -> Path:
    """The k8s.io/kubernetes module of that version in the Go module cache."""
    out = subprocess.run(  # nosec B603 B607 - the go tool, fixed arguments
        ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return Path(json.loads(out)["Dir"])


def swagger(version: str) -> dict[str, Any]:
    path = module_dir(version) / "api" / "openapi-spec" / "swagger.json"
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _shape(prop: dict[str, Any], definitions: dict[str, Any], todo: list[str]) -> str:
    ref = prop.get("$ref")
    if ref is None and isinstance(prop.get("allOf"), list) and len(prop["allOf"]) == 1:
        ref = prop["allOf"][0].get("$ref")
    if isinstance(ref, str):
        name = ref.removeprefix(_REF)
        if not definitions[name].get("properties"):
            return ""
        todo.append(name)
        return name
    kind = prop.get("type")
    if kind == "array":
        return "[" + _shape(prop.get("items", {}), definitions, todo)
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return "{" + _shape(prop["additionalProperties"], definitions, todo)
    return ""


def compact(spec: dict[str, Any]) -> dict[str, Any]:
    """The table of one release from its swagger.json: the kinds' root types and the
    fields of every type reachable from them."""
    definitions: dict[str, Any] = spec["definitions"]
    roots: dict[str, str] = {}
    for name, definition in definitions.items():
        for gvk in definition.get("x-kubernetes-group-version-kind", []):
            group, version, kind = gvk["group"], gvk["version"], gvk["kind"]
            api_version = f"{group}/{version}" if group else version
            if kind in KINDS.get(api_version, ()):
                roots[f"{api_version} {kind}"] = name
    missing = [f"{a} {k}" for a, ks in KINDS.items() for k in ks if f"{a} {k}" not in roots]
    if missing:
        raise SystemExit(f"swagger.json has no definition for {', '.join(missing)}")
    types: dict[str, dict[str, str]] = {}
    todo = sorted(set(roots.values()))
    while todo:
        name = todo.pop()
        if name in types:
            continue
        props = definitions[name].get("properties", {})
        types[name] = {field: _shape(p, definitions, todo) for field, p in sorted(props.items())}
    return {
        "kinds": dict(sorted(roots.items())),
        "types": dict(sorted(types.items())),
    }


def table(release: str) -> dict[str, Any]:
    version = RELEASES[release]
    return {
        "release": release,
        "source": f"k8s.io/kubernetes@{version} api/openapi-spec/swagger.json",
        **compact(swagger(version)),
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    stale = []
    for release in RELEASES:
        path = OUT / f"{release}.json"
        text = render(table(release))
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"out of date: {', '.join(stale)} (python -m tools.field_schemas)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

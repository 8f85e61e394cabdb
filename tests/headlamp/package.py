"""The plugin's tarball as Headlamp installs it, and its ArtifactHub metadata.

    python -m tests.headlamp.package TARBALL ARTIFACTHUB_PKG_YML

Headlamp's plugin manager unpacks one folder holding main.js and package.json into its
plugins directory; ArtifactHub's `headlamp/plugin/archive-checksum` must be the
tarball's SHA-256. Exit 1 naming what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tarfile
from pathlib import Path

import yaml

from tests.paths import ROOT

# What main.js must register (headlamp-plugin/src/index.tsx).
REGISTERED = ("registerDetailsViewSection", "registerRoute", "registerSidebarEntry")


def problems(tarball: Path, metadata: Path) -> list[str]:
    found = []
    package = json.loads((ROOT / "headlamp-plugin" / "package.json").read_text())
    with tarfile.open(tarball, "r:gz") as tar:
        files = {m.name: m for m in tar.getmembers() if m.isfile()}
        folders = {name.split("/")[0] for name in files}
        if len(folders) != 1:
            return [f"{tarball.name}: one folder expected, found {sorted(folders)}"]
        folder = folders.pop()
        if set(files) != {f"{folder}/main.js", f"{folder}/package.json"}:
            found.append(f"{tarball.name}: holds {sorted(files)}, not main.js and package.json")
            return found
        main = tar.extractfile(files[f"{folder}/main.js"])
        packed = tar.extractfile(files[f"{folder}/package.json"])
        assert main is not None and packed is not None  # regular files, checked above
        code = main.read().decode()
        packed_json = json.loads(packed.read())
    found += [f"main.js does not call {name}" for name in REGISTERED if name not in code]
    if (packed_json["name"], packed_json["version"]) != (package["name"], package["version"]):
        name, version = packed_json["name"], packed_json["version"]
        found.append(f"package.json in the tarball is {name}@{version}")
    meta = yaml.safe_load(metadata.read_text())
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    annotations = meta.get("annotations", {})
    if annotations.get("headlamp/plugin/archive-checksum") != f"SHA256:{digest}":
        found.append(f"{metadata.name}: archive-checksum is not the tarball's SHA256:{digest}")
    if not str(annotations.get("headlamp/plugin/archive-url", "")).endswith(tarball.name):
        found.append(f"{metadata.name}: archive-url does not name {tarball.name}")
    if str(meta.get("version")) != package["version"]:
        found.append(f"{metadata.name}: version {meta.get('version')}, not {package['version']}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        usage = "usage: python -m tests.headlamp.package TARBALL ARTIFACTHUB_PKG_YML"
        print(usage, file=sys.stderr)
        return 2
    found = problems(Path(argv[0]), Path(argv[1]))
    for problem in found:
        print(f"FAILED: {problem}", file=sys.stderr)
    if not found:
        print(f"{argv[0]}: main.js and package.json; {argv[1]}: its checksum")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

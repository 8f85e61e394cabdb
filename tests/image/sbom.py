"""`make sbom`: a CycloneDX SBOM of the Python distributions in the built image.

The image's own interpreter (/opt/topospread/bin/python, run from the image as
`make test-image` runs it) says which directories are on its sys.path; cyclonedx-py's
`environment` command then reads the distributions' metadata in those directories of
the image's files (the mounted image, or an exported copy). cyclonedx-py asks an
interpreter for its sys.path by running it: it is given a stand-in that prints the
image's sys.path mapped onto those files, since the image's interpreter cannot run
outside the image.

    python -m tests.image.sbom IMAGE OUT.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.image.imagefs import Runner, image_root, runner_for

SYS_PATH = "import json, sys; print(json.dumps(sys.path))"


def image_sys_path(runner: Runner) -> list[str]:
    out = runner.run(["-c", SYS_PATH], entrypoint=["/opt/topospread/bin/python"])
    if out.returncode != 0:
        raise RuntimeError(f"the image's python failed: {out.stderr.decode()}")
    return [str(p) for p in json.loads(out.stdout)]


def sbom(ref: str, out: Path) -> int:
    with runner_for(ref) as runner:
        entries = image_sys_path(runner)
        with image_root(runner) as root:
            on_host = [str(root / p.lstrip("/")) for p in entries if p.startswith("/")]
            with tempfile.TemporaryDirectory() as tmp:
                python = Path(tmp) / "python"
                python.write_text(f"#!/bin/sh\nprintf '%s' '{json.dumps(on_host)}'\n")
                python.chmod(0o755)
                cmd = [str(Path(sys.executable).parent / "cyclonedx-py"), "environment",
                       "--mc-type", "application", "--output-reproducible",
                       "--output-format", "JSON", "--output-file", str(out), str(python)]
                done = subprocess.run(cmd, check=False)
    if done.returncode != 0:
        return done.returncode
    components = json.loads(out.read_text()).get("components", [])
    print(f"{out}: {len(components)} components from {ref}'s "
          f"/opt/topospread/bin/python ({', '.join(e for e in entries if 'site' in e)})")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tests.image.sbom IMAGE OUT.json", file=sys.stderr)
        return 2
    Path(argv[1]).parent.mkdir(parents=True, exist_ok=True)
    return sbom(argv[0], Path(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Run the built image as a container runtime would, with or without a runtime.

Two ways to start the image's entrypoint, chosen once per run:

- `podman`: `podman run --read-only` where a real OCI runtime starts containers
  (a developer's machine);
- `chroot`: where none can (CI's sandbox: crun refuses cgroups hybrid mode, crun and
  runc are denied setrlimit), the image's filesystem itself: `podman image mount`
  gives its read-only root; a private mount namespace (`unshare --mount`) adds what a
  runtime adds (tmpfs on /tmp, /dev with the usual nodes, /proc) and the files a
  Deployment mounts (/etc/topospread, read-only); then `chroot --userspec` runs the
  entrypoint as the image's user, with the image's environment.

TOPOSPREAD_IMAGE_RUNNER=podman|chroot forces one; by default `podman` when a container
starts, `chroot` otherwise. Needs root for `chroot` (mounts, chroot).

CAVEAT: the chroot way shares the host's network namespace and PID namespace and sets
no seccomp profile, capabilities or cgroup limits; it checks the image's files, user,
entrypoint, environment and read-only root, not the runtime's confinement.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

# Where the Deployment mounts config.yaml and the certificates (webhook/install/manifests.py).
ETC = "/etc/topospread"
CONTAINER_PORT = 8443

# The mounts a runtime makes, done in the private mount namespace before the chroot.
# $1 image root, $2 directory for /etc/topospread (or empty), then the command.
_CHROOT_SCRIPT = r"""
set -eu
root=$1 etc=$2 user=$3; shift 3
mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m tmpfs "$root/tmp"
mount -t tmpfs -o mode=755,nosuid,size=1m tmpfs "$root/dev"
for node in null zero full random urandom tty; do
  : > "$root/dev/$node"; mount --bind "/dev/$node" "$root/dev/$node"
done
mkdir "$root/dev/shm"; mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m shm "$root/dev/shm"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
if [ -n "$etc" ]; then
  mount --bind "$etc" "$root/etc/topospread"
  mount -o remount,bind,ro "$root/etc/topospread"
fi
exec chroot --userspec="$user" "$root" "$@"
"""


@dataclass(frozen=True)
class ImageConfig:
    """What `podman image inspect` says about the image, as a runtime reads it."""

    ref: str
    entrypoint: list[str]
    cmd: list[str]
    env: dict[str, str]
    user: str
    workdir: str
    labels: dict[str, str]
    size: int  # bytes, every layer


def podman(*args: str, timeout: float = 120, check: bool = True) -> str:
    """Run podman and return its stdout; a failure raises with podman's stderr."""
    proc = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)}: exit {proc.returncode}: {proc.stderr}")
    return proc.stdout


def inspect(ref: str) -> ImageConfig:
    data: Any = json.loads(podman("image", "inspect", ref))[0]
    config = data.get("Config") or {}
    env = dict(item.split("=", 1) for item in config.get("Env") or [])
    return ImageConfig(
        ref=ref,
        entrypoint=list(config.get("Entrypoint") or []),
        cmd=list(config.get("Cmd") or []),
        env=env,
        user=str(config.get("User") or ""),
        workdir=str(config.get("WorkingDir") or ""),
        labels=dict(config.get("Labels") or {}),
        size=int(data["Size"]),
    )


class Runner:
    """Starts processes from the image: `popen` as `podman run` or as the chroot."""

    name = ""

    def __init__(self, image: ImageConfig) -> None:
        self.image = image

    def serve_bind(self, port: int) -> str:
        """The --bind the server gets so that 127.0.0.1:port reaches it."""
        raise NotImplementedError

    def popen(
        self,
        args: list[str],
        *,
        entrypoint: list[str] | None = None,
        etc: Path | None = None,
        port: int | None = None,
        stdout: IO[bytes] | int | None = subprocess.PIPE,
        stderr: IO[bytes] | int | None = subprocess.PIPE,
    ) -> subprocess.Popen[bytes]:
        raise NotImplementedError

    def run(self, args: list[str], *, entrypoint: list[str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
        proc = self.popen(args, entrypoint=entrypoint)
        out, err = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def sigterm(self, proc: subprocess.Popen[bytes]) -> None:
        raise NotImplementedError

    def pid_in_host(self, proc: subprocess.Popen[bytes]) -> int:
        """The entrypoint's process id as the host sees it."""
        raise NotImplementedError


class ChrootRunner(Runner):
    name = "chroot"

    def __init__(self, image: ImageConfig, root: Path) -> None:
        super().__init__(image)
        self.root = root

    def serve_bind(self, port: int) -> str:
        return f"127.0.0.1:{port}"

    def popen(
        self,
        args: list[str],
        *,
        entrypoint: list[str] | None = None,
        etc: Path | None = None,
        port: int | None = None,
        stdout: IO[bytes] | int | None = subprocess.PIPE,
        stderr: IO[bytes] | int | None = subprocess.PIPE,
    ) -> subprocess.Popen[bytes]:
        user = self.image.user or "0:0"
        if ":" not in user:
            user += f":{user}"
        argv = [*(self.image.entrypoint if entrypoint is None else entrypoint), *args]
        # unshare without --fork, sh and chroot all exec: the child's pid is the
        # entrypoint's, and signals sent to it reach the entrypoint itself.
        cmd = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
               _CHROOT_SCRIPT, "sh", str(self.root), str(etc or ""), user, *argv]
        # The image's environment only: the chroot's PATH finds the entrypoint, and the
        # host tools above are found through it too (/usr/sbin, /usr/bin, /bin).
        env = dict(self.image.env)
        env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                                stderr=stderr, cwd="/")

    def sigterm(self, proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGTERM)

    def pid_in_host(self, proc: subprocess.Popen[bytes]) -> int:
        return proc.pid


class PodmanRunner(Runner):
    name = "podman"

    def __init__(self, image: ImageConfig) -> None:
        super().__init__(image)
        self._names: dict[int, str] = {}
        self._count = 0

    def serve_bind(self, port: int) -> str:
        return f"0.0.0.0:{CONTAINER_PORT}"

    def popen(
        self,
        args: list[str],
        *,
        entrypoint: list[str] | None = None,
        etc: Path | None = None,
        port: int | None = None,
        stdout: IO[bytes] | int | None = subprocess.PIPE,
        stderr: IO[bytes] | int | None = subprocess.PIPE,
    ) -> subprocess.Popen[bytes]:
        self._count += 1
        name = f"topospread-image-test-{os.getpid()}-{self._count}"
        cmd = ["podman", "run", "--rm", "--name", name, "--read-only",
               "--tmpfs", "/tmp:rw,mode=1777,size=64m"]
        if entrypoint is not None:
            cmd += ["--entrypoint", json.dumps(entrypoint)]
        if etc is not None:
            cmd += ["--volume", f"{etc}:{ETC}:ro"]
        if port is not None:
            cmd += ["--publish", f"127.0.0.1:{port}:{CONTAINER_PORT}"]
        proc = subprocess.Popen([*cmd, self.image.ref, *args], stdin=subprocess.DEVNULL,
                                stdout=stdout, stderr=stderr)
        self._names[proc.pid] = name
        return proc

    def sigterm(self, proc: subprocess.Popen[bytes]) -> None:
        podman("kill", "--signal", "TERM", self._names[proc.pid])

    def pid_in_host(self, proc: subprocess.Popen[bytes]) -> int:
        return int(podman("inspect", "--format", "{{.State.Pid}}",
                          self._names[proc.pid]).strip())


def runtime_works(ref: str) -> bool:
    """Whether a container of the image starts here (an OCI runtime that works)."""
    try:
        proc = subprocess.run(
            ["podman", "run", "--rm", "--entrypoint", '["python", "-c", "pass"]', ref],
            capture_output=True, timeout=120, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


@contextmanager
def image_root(runner: Runner) -> Iterator[Path]:
    """The image's files: the chroot way's read-only mount, or, with a runtime (where a
    rootless podman cannot mount images), an unpacked `podman export` of a container."""
    if isinstance(runner, ChrootRunner):
        yield runner.root
        return
    container = podman("create", runner.image.ref).strip()
    try:
        with tempfile.TemporaryDirectory(prefix="topospread-image-") as tmp:
            export = subprocess.Popen(["podman", "export", container], stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", tmp, "--no-same-owner", "--exclude=dev/*"],
                           stdin=export.stdout, check=True)
            if export.wait() != 0:
                raise RuntimeError(f"podman export {container} failed")
            yield Path(tmp)
    finally:
        podman("rm", container, check=False)


@contextmanager
def runner_for(ref: str) -> Iterator[Runner]:
    """The way to run `ref` here (module docstring), set up and torn down."""
    if shutil.which("podman") is None:
        raise RuntimeError("podman is not installed: `make test-image` installs it (apt-get)")
    image = inspect(ref)
    forced = os.environ.get("TOPOSPREAD_IMAGE_RUNNER", "")
    if forced not in ("", "podman", "chroot"):
        raise RuntimeError(f"TOPOSPREAD_IMAGE_RUNNER={forced!r}: must be podman or chroot")
    if forced == "podman" or (not forced and runtime_works(ref)):
        yield PodmanRunner(image)
        return
    if os.geteuid() != 0:
        raise RuntimeError("no container runtime works here, and the chroot way needs root")
    root = Path(podman("image", "mount", ref).strip())
    try:
        yield ChrootRunner(image, root)
    finally:
        podman("image", "unmount", ref, check=False)

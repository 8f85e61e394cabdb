"""The built image, as a cluster runs it: its own entrypoint and user on a read-only root.

Run by `make test-image` only (conftest.py). The server gets what the Deployment gives
it: config.yaml and the certificates under /etc/topospread (read-only), a tmpfs on
/tmp; a snapshot file stands in for the live cluster (`--in-cluster` is the one
argument of the image's command replaced, with `--bind` where the way of running
needs it). Expected answers are kube-apiserver's (the maxSkew message) and the
documented v1.34 matchLabelKeys merge, not the server's own output.
"""

from __future__ import annotations

import base64
import errno
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from tests import paths
from tests.builders import DNS, ZONE, make_pod, review, selector
from tests.image.imagefs import ETC, ImageConfig, Runner
from tests.live_server import LiveServer, free_port
from webhook import __version__
from webhook.install.certs import generate

# Every layer of the image, base included (podman's Size). Measured with the Debian base
# `make image` makes: 320 MB, of which the base 129 MB and the virtualenv 190 MB (the
# kubernetes client alone 126 MB with its bytecode); docs/install.md. The bound leaves
# room for Debian's updates, not for a compiler, a second Python or a build cache.
MAX_IMAGE_BYTES = 340_000_000
DRAIN_SECONDS = 2.0
STARTUP_SECONDS = 60.0
USER = "65532:65532"
COMPILERS = ("cc", "gcc", "c++", "g++", "cpp", "clang", "tcc", "ld", "as", "cc1", "cc1plus")


def etc_dir(tmp: Path) -> Path:
    """What the Deployment mounts at /etc/topospread, readable by the image's user."""
    etc = tmp / "etc-topospread"
    generate("topospread", "topospread", etc / "certs", days=2)
    (etc / "config.yaml").write_text(f"shutdown:\n  drainSeconds: {DRAIN_SECONDS}\n")
    shutil.copy(paths.DEMO_SNAPSHOT, etc / "snapshot.yaml")
    for path in [etc, *etc.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return etc


def serve_args(image: ImageConfig, runner: Runner, port: int) -> list[str]:
    """The image's own command, with the snapshot for the cluster and the bind we reach."""
    args: list[str] = []
    cmd = list(image.cmd)
    while cmd:
        arg = cmd.pop(0)
        if arg == "--in-cluster":
            args += ["--snapshot", f"{ETC}/snapshot.yaml"]
        elif arg == "--bind":
            cmd.pop(0)
            args += ["--bind", runner.serve_bind(port)]
        else:
            args.append(arg)
    return args


def start(runner: Runner, tmp: Path) -> LiveServer:
    etc = etc_dir(tmp)
    port = free_port()
    log = tmp / "serve.log"
    with log.open("wb") as out:
        proc = runner.popen(serve_args(runner.image, runner, port), etc=etc, port=port,
                            stdout=out, stderr=subprocess.STDOUT)
    srv = LiveServer(proc, port, etc / "certs", log)
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            if srv.request("GET", "/readyz", timeout=2)[0] == 200:
                return srv
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(srv)
            raise AssertionError(f"the image's server did not get ready:\n{srv.log_text()}")
        time.sleep(0.2)


def stop(srv: LiveServer) -> None:
    if srv.proc.poll() is None:
        srv.proc.kill()
        srv.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(runner: Runner, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    srv = start(runner, tmp_path_factory.mktemp("serve"))
    yield srv
    stop(srv)


def spread_pod(max_skew: int, **extra: Any) -> dict[str, Any]:
    pod = make_pod().name("web-0").namespace("shop").label("app", "web")
    obj = pod.spread(max_skew, ZONE, DNS, selector({"app": "web"})).obj()
    obj["spec"]["topologySpreadConstraints"][0].update(extra)
    return obj


# ---- the image's configuration and files --------------------------------------------


def test_config_runs_topospread_as_non_root(image: ImageConfig) -> None:
    """Entrypoint, numeric user, the Deployment's command, the version label."""
    assert image.entrypoint == ["topospread"]
    assert image.user == USER
    assert image.cmd == [
        "serve", "--in-cluster", "--config", f"{ETC}/config.yaml", "--cert-dir",
        f"{ETC}/certs", "--bind", "0.0.0.0:8443",
    ]
    assert image.labels["org.opencontainers.image.version"] == __version__
    assert image.env["PATH"].split(":")[0] == "/opt/topospread/bin"
    assert "" not in image.env["PATH"].split(":"), "an empty PATH entry means the cwd"


def test_version_matches_label(runner: Runner) -> None:
    """`topospread --version` in the image says the version its label says."""
    out = runner.run(["--version"])
    assert (out.returncode, out.stdout.decode()) == (0, f"topospread {__version__}\n")


def test_read_only_root_as_image_user(runner: Runner) -> None:
    """The process runs as 65532:65532; / refuses writes (read-only), /tmp takes them."""
    probe = (
        "import os\n"
        "try:\n    open('/probe', 'w')\nexcept OSError as e:\n    root = e.errno\n"
        "else:\n    root = 0\n"
        "open('/tmp/probe', 'w').write('x')\n"
        "print(os.getuid(), os.getgid(), root)\n"
    )
    out = runner.run(["-c", probe], entrypoint=["python"])
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().split() == ["65532", "65532", str(errno.EROFS)]


def test_no_compiler(root: Path) -> None:
    """No C compiler, assembler or linker anywhere in the image."""
    found = [
        str(p.relative_to(root))
        for d in ("usr/bin", "usr/local/bin", "usr/sbin", "opt/topospread/bin", "usr/lib",
                  "usr/libexec")
        if (root / d).is_dir()
        for p in (root / d).rglob("*")
        if p.name in COMPILERS or re.fullmatch(r"(x86_64|aarch64)-linux-gnu-(gcc|g\+\+|ld|as).*",
                                               p.name)
    ]
    assert found == []


def test_no_pip(root: Path, runner: Runner) -> None:
    """No pip: not as a command, not as a package, not as a wheel to bootstrap one."""
    found = [
        str(p.relative_to(root))
        for d in ("usr", "opt")
        for p in (root / d).rglob("pip*")
        if re.fullmatch(r"pip[0-9.]*|pip-.*\.(whl|dist-info)|pip", p.name)
    ]
    assert found == []
    out = runner.run(["-c", "import pip"], entrypoint=["python"])
    assert out.returncode == 1
    assert b"ModuleNotFoundError: No module named 'pip'" in out.stderr


def test_size(image: ImageConfig) -> None:
    print(f"image size: {image.size} bytes ({image.size / 1e6:.0f} MB)")
    assert image.size < MAX_IMAGE_BYTES


# ---- serving ------------------------------------------------------------------------


def test_health_and_readiness(server: LiveServer) -> None:
    assert server.request("GET", "/healthz")[0] == 200
    assert server.request("GET", "/readyz")[0] == 200


def test_server_process_runs_as_image_user(server: LiveServer, runner: Runner) -> None:
    status = Path(f"/proc/{runner.pid_in_host(server.proc)}/status").read_text()
    uid = re.search(r"^Uid:\s+(\d+)\s+(\d+)", status, re.M)
    gid = re.search(r"^Gid:\s+(\d+)\s+(\d+)", status, re.M)
    assert uid is not None and gid is not None
    assert (uid.groups(), gid.groups()) == (("65532", "65532"), ("65532", "65532"))


def test_validate_denies_zero_max_skew(server: LiveServer) -> None:
    status, _, body = server.request("POST", "/validate", review(spread_pod(0), uid="u-0"))
    assert status == 200
    response = json.loads(body)["response"]
    assert response["uid"] == "u-0"
    assert response["allowed"] is False
    assert ("spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: "
            "must be greater than zero") in response["status"]["message"]


def test_validate_allows_valid_pod(server: LiveServer) -> None:
    status, _, body = server.request("POST", "/validate", review(spread_pod(1), uid="u-1"))
    assert status == 200
    response = json.loads(body)["response"]
    assert (response["uid"], response["allowed"]) == ("u-1", True)


def test_mutate_merges_match_label_keys(server: LiveServer) -> None:
    """No cluster version known: the v1.34 merge result, keys kept, selector extended."""
    pod = spread_pod(1, matchLabelKeys=["version"])
    pod["metadata"]["labels"]["version"] = "v2"
    status, _, body = server.request("POST", "/mutate", review(pod, uid="u-2"))
    assert status == 200
    response = json.loads(body)["response"]
    assert (response["uid"], response["allowed"], response["patchType"]) == (
        "u-2", True, "JSONPatch")
    patched = jsonpatch.apply_patch(pod, json.loads(base64.b64decode(response["patch"])))
    constraint = patched["spec"]["topologySpreadConstraints"][0]
    assert constraint["labelSelector"] == {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "version", "operator": "In", "values": ["v2"]}],
    }
    assert constraint["matchLabelKeys"] == ["version"]


def test_malformed_review_is_400(server: LiveServer) -> None:
    conn = server.connection()
    try:
        conn.request("POST", "/validate", body=b"{not json",
                     headers={"Content-Type": "application/json"})
        with conn.getresponse() as resp:
            assert resp.status == 400
    finally:
        conn.close()


def test_metrics_count_the_reviews(server: LiveServer) -> None:
    server.request("POST", "/validate", review(spread_pod(1), uid="u-3"))
    status, headers, body = server.request("GET", "/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain")
    counted = re.search(
        rb'^topospread_http_requests_total\{code="200",path="/validate"\} ([0-9.e+]+)$',
        body, re.M)
    assert counted is not None and float(counted.group(1)) >= 1


# ---- SIGTERM ------------------------------------------------------------------------


def handshake(srv: LiveServer) -> bool:
    """Whether a new connection gets through TCP and TLS."""
    conn = srv.connection(timeout=3)
    try:
        conn.connect()
        return True
    except OSError:
        return False
    finally:
        conn.close()


def test_sigterm_drains_in_flight_requests(runner: Runner,
                                           tmp_path_factory: pytest.TempPathFactory) -> None:
    """SIGTERM: /readyz 503 while new requests are still served for drainSeconds; then
    the listener closes and a request already in flight (half its body sent before the
    signal, the rest after the listener closed) is answered; exit 0."""
    srv = start(runner, tmp_path_factory.mktemp("drain"))
    try:
        body = json.dumps(review(spread_pod(1), uid="in-flight")).encode()
        conn = srv.connection(timeout=30)
        conn.putrequest("POST", "/validate")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body[: len(body) // 2])
        time.sleep(0.5)  # the worker has the request line and headers

        runner.sigterm(srv.proc)
        signalled = time.monotonic()
        time.sleep(0.3)
        assert srv.request("GET", "/readyz")[0] == 503
        status, _, answer = srv.request("POST", "/validate", review(spread_pod(1), uid="late"))
        assert (status, json.loads(answer)["response"]["uid"]) == (200, "late")
        assert time.monotonic() - signalled < DRAIN_SECONDS, "the checks outlasted the drain"

        time.sleep(max(0.0, signalled + DRAIN_SECONDS + 1.0 - time.monotonic()))
        assert not handshake(srv), "the listener still accepts after the drain delay"

        conn.send(body[len(body) // 2:])
        with conn.getresponse() as resp:
            assert resp.status == 200
            assert json.loads(resp.read())["response"]["uid"] == "in-flight"
        conn.close()
        assert srv.proc.wait(timeout=30) == 0
    finally:
        stop(srv)
    log = srv.log_text()
    assert "SIGTERM: /readyz fails now" in log
    assert "drain delay over" in log

"""List kinds of a live cluster into a Snapshot, once: what the CLI reads, kubectl-style.

    conn = connect(kubeconfig=None, context=None)         # the current context, as kubectl
    snapshot, version = list_snapshot(conn, progress=sys.stderr)
    for obj in list_objects(conn, [Resource("Deployment", "/apis/apps/v1/deployments")]): ...

The kubernetes client is used for configuration and auth only (kubeconfig, exec and
token plugins, TLS, proxy) and for the urllib3 pool of its ApiClient; responses are
raw JSON, paginated with limit/continue, never client model objects (they are slow
and drop fields), as informer.py reads them. Each list item gets the kind and
apiVersion a list response leaves out. An unreachable or refusing cluster raises
ClusterError with what was tried (exit 2 at the CLI), never a traceback.
A progress line (kind and count) is drawn on `progress` when it is a terminal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from webhook.api.kube import RawObj
from webhook.cluster.informer import RESOURCES, Resource, parse_server_version
from webhook.cluster.rest import ClusterError, Unreachable, send
from webhook.cluster.source import snapshot_objects
from webhook.errors import ConfigError
from webhook.scheduler.framework.snapshot import Snapshot

if TYPE_CHECKING:  # pragma: no cover - typing only
    from kubernetes.client import ApiClient

__all__ = [
    "AUDIT_RESOURCES",
    "ClusterError",
    "Connection",
    "StatusLine",
    "connect",
    "list_objects",
    "list_snapshot",
    "server_version",
]

# What an audit reads besides the scheduling model's kinds: the workloads themselves.
AUDIT_RESOURCES: tuple[Resource, ...] = (
    *RESOURCES,
    Resource("Deployment", "/apis/apps/v1/deployments"),
    Resource("DaemonSet", "/apis/apps/v1/daemonsets"),
    Resource("Job", "/apis/batch/v1/jobs"),
    Resource("CronJob", "/apis/batch/v1/cronjobs"),
)


@dataclass
class Connection:
    """An ApiClient for one kubeconfig context, and what kubectl would show of it.

    name: the context name (or the server URL); namespace: the context's namespace,
    "" when it sets none; timeout: seconds before a request is given up.
    """

    api: ApiClient
    name: str
    namespace: str
    timeout: float = 30.0

    @property
    def host(self) -> str:
        return str(self.api.configuration.host).rstrip("/")

    def get_json(self, path: str, query: dict[str, Any] | None = None) -> Any:
        """GET `path` as JSON; ClusterError on any failure, naming the server."""
        try:
            reply = send(self, "GET", path, query=query)
        except Unreachable as exc:
            raise ClusterError(
                f"cannot reach the cluster at {self.host} (context {self.name}): "
                f"{_reason(exc.__cause__ or exc)}; is it running and is the kubeconfig current?"
            ) from exc.__cause__
        if not 200 <= reply.status < 300:
            raise ClusterError(
                f"{self.host}{path}: HTTP {reply.status}: {_status_message(reply.data)}"
            )
        try:
            return json.loads(reply.data)
        except ValueError as exc:
            raise ClusterError(f"{self.host}{path}: the answer is not JSON") from exc


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "reason", None)
    return str(inner or exc)


def _status_message(data: bytes) -> str:
    try:
        body = json.loads(data)
    except ValueError:
        return data[:200].decode("utf-8", "replace")
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return data[:200].decode("utf-8", "replace")


def connect(
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    in_cluster: bool = False,
    timeout: float = 30.0,
) -> Connection:
    """A Connection for the kubeconfig context (default: the current one), as kubectl
    picks it; ConfigError when there is no usable kubeconfig."""
    from kubernetes import client
    from kubernetes import config as kube_config

    config: Any = kube_config  # untyped loaders
    if kubeconfig is None and not in_cluster:
        # As kubectl: $KUBECONFIG (a list of paths) as it is now, not as the client
        # library read it when it was first imported.
        kubeconfig = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    configuration = client.Configuration()
    name = "in-cluster"
    namespace = ""
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=configuration)
        else:
            contexts, active = config.list_kube_config_contexts(config_file=kubeconfig)
            chosen = active
            if context is not None:
                chosen = next((c for c in contexts if c.get("name") == context), None)
                if chosen is None:
                    known = ", ".join(str(c.get("name")) for c in contexts)
                    raise ConfigError(f"no context {context!r} in the kubeconfig ({known})")
            if not chosen:
                raise ConfigError("the kubeconfig has no current context; give --context")
            name = str(chosen.get("name"))
            namespace = str(as_mapping(chosen.get("context")).get("namespace") or "")
            config.load_kube_config(
                config_file=kubeconfig, context=name, client_configuration=configuration
            )
    except ConfigError:
        raise
    except (config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        where = "in-cluster config" if in_cluster else f"kubeconfig {kubeconfig or '(default)'}"
        raise ConfigError(
            f"cannot load {where}: {exc}; give --snapshot FILE to work offline"
        ) from exc
    return Connection(client.ApiClient(configuration), name, namespace, timeout)


def as_mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def server_version(conn: Connection) -> tuple[int, int] | None:
    """(major, minor) of the cluster's kube-apiserver (GET /version)."""
    return parse_server_version(conn.get_json("/version"))


class StatusLine:
    """One line redrawn in place on a terminal (`listing pods: 1500`, what an apply step
    waits for); silent elsewhere."""

    def __init__(self, stream: TextIO | None) -> None:
        isatty = getattr(stream, "isatty", None)
        self.stream = stream if stream is not None and isatty is not None and isatty() else None

    def show(self, text: str) -> None:
        if self.stream is not None:
            self.stream.write(f"\r\033[K{text}")
            self.stream.flush()

    def done(self) -> None:
        if self.stream is not None:
            self.stream.write("\r\033[K")
            self.stream.flush()


def list_objects(
    conn: Connection,
    resources: Iterable[Resource] = RESOURCES,
    *,
    page_size: int = 500,
    progress: TextIO | None = None,
) -> Iterator[RawObj]:
    """Every object of every resource, page by page (limit/continue), kind and
    apiVersion filled in; ClusterError when a list fails."""
    bar = StatusLine(progress)
    try:
        for resource in resources:
            query: dict[str, Any] = {"limit": page_size}
            count = 0
            while True:
                body = conn.get_json(resource.path, query)
                if not isinstance(body, dict):
                    raise ClusterError(f"{resource.path}: the list answer is not an object")
                api_version = body.get("apiVersion") or "v1"
                items = body.get("items") or []
                if not isinstance(items, list):
                    raise ClusterError(f"{resource.path}: items is not a list")
                for item in items:
                    if isinstance(item, dict):
                        item.setdefault("kind", resource.kind)
                        item.setdefault("apiVersion", api_version)
                        count += 1
                        yield item
                bar.show(f"listing {resource.kind}s from {conn.name}: {count}")
                token = as_mapping(body.get("metadata")).get("continue")
                if not token:
                    break
                query = {"limit": page_size, "continue": token}
    finally:
        bar.done()


def list_snapshot(
    conn: Connection,
    resources: Iterable[Resource] = RESOURCES,
    *,
    page_size: int = 500,
    progress: TextIO | None = None,
) -> tuple[Snapshot, tuple[int, int] | None]:
    """A Snapshot of the resources (trimmed as a live source trims them) and the
    cluster's version; ClusterError when the cluster cannot be read."""

    version = server_version(conn)
    objects = list_objects(conn, resources, page_size=page_size, progress=progress)
    return Snapshot.from_objects(snapshot_objects(objects)), version

"""Evictions at the cluster edge: the Eviction API's one write (POST on a pod's
`eviction` subresource, policy/v1) and the reads a plan carried out needs.

    cluster = LiveCluster(conn)
    seen = cluster.read()                        # Seen(state, pods): the whole cluster, listed
    pods = cluster.pods("shop")                  # one namespace's pods, as the API returns them
    answer = cluster.evict("shop", "web-0", uid) # answers.Answer: evicted, refused (429), gone ...

Besides webhook/audit/report/policyreports.py, this is the only module that writes to a
cluster, and it sends one verb, POST, to one kind of path: an Eviction, never a
DELETE (a deletion would bypass PodDisruptionBudgets; the Eviction API applies them
and answers 429 when one says no). Each eviction carries the pod's uid as a
precondition, so a pod recreated under the same name (a StatefulSet's) is never
evicted by a request meant for its predecessor (409). Requests are raw JSON sent by
webhook/cluster/rest.py, as lister.py reads; no client model class is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from webhook.api.kube import RawObj, as_dict
from webhook.audit.act.answers import Answer, eviction_answer
from webhook.audit.state.inventory import ClusterState, Collector
from webhook.audit.state.reader import read_cluster
from webhook.cluster.rest import ClusterError, send

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.cluster.lister import Connection

__all__ = ["LiveCluster", "Seen", "eviction_request"]


@dataclass
class Seen:
    """One read of the cluster: the audit's state (running pods, owners, the model)
    and every pod as the audit keeps it, terminating and pending ones included (what
    tells an eviction in flight)."""

    state: ClusterState
    pods: list[RawObj]


def eviction_request(namespace: str, name: str, uid: str | None) -> RawObj:
    """The policy/v1 Eviction for a pod, with its uid as a precondition when known."""
    body: RawObj = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    if uid:
        body["deleteOptions"] = {"preconditions": {"uid": uid}}
    return body


def _seen(collected: Collector) -> Seen:
    return Seen(collected.state(), collected.pods)


def seen_from(objects: Any) -> Seen:
    """A Seen from listed objects (or a snapshot's items)."""
    return _seen(Collector.of(objects))


class LiveCluster:
    """The cluster a plan is carried out on, through one Connection."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def read(self) -> Seen:
        """Everything an audit lists, once; ClusterError when the cluster cannot be read."""
        return _seen(read_cluster(self.conn))

    def pods(self, namespace: str) -> list[RawObj]:
        """The namespace's pods, full objects (uids, conditions); ClusterError on failure."""
        body = self.conn.get_json(f"/api/v1/namespaces/{namespace}/pods")
        items = as_dict(body).get("items")
        if not isinstance(items, list):
            raise ClusterError(f"/api/v1/namespaces/{namespace}/pods: items is not a list")
        return [dict(item, kind="Pod") for item in items if isinstance(item, dict)]

    def evict(self, namespace: str, name: str, uid: str | None) -> Answer:
        """POST the pod's Eviction; the answer as answers.Answer (rest.Unreachable, a
        ClusterError, when nothing answered)."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
        reply = send(self.conn, "POST", path, eviction_request(namespace, name, uid))
        return eviction_answer(reply.status, reply.json(), namespace)

"""A cluster that keeps changing, for the churn tests (server and audit).

    world = ChurnWorld(seed)
    fake.add(obj) for obj in world.initial()
    for _ in range(n): world.step(fake)        # one event: add, modify or delete
    world.objects()                             # the objects as they are now

Two parts. The frozen part never changes: Namespace `frozen`, nodes f1 (zone fz-a)
and f2 (zone fz-b, tainted frozen=true:NoSchedule), both labelled pool=frozen, two
`app=steady` pods on f1 and the Service `steady` selecting them. The churn part is
everything else: nodes c00..c15 (pool=churn) in zones za/zb/zc come and go, get tainted,
cordoned, relabelled to another zone, list other images; pods of Namespace `churn`
are created bound or pending, bound later, marked terminating, finish, are
relabelled and deleted; a Service and a ReplicaSet come and go. Churn pods only ever
name churn nodes, carry no term over the frozen zones and live in another namespace,
so an answer about a pod of `frozen` pinned to pool=frozen reads only the frozen
part.

Seeded: the same seed gives the same events (`seed()` reads TOPOSPREAD_SEED).
"""

from __future__ import annotations

import copy
import os
import random
from typing import Any, Protocol

from tests.builders import HOSTNAME, ZONE, make_node, make_pod, selector, with_affinity

RawObj = dict[str, Any]
ZONES = ("za", "zb", "zc")
IMAGES = ("img-a:1", "img-b:1", "img-c:1")
APPS = ("web", "db", "batch")
MAX_NODES = 16
DEFAULT_SEED = 20261127


def seed() -> int:
    """TOPOSPREAD_SEED when set, else a fixed default (reported by the tests)."""
    raw = os.environ.get("TOPOSPREAD_SEED", "")
    return int(raw) if raw.strip() else DEFAULT_SEED


class Cluster(Protocol):
    """What the world drives: the fake API server's add / modify / delete."""

    def add(self, obj: RawObj) -> RawObj: ...

    def modify(self, obj: RawObj) -> RawObj: ...

    def delete(self, obj: RawObj) -> None: ...


def namespace(name: str) -> RawObj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"team": name}},
    }


def service(name: str, ns: str, app: str) -> RawObj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": {"app": app}},
    }


def replica_set(name: str, ns: str, app: str) -> RawObj:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": app}}},
    }


def frozen_objects() -> list[RawObj]:
    nodes = [
        make_node().name("f1").hostname().zone("fz-a").label("pool", "frozen"),
        make_node().name("f2").hostname().zone("fz-b").label("pool", "frozen"),
    ]
    nodes[1] = nodes[1].taint("frozen", "true")
    out = [namespace("frozen")]
    out += [n.allocatable(cpu="8", memory="16Gi", pods="50").obj() for n in nodes]
    for i in range(2):
        pod = make_pod().name(f"steady-{i}").namespace("frozen").label("app", "steady")
        out.append(pod.node("f1").requests(cpu="100m").obj())
    out.append(service("steady", "frozen", "steady"))
    return out


class ChurnWorld:
    """The objects of both parts and the random events that change the churn part."""

    def __init__(self, seed_: int) -> None:
        self.rng = random.Random(seed_)
        self._objects: dict[tuple[str, str, str], RawObj] = {}
        self._next = 0
        self.events = 0
        # Every node name the world ever held, and the fewest and most nodes at once:
        # what any state between the start and the end can show of the nodes.
        self.node_names: set[str] = set()
        self.node_counts = (0, 0)

    # ---- the objects ------------------------------------------------------------------

    def initial(self) -> list[RawObj]:
        objs = [*frozen_objects(), namespace("churn")]
        objs += [self._node(f"c{i:02d}") for i in range(10)]
        objs += [service("web", "churn", "web"), replica_set("web", "churn", "web")]
        for _ in range(24):
            objs.append(self._pod(bound=True))
        for obj in objs:
            self._objects[_key(obj)] = obj
        self._count_nodes(initial=True)
        return copy.deepcopy(objs)

    def _count_nodes(self, *, initial: bool = False) -> None:
        nodes = [k[2] for k in self._objects if k[0] == "Node"]
        self.node_names.update(nodes)
        lo, hi = (len(nodes), len(nodes)) if initial else self.node_counts
        self.node_counts = (min(lo, len(nodes)), max(hi, len(nodes)))

    def objects(self) -> list[RawObj]:
        return copy.deepcopy(list(self._objects.values()))

    def _of(self, kind: str) -> list[RawObj]:
        return [o for (k, _, _), o in sorted(self._objects.items()) if k == kind]

    def _churn_nodes(self) -> list[RawObj]:
        return [n for n in self._of("Node") if n["metadata"]["name"].startswith("c")]

    def _churn_pods(self) -> list[RawObj]:
        return [p for p in self._of("Pod") if p["metadata"]["namespace"] == "churn"]

    def _node(self, name: str) -> RawObj:
        rng = self.rng
        b = make_node().name(name).hostname().zone(rng.choice(ZONES)).label("pool", "churn")
        b = b.allocatable(cpu=rng.choice(["2", "4"]), memory="8Gi", pods="20")
        images = rng.sample(IMAGES, rng.randint(0, 2))
        return b.images([{"names": [i], "sizeBytes": 300 * 1024 * 1024} for i in images]).obj()

    def _pod(self, *, bound: bool) -> RawObj:
        rng = self.rng
        self._next += 1
        app = rng.choice(APPS)
        b = make_pod().name(f"{app}-{self._next}").namespace("churn").label("app", app)
        b = b.requests(cpu=rng.choice(["100m", "250m", "500m"]))
        if app == "web":
            b = b.owner("ReplicaSet", "web", "uid-web")
            b = b.spread(1, ZONE, "DoNotSchedule", selector({"app": "web"}))
        nodes = self._churn_nodes()
        if bound and nodes:
            b = b.node(rng.choice(nodes)["metadata"]["name"])
        pod = b.obj()
        pod["spec"]["containers"][0]["image"] = rng.choice(IMAGES)
        if app == "db" and rng.random() < 0.5:
            with_affinity(pod, "In", "app", HOSTNAME, ["db"], anti=True)
        return pod

    # ---- the events -------------------------------------------------------------------

    def step(self, cluster: Cluster) -> None:
        """One random event on the churn part, sent to `cluster`."""
        self.events += 1
        roll = self.rng.random()
        if roll < 0.3:
            self._node_event(cluster)
        elif roll < 0.95:
            self._pod_event(cluster)
        else:
            self._workload_event(cluster)
        self._count_nodes()

    def _add(self, cluster: Cluster, obj: RawObj) -> None:
        self._objects[_key(obj)] = obj
        cluster.add(obj)

    def _modify(self, cluster: Cluster, obj: RawObj) -> None:
        self._objects[_key(obj)] = obj
        cluster.modify(obj)

    def _delete(self, cluster: Cluster, obj: RawObj) -> None:
        del self._objects[_key(obj)]
        cluster.delete(obj)

    def _node_event(self, cluster: Cluster) -> None:
        rng = self.rng
        nodes = self._churn_nodes()
        what = rng.choice(["add", "delete", "taint", "cordon", "zone", "images", "images"])
        if what == "add" or len(nodes) < 6:
            taken = {n["metadata"]["name"] for n in nodes}
            free = [f"c{i:02d}" for i in range(MAX_NODES) if f"c{i:02d}" not in taken]
            if free:
                self._add(cluster, self._node(rng.choice(free)))
            return
        node = copy.deepcopy(rng.choice(nodes))
        if what == "delete":
            if len(nodes) > 6:
                self._delete(cluster, node)
            return
        spec = node.setdefault("spec", {})
        # Taints and cordons are set a third of the time and lifted otherwise, so
        # most nodes stay usable.
        if what == "taint":
            spec.pop("taints", None)
            if rng.random() < 0.3:
                spec["taints"] = [{"key": "churn", "value": "x", "effect": "NoSchedule"}]
        elif what == "cordon":
            spec.pop("unschedulable", None)
            if rng.random() < 0.3:
                spec["unschedulable"] = True
        elif what == "zone":
            node["metadata"]["labels"][ZONE] = rng.choice(ZONES)
        else:
            images = rng.sample(IMAGES, rng.randint(0, 3))
            node.setdefault("status", {})["images"] = [
                {"names": [i], "sizeBytes": 300 * 1024 * 1024} for i in images
            ]
        self._modify(cluster, node)

    def _pod_event(self, cluster: Cluster) -> None:
        rng = self.rng
        pods = self._churn_pods()
        what = rng.choice(
            ["add", "add", "pending", "bind", "terminate", "finish", "label", "delete", "delete"]
        )
        if what in ("add", "pending") or not pods:
            self._add(cluster, self._pod(bound=what != "pending"))
            return
        pod = copy.deepcopy(rng.choice(pods))
        if what == "bind":
            nodes = self._churn_nodes()
            if pod["spec"].get("nodeName") or not nodes:
                return
            pod["spec"]["nodeName"] = rng.choice(nodes)["metadata"]["name"]
        elif what == "terminate":
            pod["metadata"]["deletionTimestamp"] = "2026-11-27T10:00:00Z"
        elif what == "finish":
            pod.setdefault("status", {})["phase"] = "Succeeded"
        elif what == "label":
            pod["metadata"]["labels"]["tier"] = rng.choice(["front", "back"])
        else:
            self._delete(cluster, pod)
            return
        self._modify(cluster, pod)

    def _workload_event(self, cluster: Cluster) -> None:
        rng = self.rng
        kind, make = rng.choice([("Service", service), ("ReplicaSet", replica_set)])
        name = rng.choice(["db", "batch"])
        held = self._objects.get((kind, "churn", name))
        if held is not None:
            self._delete(cluster, held)
        else:
            self._add(cluster, make(name, "churn", name))


def _key(obj: RawObj) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace") or "", meta["name"])

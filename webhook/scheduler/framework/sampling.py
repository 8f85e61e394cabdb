"""How kube-scheduler samples nodes on a big cluster: the node tree's zone-interleaved
order, numFeasibleNodesToFind, the start index carried from cycle to cycle, and the
random draws (ties among the best nodes, preemption's candidate offset) of one run.

Port of backend/cache/node_tree.go (nodeTree: addNode, removeNode, updateNode, list),
of component-helpers' topology.GetZoneKey, and of schedule_one.go's
numFeasibleNodesToFind and the scan of findNodesThatPassFilters.

The model still judges every node (the filter phase is grouped, so that costs little);
`Sampler.find` then walks the verdicts in the tree's order from the start index as
findNodesThatPassFilters walks the nodes, and only the nodes it finds are scored.

CAVEAT: upstream filters 16 nodes at a time in parallel and stops when one goroutine
finds one feasible node too many; the nodes it found are the first numNodesToFind
feasible ones of the order only up to that race. Here the scan is sequential (the
order a single worker gives): the same count, the same start index carried over.
CAVEAT: the draws come from Python's random.Random(seed), not Go's math/rand: a seed
gives the same answer on every run here, and the distribution of answers over seeds is
upstream's (uniform among tied nodes, uniform candidate offset), not its exact draws.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, count, islice, repeat
from operator import attrgetter, is_

from webhook.scheduler.framework.snapshot import NodeInfo, NodeTable, Snapshot

__all__ = [
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "NodeTree",
    "Sampler",
    "Scan",
    "num_feasible_nodes_to_find",
    "zone_key",
]

# schedule_one.go: below this many nodes every node is scored; and at least this many
# feasible nodes are looked for.
MIN_FEASIBLE_NODES_TO_FIND = 100
# schedule_one.go: the adaptive percentage never goes below this.
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5

_REGION = "topology.kubernetes.io/region"
_ZONE = "topology.kubernetes.io/zone"
_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def zone_key(labels: Mapping[str, str]) -> str:
    """The node tree's zone of a node: "" without region and zone labels, else
    "<region>:\\x00:<zone>" (the GA labels first, the beta ones in their absence).

    Port of component-helpers/node/topology: GetZoneKey."""
    region = labels.get(_REGION) or labels.get(_BETA_REGION) or ""
    zone = labels.get(_ZONE) or labels.get(_BETA_ZONE) or ""
    if not region and not zone:
        return ""
    # The NUL keeps "a:b" + "c" apart from "a" + "b:c".
    return f"{region}:\x00:{zone}"


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes a cycle looks for before it stops filtering.

    percentage: the profile's percentageOfNodesToScore, else the global one (0:
    adaptive, 50 % less 1 % per 125 nodes, at least 5 %). Go's int32 arithmetic: every
    value is non-negative, so Python's floor division is Go's truncation.

    Port of schedule_one.go: numFeasibleNodesToFind."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = 50 - num_all_nodes // 125
        if percentage < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            percentage = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num_nodes = num_all_nodes * percentage // 100
    if num_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return MIN_FEASIBLE_NODES_TO_FIND
    return num_nodes


class NodeTree:
    """Node names by zone, zones in the order they were first seen, nodes in the order
    they were added; `list` interleaves the zones round robin.

    Port of backend/cache/node_tree.go: nodeTree."""

    def __init__(self) -> None:
        # zone key -> its nodes, in the order they were added (never empty)
        self.tree: dict[str, list[str]] = {}
        # every zone key of `tree`, in the order each was first added
        self.zones: list[str] = []
        # how many names `tree` holds
        self.num_nodes = 0
        # (zone, name) of every node held: upstream scans the zone's list to find a
        # name, which makes building a tree of n nodes cost n * n / zones
        self._held: set[tuple[str, str]] = set()

    def add_node(self, name: str, zone: str) -> None:
        """Port of nodeTree.addNode: a name already in its zone is not added twice."""
        if (zone, name) in self._held:
            return
        self._held.add((zone, name))
        names = self.tree.get(zone)
        if names is None:
            self.zones.append(zone)
            self.tree[zone] = [name]
        else:
            names.append(name)
        self.num_nodes += 1

    def remove_node(self, name: str, zone: str) -> bool:
        """Port of nodeTree.removeNode: False (upstream's error) when the node is not in
        that zone; a zone left empty is dropped."""
        names = self.tree.get(zone)
        if names is None or (zone, name) not in self._held:
            return False
        self._held.discard((zone, name))
        names.remove(name)
        if not names:
            del self.tree[zone]
            self.zones.remove(zone)
        self.num_nodes -= 1
        return True

    def update_node(self, name: str, old_zone: str | None, new_zone: str) -> None:
        """Port of nodeTree.updateNode: a node whose zone changed moves to the end of
        its new zone (old_zone None: the node was unknown)."""
        if old_zone == new_zone:
            return
        if old_zone is not None:
            self.remove_node(name, old_zone)
        self.add_node(name, new_zone)

    def copy(self) -> NodeTree:
        """An independent tree with the same zones and nodes, in the same order."""
        other = NodeTree()
        other.tree = {zone: list(names) for zone, names in self.tree.items()}
        other.zones = list(self.zones)
        other.num_nodes = self.num_nodes
        other._held = set(self._held)
        return other

    def list(self) -> list[str]:
        """Every node, zones interleaved: the first node of each zone in zone order,
        then the second of each, and so on (an exhausted zone is skipped).

        Port of nodeTree.list."""
        out: list[str] = []
        index = 0
        while len(out) < self.num_nodes:
            for zone in self.zones:
                names = self.tree[zone]
                if index < len(names):
                    out.append(names[index])
            index += 1
        return out


_LABELS = attrgetter("labels")
# The draw randrange(n) makes on random.Random, which Sampler.reservoir makes inline.
_RANDBELOW = getattr(random.Random, "_randbelow_with_getrandbits", None)


def _marked(size: int, positions: Iterable[int]) -> bytearray:
    """`size` bytes, 1 at each of `positions` (set in C: a scan marks thousands of
    feasible nodes per decision)."""
    out = bytearray(size)
    deque(map(out.__setitem__, positions, repeat(1)), maxlen=0)
    return out


def _same(a: Sequence[object], b: Sequence[object]) -> bool:
    """Whether two lists hold the very same objects, in order (compared in C)."""
    return len(a) == len(b) and all(map(is_, a, b))


# The tree a fresh run built, by the identity of the table's list of names (shared by a
# snapshot and its copies): (that list, the nodes' label dicts, the tree, each node's
# zone, the order). Each --runs run starts a fresh Sampler over the same nodes.
_FIRST_TREES: dict[
    int, tuple[list[str], list[Mapping[str, str]], NodeTree, dict[str, str], list[int]]
] = {}
_FIRST_TREES_KEPT = 4


class Scan:
    """What one cycle's findNodesThatPassFilters did.

    found: the positions (in the node table) of the feasible nodes it kept, in the
    order it met them (at most num_to_find); processed: how many nodes it looked at
    (the feasible ones kept and every failing one it met); start: where it began in the
    tree's order; num_to_find: numFeasibleNodesToFind; num_nodes: the nodes in the tree.
    """

    __slots__ = ("found", "processed", "start", "num_to_find", "num_nodes", "percentage")

    def __init__(
        self,
        found: list[int],
        processed: int,
        start: int,
        num_to_find: int,
        num_nodes: int,
        percentage: int,
    ) -> None:
        self.found = found
        self.processed = processed
        self.start = start
        self.num_to_find = num_to_find
        self.num_nodes = num_nodes
        self.percentage = percentage


class Sampler:
    """One run of kube-scheduler's sampling: its node tree, nextStartNodeIndex and
    random source, carried from cycle to cycle (a simulation's copies, a drill's queue,
    a plan's moves).

    percentage: --percentage-of-nodes-to-score, None to take the profile's (a profile
    without one then runs unsampled unless `always`); seed: the random source's seed.
    """

    def __init__(self, percentage: int | None = None, seed: int = 0, always: bool = True) -> None:
        if percentage is not None and not 0 <= percentage <= 100:
            raise ValueError(f"percentageOfNodesToScore must be in 0..100, got {percentage}")
        self.percentage = percentage
        self.seed = seed
        self.always = always
        # A seeded draw replaying kube-scheduler's tie-breaks, not a secret.
        self.rng = random.Random(seed)  # nosec B311
        # While not None, the bound of every draw made, in order (a cycle's draws, for
        # a caller that answers a twin cycle without running it: replay).
        self.draws: list[int] | None = None
        self.next_start = 0
        self.tree = NodeTree()
        # node name -> its zone key in `tree`
        self._zones: dict[str, str] = {}
        # the node names and labels the order was last worked out for (by identity),
        # and that order (positions in the table)
        self._names: list[str] | None = None
        self._labels: list[Mapping[str, str]] = []
        self._order: list[int] = []
        # the snapshot and its topology version the order was last checked against
        self._topology: tuple[Snapshot, int] | None = None
        # the feasible positions `find` was last given (by identity) and their marks
        self._passes: tuple[Sequence[int], bytearray] | None = None

    def percentage_for(self, profile_percentage: int | None) -> int | None:
        """The percentage a cycle of this profile samples with; None: no sampling."""
        if self.percentage is not None:
            return self.percentage
        if profile_percentage is not None:
            return profile_percentage
        return 0 if self.always else None

    def order(self, table: NodeTable, snapshot: Snapshot | None = None) -> list[int]:
        """The table's positions in the node tree's order (upstream's nodeInfoList),
        the tree first brought up to date: nodes gone are removed, new nodes added in
        name order (the order of a List, which the cache's informer starts from), a
        node whose zone changed moved to the end of its new zone.

        Worked out again only when the nodes or their labels changed (a snapshot's
        copies share its list of names and the nodes' label dicts); a fresh run starts
        from the tree the last fresh run built for the same nodes (_FIRST_TREES).
        `snapshot`: the table's; while its topology version (node labels) is the one
        last seen and the nodes are the same, the order stands without reading them."""
        seen = self._topology
        if (
            snapshot is not None
            and seen is not None
            and seen[0] is snapshot
            and seen[1] == snapshot.topology_version
            and table.names is self._names
        ):
            return self._order
        if snapshot is not None:
            self._topology = (snapshot, snapshot.topology_version)
        labels = list(map(_LABELS, table.infos))
        if table.names is self._names and _same(labels, self._labels):
            return self._order
        if not self._zones:
            kept = _FIRST_TREES.get(id(table.names))
            if kept is not None and kept[0] is table.names and _same(labels, kept[1]):
                _, _, tree, zones, order = kept
                self.tree = tree.copy()
                self._zones = dict(zones)
                self._names, self._labels, self._order = table.names, labels, order
                return order
            fresh = True
        else:
            fresh = False
        self.sync(table.infos)
        position = table.position
        self._order = [position[name] for name in self.tree.list()]
        self._names, self._labels = table.names, labels
        if fresh:
            if len(_FIRST_TREES) >= _FIRST_TREES_KEPT:
                _FIRST_TREES.clear()
            _FIRST_TREES[id(table.names)] = (
                table.names,
                labels,
                self.tree.copy(),
                dict(self._zones),
                self._order,
            )
        return self._order

    def sync(self, infos: Sequence[NodeInfo]) -> None:
        """Bring the tree up to date with these nodes (a cache's node events)."""
        present = {info.name: info for info in infos}
        for name in [n for n in self._zones if n not in present]:
            self.tree.remove_node(name, self._zones.pop(name))
        for name, info in present.items():
            zone = zone_key(info.labels)
            old = self._zones.get(name)
            if old != zone:
                self.tree.update_node(name, old, zone)
                self._zones[name] = zone

    def find(
        self,
        table: NodeTable,
        feasible: Sequence[int],
        percentage: int,
        scoring: bool,
        snapshot: Snapshot | None = None,
    ) -> Scan:
        """findNodesThatPassFilters over the table from nextStartNodeIndex, from the
        cycle's verdicts (`feasible`: the positions of the nodes that pass), and the
        start index moved past the nodes it processed.

        It keeps the first numNodesToFind feasible nodes it meets and stops at the next
        feasible one (upstream cancels when one more is found), so the failing nodes in
        between are processed too. scoring False: no score plugin, one node is enough.

        Port of schedule_one.go: findNodesThatPassFilters, and the nextStartNodeIndex
        update of findNodesThatFitPod."""
        order = self.order(table, snapshot)
        n = len(order)
        start = self.next_start % n if n else 0
        num_to_find = num_feasible_nodes_to_find(percentage, n) if scoring else min(1, n)
        # The marks of the last cycle's feasible nodes stand while that very list does
        # (a Diagnosis keeps its list while no node's feasibility moves; lists handed
        # here are never changed in place).
        kept = self._passes
        if kept is not None and kept[0] is feasible and len(kept[1]) == len(table.names):
            passes = kept[1]
        else:
            passes = _marked(len(table.names), feasible)
            self._passes = (feasible, passes)
        # The tree's order from the start index; the steps at which it meets a feasible
        # node, one more than wanted (its step is where the scan stops).
        rotated = order[start:] + order[:start]
        steps = list(islice(compress(count(), map(passes.__getitem__, rotated)), num_to_find + 1))
        processed = steps[num_to_find] if len(steps) > num_to_find else n
        found = [rotated[i] for i in steps[:num_to_find]]
        self.next_start = (start + processed) % n if n else 0
        return Scan(found, processed, start, num_to_find, n, percentage)

    def nodes_in_order(self, table: NodeTable) -> list[NodeInfo]:
        """Every node in the tree's order (the snapshot's NodeInfos().List())."""
        infos = table.infos
        return [infos[i] for i in self.order(table)]

    def pick(self, candidates: Sequence[str], sums: Sequence[int]) -> str:
        """The node selectHost returns: one of those with the highest sum, each with the
        same chance (reservoir sampling: the k-th tie replaces the pick with chance
        1/k), drawn only when there is a tie.

        Port of schedule_one.go: selectHost (cntOfMaxScore, rand.Intn). The newest
        releases give every scored node a random key instead and pop the highest sum,
        then the highest key (sortedNodeScores): the same chance for every tied node,
        which is what the model keeps (its draws are not Go's anyway)."""
        best = max(sums)
        tied = list(compress(candidates, map(best.__eq__, sums)))
        return tied[self.reservoir(len(tied))]

    def reservoir(self, ties: int) -> int:
        """Which of `ties` tied nodes (in the order met) selectHost keeps: the k-th
        replaces the pick when randrange(k) draws 0, for k = 2..ties in turn. The draws
        are randrange's own, seed for seed; with Random's own algorithm (rejection over
        getrandbits) they are made inline, since a cycle on a big cluster meets
        hundreds of ties."""
        if self.draws is not None:
            self.draws.extend(range(2, ties + 1))
        rng = self.rng
        chosen = 0
        if getattr(type(rng), "_randbelow", None) is not _RANDBELOW or _RANDBELOW is None:
            for k in range(2, ties + 1):
                if rng.randrange(k) == 0:
                    chosen = k - 1
            return chosen
        getrandbits = rng.getrandbits
        for k in range(2, ties + 1):
            # random.Random._randbelow_with_getrandbits, which randrange(k) calls
            bits = k.bit_length()
            r = getrandbits(bits)
            while r >= k:
                r = getrandbits(bits)
            if r == 0:
                chosen = k - 1
        return chosen

    def _draw(self, bound: int) -> int:
        if self.draws is not None:
            self.draws.append(bound)
        return self.rng.randrange(bound)

    def replay(self, draws: Sequence[int]) -> None:
        """Make these draws again (what a cycle drew), so that answering a cycle known to
        give the same answer without running it leaves the random source where running
        it would."""
        for bound in draws:
            self._draw(bound)

    def offset(self, num_nodes: int) -> int:
        """Preemption's first candidate: rand.Int31n over the potential nodes.

        Port of default_preemption.go: GetOffsetAndNumCandidates (the offset)."""
        return self._draw(num_nodes) if num_nodes > 0 else 0

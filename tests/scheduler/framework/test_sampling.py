"""framework/sampling.py: numFeasibleNodesToFind, the node tree's order, the scan from
the start index carried across cycles, and the draws of a run; upstream's tables under
their own case names."""

from __future__ import annotations

import pytest

from tests.builders import REGION, ZONE, make_node
from webhook.scheduler.framework.sampling import (
    NodeTree,
    Sampler,
    num_feasible_nodes_to_find,
    zone_key,
)
from webhook.scheduler.framework.snapshot import Snapshot

BETA_REGION = "failure-domain.beta.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"

# schedule_one_test.go: TestNumFeasibleNodesToFind (the global percentage; "not set" is 0).
NUM_FEASIBLE = [
    ("not set percentageOfNodesToScore and nodes number not more than 50", 0, 10, 10),
    ("set percentageOfNodesToScore and nodes number not more than 50", 40, 10, 10),
    ("not set percentageOfNodesToScore and nodes number more than 50", 0, 1000, 420),
    ("set percentageOfNodesToScore and nodes number more than 50", 40, 1000, 400),
    ("not set percentageOfNodesToScore and nodes number more than 50*125", 0, 6000, 300),
    ("set percentageOfNodesToScore and nodes number more than 50*125", 40, 6000, 2400),
    # ours: the figures of the docs, and the floors
    ("adaptive on 300 nodes", 0, 300, 144),
    ("adaptive on 5000 nodes", 0, 5000, 500),
    ("a small percentage stops at minFeasibleNodesToFind", 1, 5000, 100),
    ("exactly minFeasibleNodesToFind nodes", 0, 100, 100),
    ("99 nodes: every node", 5, 99, 99),
]


@pytest.mark.parametrize(("name", "percentage", "nodes", "want"), NUM_FEASIBLE)
def test_num_feasible_nodes_to_find(name: str, percentage: int, nodes: int, want: int) -> None:
    """upstream's integer arithmetic: adaptive 50 - nodes/125 %, at least 5 %, at least
    100 nodes, every node below 100."""
    assert num_feasible_nodes_to_find(percentage, nodes) == want


# node_tree_test.go: allNodes, as (name, labels)
ALL_NODES: list[tuple[str, dict[str, str]]] = [
    ("node-0", {}),
    ("node-1", {REGION: "region-1"}),
    ("node-2", {ZONE: "zone-2"}),
    ("node-3", {REGION: "region-1", ZONE: "zone-2"}),
    ("node-4", {REGION: "region-1", ZONE: "zone-2"}),
    ("node-5", {REGION: "region-1", ZONE: "zone-3"}),
    ("node-6", {REGION: "region-2", ZONE: "zone-2"}),
    ("node-7", {REGION: "region-2", ZONE: "zone-2"}),
    ("node-8", {REGION: "region-2", ZONE: "zone-2"}),
    (
        "node-9",
        {REGION: "region-2", ZONE: "zone-2", BETA_REGION: "region-2", BETA_ZONE: "zone-2"},
    ),
    ("node-10", {BETA_REGION: "region-2", BETA_ZONE: "zone-3"}),
]


def _tree(nodes: list[tuple[str, dict[str, str]]]) -> NodeTree:
    tree = NodeTree()
    for name, labels in nodes:
        tree.add_node(name, zone_key(labels))
    return tree


def _verify(tree: NodeTree, expected: dict[str, list[str]]) -> None:
    """node_tree_test.go: verifyNodeTree."""
    assert tree.num_nodes == sum(len(v) for v in expected.values())
    assert tree.tree == expected
    assert sorted(tree.zones) == sorted(expected)


ADD_NODE = [
    ("single node no labels", ALL_NODES[:1], {"": ["node-0"]}),
    ("same node specified twice", [ALL_NODES[0], ALL_NODES[0]], {"": ["node-0"]}),
    (
        "mix of nodes with and without proper labels",
        ALL_NODES[:4],
        {
            "": ["node-0"],
            "region-1:\x00:": ["node-1"],
            ":\x00:zone-2": ["node-2"],
            "region-1:\x00:zone-2": ["node-3"],
        },
    ),
    (
        "mix of nodes with and without proper labels and some zones with multiple nodes",
        ALL_NODES[:7],
        {
            "": ["node-0"],
            "region-1:\x00:": ["node-1"],
            ":\x00:zone-2": ["node-2"],
            "region-1:\x00:zone-2": ["node-3", "node-4"],
            "region-1:\x00:zone-3": ["node-5"],
            "region-2:\x00:zone-2": ["node-6"],
        },
    ),
    (
        "nodes also using deprecated zone/region label",
        ALL_NODES[9:],
        {"region-2:\x00:zone-2": ["node-9"], "region-2:\x00:zone-3": ["node-10"]},
    ),
]


@pytest.mark.parametrize(("name", "nodes", "expected"), ADD_NODE, ids=[c[0] for c in ADD_NODE])
def test_node_tree_add_node(
    name: str, nodes: list[tuple[str, dict[str, str]]], expected: dict[str, list[str]]
) -> None:
    """node_tree_test.go: TestNodeTree_AddNode."""
    _verify(_tree(nodes), expected)


REMOVE_NODE = [
    (
        "remove a single node with no labels",
        ALL_NODES[:7],
        ALL_NODES[:1],
        {
            "region-1:\x00:": ["node-1"],
            ":\x00:zone-2": ["node-2"],
            "region-1:\x00:zone-2": ["node-3", "node-4"],
            "region-1:\x00:zone-3": ["node-5"],
            "region-2:\x00:zone-2": ["node-6"],
        },
        False,
    ),
    (
        "remove a few nodes including one from a zone with multiple nodes",
        ALL_NODES[:7],
        ALL_NODES[1:4],
        {
            "": ["node-0"],
            "region-1:\x00:zone-2": ["node-4"],
            "region-1:\x00:zone-3": ["node-5"],
            "region-2:\x00:zone-2": ["node-6"],
        },
        False,
    ),
    ("remove all nodes", ALL_NODES[:7], ALL_NODES[:7], {}, False),
    ("remove non-existing node", [], ALL_NODES[:5], {}, True),
]


@pytest.mark.parametrize(
    ("name", "existing", "remove", "expected", "error"),
    REMOVE_NODE,
    ids=[c[0] for c in REMOVE_NODE],
)
def test_node_tree_remove_node(
    name: str,
    existing: list[tuple[str, dict[str, str]]],
    remove: list[tuple[str, dict[str, str]]],
    expected: dict[str, list[str]],
    error: bool,
) -> None:
    """node_tree_test.go: TestNodeTree_RemoveNode (False is upstream's error)."""
    tree = _tree(existing)
    for node, labels in remove:
        assert tree.remove_node(node, zone_key(labels)) is not error
    _verify(tree, expected)


UPDATE_NODE = [
    (
        "update a node without label",
        ALL_NODES[:7],
        ("node-0", {REGION: "region-1", ZONE: "zone-2"}),
        {
            "region-1:\x00:": ["node-1"],
            ":\x00:zone-2": ["node-2"],
            "region-1:\x00:zone-2": ["node-3", "node-4", "node-0"],
            "region-1:\x00:zone-3": ["node-5"],
            "region-2:\x00:zone-2": ["node-6"],
        },
    ),
    (
        "update the only existing node",
        ALL_NODES[:1],
        ("node-0", {REGION: "region-1", ZONE: "zone-2"}),
        {"region-1:\x00:zone-2": ["node-0"]},
    ),
    (
        "update non-existing node",
        ALL_NODES[:1],
        ("node-new", {REGION: "region-1", ZONE: "zone-2"}),
        {"": ["node-0"], "region-1:\x00:zone-2": ["node-new"]},
    ),
]


@pytest.mark.parametrize(
    ("name", "existing", "update", "expected"), UPDATE_NODE, ids=[c[0] for c in UPDATE_NODE]
)
def test_node_tree_update_node(
    name: str,
    existing: list[tuple[str, dict[str, str]]],
    update: tuple[str, dict[str, str]],
    expected: dict[str, list[str]],
) -> None:
    """node_tree_test.go: TestNodeTree_UpdateNode (an unknown node's old zone is that of
    a node without labels, as upstream's "nonexisting-node")."""
    tree = _tree(existing)
    old = dict(ALL_NODES).get(update[0], {})
    tree.update_node(update[0], zone_key(old), zone_key(update[1]))
    _verify(tree, expected)


LIST = [
    ("empty tree", [], []),
    ("one node", ALL_NODES[:1], ["node-0"]),
    ("four nodes", ALL_NODES[:4], ["node-0", "node-1", "node-2", "node-3"]),
    (
        "all nodes",
        ALL_NODES[:9],
        ["node-0", "node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-7", "node-8"],
    ),
]


@pytest.mark.parametrize(("name", "nodes", "expected"), LIST, ids=[c[0] for c in LIST])
def test_node_tree_list(
    name: str, nodes: list[tuple[str, dict[str, str]]], expected: list[str]
) -> None:
    """node_tree_test.go: TestNodeTree_List: zones interleaved round robin."""
    assert _tree(nodes).list() == expected


MULTI = [
    (
        "add and remove all nodes",
        ALL_NODES[2:9],
        ALL_NODES[2:9],
        ["add", "add", "add", "remove", "remove", "remove"],
        [],
    ),
    (
        "add and remove some nodes",
        ALL_NODES[2:9],
        ALL_NODES[2:9],
        ["add", "add", "add", "remove"],
        ["node-3", "node-4"],
    ),
    (
        "remove three nodes",
        ALL_NODES[2:9],
        ALL_NODES[2:9],
        ["add", "add", "add", "remove", "remove", "remove", "add"],
        ["node-5"],
    ),
    (
        "add more nodes to an exhausted zone",
        [*ALL_NODES[4:9], ALL_NODES[3]],
        [],
        ["add"] * 6,
        ["node-4", "node-5", "node-6", "node-3", "node-7", "node-8"],
    ),
    (
        "remove zone and add new",
        [*ALL_NODES[3:5], *ALL_NODES[6:8]],
        ALL_NODES[3:5],
        ["add", "add", "remove", "add", "add", "remove"],
        ["node-6", "node-7"],
    ),
]


@pytest.mark.parametrize(
    ("name", "to_add", "to_remove", "operations", "expected"), MULTI, ids=[c[0] for c in MULTI]
)
def test_node_tree_multi_operations(
    name: str,
    to_add: list[tuple[str, dict[str, str]]],
    to_remove: list[tuple[str, dict[str, str]]],
    operations: list[str],
    expected: list[str],
) -> None:
    """node_tree_test.go: TestNodeTreeMultiOperations."""
    tree = NodeTree()
    adds, removes = iter(to_add), iter(to_remove)
    for op in operations:
        name_, labels = next(adds) if op == "add" else next(removes)
        if op == "add":
            tree.add_node(name_, zone_key(labels))
        else:
            tree.remove_node(name_, zone_key(labels))
    assert tree.list() == expected


def _snapshot(count: int, zones: int = 1) -> Snapshot:
    nodes = [make_node().name(f"{i}").zone(f"z{i % zones}").obj() for i in range(count)]
    return Snapshot.from_objects(nodes)


def test_fair_evaluation_for_nodes() -> None:
    """schedule_one_test.go: TestFairEvaluationForNodes: every node feasible, 30 % of
    500 nodes found per cycle, and the start index moves on by that many each cycle
    (wrapping), over more than two rounds of the cluster."""
    snap = _snapshot(500)
    table = snap.node_table()
    sampler = Sampler(30)
    nodes_to_find = num_feasible_nodes_to_find(30, 500)
    assert nodes_to_find == 150
    every = list(range(500))
    for i in range(2 * (500 // nodes_to_find + 1)):
        scan = sampler.find(table, every, 30, scoring=True)
        assert len(scan.found) == nodes_to_find
        assert sampler.next_start == (i + 1) * nodes_to_find % 500


def test_the_scan_stops_at_one_feasible_node_too_many() -> None:
    """Failing nodes between the last node kept and the next feasible one are processed
    (upstream cancels only when one more feasible node turns up); the start index moves
    past them. Legend: 200 nodes in one zone, every third feasible."""
    snap = _snapshot(200)
    table = snap.node_table()
    order = Sampler(50).order(table)
    feasible = sorted(order[i] for i in range(0, 200, 3))  # 67 feasible nodes
    sampler = Sampler(50)  # 100 to find: more than are feasible
    scan = sampler.find(table, feasible, 50, scoring=True)
    assert (len(scan.found), scan.processed, sampler.next_start) == (67, 200, 0)
    sampler = Sampler(0)
    sampler.next_start = 10
    few = sorted(order[i] for i in (12, 15, 40))
    scan = sampler.find(table, few, 0, scoring=False)  # no score plugin: one node
    assert [order.index(p) for p in scan.found] == [12]
    assert (scan.processed, sampler.next_start) == (5, 15)


def test_the_order_interleaves_zones_and_follows_nodes_that_come_and_go() -> None:
    """The scan walks the node tree's order (zones interleaved, first seen first); a
    node removed leaves it, a node added goes to the end of its zone."""
    snap = Snapshot.from_objects(
        [make_node().name(n).zone(z).obj() for n, z in [("a", "z1"), ("b", "z1"), ("c", "z2")]]
    )
    sampler = Sampler(0)

    def names() -> list[str]:
        table = snap.node_table()
        return [table.names[i] for i in sampler.order(table)]

    assert names() == ["a", "c", "b"]
    snap.delete({"kind": "Node", "metadata": {"name": "a"}})
    assert names() == ["b", "c"]
    snap.upsert(make_node().name("a0").zone("z2").obj())
    assert names() == ["b", "c", "a0"]


@pytest.mark.parametrize("ties", [2, 3, 5])
def test_select_host_draws_each_tied_node_alike(ties: int) -> None:
    """selectHost's reservoir sampling: among `ties` nodes sharing the best sum each is
    drawn about as often over seeds; a node below the best never; a seed repeats its
    draw."""
    names = [f"n{i}" for i in range(ties + 1)]
    sums = [10] * ties + [9]
    counts = dict.fromkeys(names, 0)
    for seed in range(3000):
        counts[Sampler(seed=seed).pick(names, sums)] += 1
    assert counts[names[-1]] == 0
    for name in names[:-1]:
        assert abs(counts[name] - 3000 / ties) < 3000 / ties * 0.15
    assert Sampler(seed=7).pick(names, sums) == Sampler(seed=7).pick(names, sums)


def _reservoir_by_randrange(sampler: Sampler, ties: int) -> int:
    """selectHost's reservoir sampling spelled with randrange, one draw per tie after the
    first: the reference for Sampler.reservoir's inline draws."""
    chosen = 0
    for k in range(2, ties + 1):
        if sampler.rng.randrange(k) == 0:
            chosen = k - 1
    return chosen


# (ties, seeds): powers of two and their neighbours (where rejection draws again).
RESERVOIR = [(1, range(3)), (2, range(40)), (3, range(40)), (8, range(40)),
             (9, range(40)), (64, range(20)), (500, range(10)), (1025, range(5))]


@pytest.mark.parametrize(("ties", "seeds"), RESERVOIR)
def test_reservoir_draws_what_randrange_draws(ties: int, seeds: range) -> None:
    """Sampler.reservoir keeps the node randrange's draws keep, seed for seed, leaves the
    random source where they leave it, and records one bound per draw for a replay."""
    for seed in seeds:
        fast, plain = Sampler(seed=seed), Sampler(seed=seed)
        fast.draws = []
        assert fast.reservoir(ties) == _reservoir_by_randrange(plain, ties)
        assert fast.rng.getstate() == plain.rng.getstate()
        assert fast.draws == list(range(2, ties + 1))
        replayed = Sampler(seed=seed)
        replayed.replay(fast.draws)
        assert replayed.rng.getstate() == plain.rng.getstate()


def test_no_draw_without_a_tie() -> None:
    """A single best node is taken without drawing: the random source is untouched."""
    sampler = Sampler(seed=3)
    before = sampler.rng.getstate()
    assert sampler.pick(["a", "b", "c"], [1, 5, 2]) == "b"
    assert sampler.rng.getstate() == before


def test_preemption_offset_is_uniform_and_seeded() -> None:
    """GetOffsetAndNumCandidates' offset: within the potential nodes, repeatable per seed."""
    draws = {Sampler(seed=s).offset(7) for s in range(200)}
    assert draws == set(range(7))
    assert Sampler(seed=1).offset(1000) == Sampler(seed=1).offset(1000)


def test_percentage_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="0..100"):
        Sampler(101)


def test_a_fresh_run_starts_from_the_tree_the_last_one_built() -> None:
    """A second Sampler over the same nodes (a snapshot's copy included) takes the tree
    the first built, the same order as building it; a node whose zone changed is not
    taken from it."""
    from webhook.scheduler.framework import sampling

    snap = Snapshot.from_objects(
        [make_node().name(f"n{i}").zone(f"z{i % 3}").obj() for i in range(7)]
    )
    sampling._FIRST_TREES.clear()
    built = Sampler(0).order(snap.node_table())
    assert sampling._FIRST_TREES
    copy = snap.copy()
    assert Sampler(0).order(copy.node_table()) == built
    sampling._FIRST_TREES.clear()
    assert Sampler(0).order(copy.node_table()) == built
    names = snap.node_table().names
    assert [names[i] for i in built] == ["n0", "n1", "n2", "n3", "n4", "n5", "n6"]
    snap.upsert(make_node().name("n3").zone("z1").obj())
    moved = Sampler(0).order(snap.node_table())
    assert [names[i] for i in moved] == ["n0", "n1", "n2", "n6", "n3", "n5", "n4"]


# schedule_one_test.go: TestSelectHost, (name, [(node, score)], possible hosts); the
# empty list is upstream's error.
SELECT_HOST = [
    (
        "unique properly ordered scores",
        [("machine1.1", 1), ("machine2.1", 2)],
        {"machine2.1"},
    ),
    (
        "equal scores",
        [("machine1.1", 1), ("machine1.2", 2), ("machine1.3", 2), ("machine2.1", 2)],
        {"machine1.2", "machine1.3", "machine2.1"},
    ),
    (
        "out of order scores",
        [
            ("machine1.1", 3),
            ("machine1.2", 3),
            ("machine2.1", 2),
            ("machine3.1", 1),
            ("machine1.3", 3),
        ],
        {"machine1.1", "machine1.2", "machine1.3"},
    ),
    ("empty priority list", [], None),
]


@pytest.mark.parametrize(
    ("name", "scores", "possible"), SELECT_HOST, ids=[c[0] for c in SELECT_HOST]
)
def test_select_host(name: str, scores: list[tuple[str, int]], possible: set[str] | None) -> None:
    """TestSelectHost: the host is one of the best, every seed (upstream tries ten
    times); over 50 seeds each of the best turns up."""
    names = [n for n, _ in scores]
    sums = [s for _, s in scores]
    if possible is None:
        with pytest.raises(ValueError):
            Sampler(seed=0).pick(names, sums)
        return
    drawn = {Sampler(seed=seed).pick(names, sums) for seed in range(50)}
    assert drawn == possible

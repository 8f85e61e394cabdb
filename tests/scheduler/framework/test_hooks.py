"""framework/types.py's optional hooks: checked when a profile is built, found without
getattr, and PodTopologySpread run through them like any plugin."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, ClassVar

import pytest

from tests.builders import DNS, ZONE, constraint, make_node, make_pod, selector
from webhook.scheduler.framework.runtime.framework import FilterCycle
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import (
    HOOKS,
    SUCCESS,
    ClassFilter,
    ColumnScore,
    CycleState,
    NodeInfoLike,
    PreFilterExtensions,
    Reads,
    RemovePods,
    ScoreKeyed,
    Status,
    check_hooks,
    implements,
)
from webhook.scheduler.plugins import registry
from webhook.scheduler.plugins.interpodaffinity.plugin import InterPodAffinity
from webhook.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from webhook.scheduler.profile import Framework, HookError, framework_of


class _Filter:
    """A filter plugin with nothing optional: the base the cases below add hooks to."""

    name: ClassVar[str] = "Probe"
    reads: ClassVar[Reads] = Reads()
    node_key_reads_pod: ClassVar[bool] = False

    def filter(self, state: CycleState, pod: Any, node: NodeInfoLike) -> Status:
        return SUCCESS

    def node_key(self, state: CycleState, pod: Any, node: NodeInfoLike) -> Hashable | None:
        return ()


class _Misspelt(_Filter):
    def score_node_keys(self, node: NodeInfoLike) -> Hashable:  # the hook is score_node_key
        return ()


class _Half(_Filter):
    def score_key(self, state: CycleState, pod: Any) -> Hashable:  # without score_node_key
        return ()


class _Whole(_Filter):
    def score_key(self, state: CycleState, pod: Any) -> Hashable:
        return ()

    def score_node_key(self, node: NodeInfoLike) -> Hashable:
        return ()


class _AddOnly(_Filter):
    def add_pod(self, state: CycleState, pod: Any, other: Any, node: NodeInfoLike) -> Status:
        return SUCCESS  # without remove_pod


class _MisspeltBulk(_Filter):
    def remove_pod_all(self, state: CycleState, pod: Any, pods: Any, node: Any) -> Status:
        return SUCCESS  # the hook is remove_pods


@pytest.mark.parametrize(
    ("plugin", "errors"),
    [
        (_Filter(), []),
        (_Whole(), []),
        (
            _Misspelt(),
            ["plugin 'Probe': 'score_node_keys' is not a hook; did you mean 'score_node_key'?"],
        ),
        (_Half(), ["plugin 'Probe' implements ScoreKeyed in part: score_node_key missing"]),
        (
            _AddOnly(),
            ["plugin 'Probe' implements PreFilterExtensions in part: remove_pod missing"],
        ),
        (
            _MisspeltBulk(),
            ["plugin 'Probe': 'remove_pod_all' is not a hook; did you mean 'remove_pod'?"],
        ),
    ],
    ids=[
        "no hook",
        "a whole hook pair",
        "a misspelt hook",
        "half a hook pair",
        "AddPod without RemovePod",
        "a misspelt extension",
    ],
)
def test_check_hooks(plugin: object, errors: list[str]) -> None:
    assert check_hooks(plugin) == errors


@pytest.mark.parametrize("name", sorted(registry.REGISTRY))
def test_every_in_tree_plugin_passes_the_hook_check(name: str) -> None:
    assert check_hooks(registry.new_plugin(name, None)) == []


def test_a_profile_with_a_misspelt_hook_fails_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not silently slow: the profile is refused at build, naming the plugin and hook."""
    monkeypatch.setitem(registry.REGISTRY, "TaintToleration", lambda args, features: _Misspelt())
    profile = _fresh_default_profile()
    with pytest.raises(HookError, match="'score_node_keys' is not a hook"):
        framework_of(profile)


def _fresh_default_profile() -> Any:
    from webhook.scheduler.config.profiles import resolve_configuration

    profiles, errors = resolve_configuration({})
    assert not errors
    return profiles[0]


@pytest.mark.parametrize(
    ("plugin", "hook", "expected"),
    [
        (_Whole(), ScoreKeyed, True),
        (_Half(), ScoreKeyed, False),
        (_Filter(), ClassFilter, False),
        (PodTopologySpread(), ClassFilter, True),
        (PodTopologySpread(), ColumnScore, True),
        (PodTopologySpread(), PreFilterExtensions, True),
        (PodTopologySpread(), RemovePods, True),
        (InterPodAffinity(), PreFilterExtensions, True),
        (InterPodAffinity(), RemovePods, True),
        (_AddOnly(), PreFilterExtensions, False),
    ],
)
def test_implements_needs_every_name_of_the_hook(
    plugin: object, hook: type, expected: bool
) -> None:
    assert hook in HOOKS
    assert implements(plugin, hook) is expected


def test_framework_has_no_podtopologyspread_special_case() -> None:
    """PodTopologySpread is one filter and one score plugin of the default profile, with
    its weight, like the others."""
    fw: Framework = framework_of()
    assert not {"spread_filter", "spread_args", "spread_weight"} & set(dir(fw))
    assert "PodTopologySpread" in fw.filter_names
    assert ("PodTopologySpread", 2) in [(p.name, w) for p, w in fw.scores]
    assert isinstance(fw.plugin("PodTopologySpread"), PodTopologySpread)


def test_one_framework_per_profile_and_args() -> None:
    assert framework_of() is framework_of()
    assert framework_of(None, None) is framework_of()


def test_a_class_wise_plugin_is_prepared_apart_from_the_node_wise_ones() -> None:
    """PodTopologySpread's PreFilter runs with the others; its Filter is judged per node
    class (class_wise), not in the outcomes remembered per pod spec (active)."""
    spread = PodTopologySpread()
    nodes = [make_node().name(n).zone(z).obj() for n, z in (("a", "za"), ("b", "zb"))]
    snap = Snapshot.from_objects(nodes)
    pod = make_pod().name("p").label("app", "web")
    pod = pod.constraints([constraint(1, ZONE, DNS, selector({"app": "web"}))]).obj()
    prepared = FilterCycle([spread]).prepare(pod, snap)
    assert [p.name for p in prepared.class_wise] == ["PodTopologySpread"]
    assert prepared.active == ()
    unconstrained = FilterCycle([spread]).prepare(make_pod().name("q").obj(), snap)
    assert unconstrained.class_wise == () and unconstrained.rejected == {}  # Skip

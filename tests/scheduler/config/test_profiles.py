"""KubeSchedulerConfiguration v1 profiles: defaults, multiPoint expansion, weights,
args defaults and the framework's refusals (defaults_test.go, framework_test.go's
expansion cases, and the issue's accepted / refused profiles)."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api.versions import KubeVersion, features_for
from webhook.scheduler.config.defaults import (
    DEFAULT_MULTI_POINT,
    default_args,
    merge_plugin_set,
)
from webhook.scheduler.config.profiles import ResolvedProfile, resolve_configuration
from webhook.scheduler.config.types import (
    DEFAULT_RESOURCES,
    InterPodAffinityArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    SpreadArgs,
    UtilizationShapePoint,
    VolumeBindingArgs,
)

# v1.37's filter order (NodeName first; v1.35 and v1.36 run NodeUnschedulable first).
FILTERS = (
    "NodeName",
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
)
WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "VolumeBinding": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}


def one(cfg: dict[str, Any]) -> ResolvedProfile:
    profiles, errors = resolve_configuration(cfg)
    assert errors == []
    assert len(profiles) == 1
    return profiles[0]


def profile(plugins: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"schedulerName": "p", **extra}
    if plugins is not None:
        out["plugins"] = plugins
    return {"profiles": [out]}


def test_default_profile() -> None:
    """An empty configuration is the default-scheduler profile: the issue's filters in
    order (plus DynamicResources and NodeDeclaredFeatures, on by default upstream,
    appended by applyFeatureGates) and score weights."""
    p = one({})
    assert p.scheduler_name == "default-scheduler"
    assert p.enabled("filter")[:-2] == FILTERS
    assert p.enabled("filter")[-2:] == ("DynamicResources", "NodeDeclaredFeatures")
    assert p.score_weights == WEIGHTS
    assert p.enabled("queueSort") == ("PrioritySort",)
    assert p.enabled("bind") == ("DefaultBinder",)
    assert p.enabled("postFilter") == ("DefaultPreemption", "DynamicResources")
    assert p.args["NodeResourcesFit"] == NodeResourcesFitArgs()
    assert p.args["PodTopologySpread"] == SpreadArgs()
    assert p.args["InterPodAffinity"] == InterPodAffinityArgs(1)
    assert p.args["VolumeBinding"] == VolumeBindingArgs(600, DEFAULT_VOLUME_SHAPE)


def test_default_plugin_list_matches_default_plugins_go() -> None:
    """getDefaultPlugins' multiPoint order and weights."""
    assert [n for n, _ in DEFAULT_MULTI_POINT][:3] == [
        "SchedulingGates",
        "PrioritySort",
        "NodeName",
    ]
    assert {n: w for n, w in DEFAULT_MULTI_POINT if w} == {
        k: v for k, v in WEIGHTS.items() if k != "VolumeBinding"
    }


def test_score_weight_override_keeps_order() -> None:
    """A score plugin enabled at `score` with a weight overrides the multiPoint one and
    runs first (expandMultiPointPlugins: overrides, then multiPoint, then the rest)."""
    p = one(profile({"score": {"enabled": [{"name": "ImageLocality", "weight": 5}]}}))
    assert p.enabled("score")[0] == "ImageLocality"
    assert p.score_weights["ImageLocality"] == 5
    assert p.score_weights["TaintToleration"] == 3


def test_disabled_at_one_point_only() -> None:
    """A multiPoint plugin disabled at `score` still filters."""
    p = one(profile({"score": {"disabled": [{"name": "NodeResourcesFit"}]}}))
    assert "NodeResourcesFit" not in p.enabled("score")
    assert "NodeResourcesFit" not in p.score_weights
    assert "NodeResourcesFit" in p.enabled("filter")


def test_disable_everything_and_enable_one() -> None:
    """The issue's accepted profile: multiPoint {PrioritySort, DefaultBinder, X} over
    "*", and filter disabled "*"."""
    p = one(
        profile(
            {
                "multiPoint": {
                    "enabled": [
                        {"name": "PrioritySort"},
                        {"name": "DefaultBinder"},
                        {"name": "NodePorts"},
                    ],
                    "disabled": [{"name": "*"}],
                },
                "filter": {"disabled": [{"name": "*"}]},
            }
        )
    )
    assert p.enabled("preFilter") == ("NodePorts",)
    assert p.enabled("filter") == ()
    assert p.enabled("score") == ()
    assert p.score_weights == {}


def test_profile_without_queue_sort_and_bind_is_refused() -> None:
    """kube-scheduler refuses a profile lacking a queue-sort or a bind plugin."""
    _, errors = resolve_configuration(profile({"multiPoint": {"disabled": [{"name": "*"}]}}))
    assert errors == [
        'only one queue sort plugin required for profile with scheduler name "p", but got 0',
        'at least one bind plugin is needed for profile with scheduler name "p"',
    ]


def test_unknown_and_misplaced_plugins_are_refused() -> None:
    """updatePluginList's errors."""
    _, errors = resolve_configuration(
        profile(
            {
                "filter": {"enabled": [{"name": "Nope"}, {"name": "ImageLocality"}]},
            }
        )
    )
    assert 'FilterPlugin "Nope" does not exist' in errors
    assert 'plugin "ImageLocality" does not extend FilterPlugin plugin' in errors


def test_double_registration_is_refused() -> None:
    """The same plugin twice at one point."""
    _, errors = resolve_configuration(
        profile(
            {
                "multiPoint": {"enabled": [{"name": "NodePorts"}, {"name": "NodePorts"}]},
            }
        )
    )
    assert 'plugin "NodePorts" already registered as "FilterPlugin"' in errors


def test_custom_plugin_replaces_default_in_place() -> None:
    """mergePluginSet: a custom entry with a default's name replaces it where it stands;
    other custom entries follow the defaults."""
    merged = merge_plugin_set(
        {"enabled": [{"name": "A"}, {"name": "B"}, {"name": "C"}]},
        {"enabled": [{"name": "D"}, {"name": "B", "weight": 7}], "disabled": [{"name": "C"}]},
    )
    assert merged["enabled"] == [{"name": "A"}, {"name": "B", "weight": 7}, {"name": "D"}]
    assert merged["disabled"] == [{"name": "C"}]
    star = merge_plugin_set({"enabled": [{"name": "A"}]}, {"disabled": [{"name": "*"}]})
    assert star["enabled"] == []


def test_multi_point_weight_zero_is_one() -> None:
    """getScoreWeights: a weight of 0 counts as 1."""
    p = one(profile({"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 0}]}}))
    assert p.score_weights["ImageLocality"] == 1


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(None, ScoringStrategy(), id="no args: LeastAllocated cpu/memory 1"),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated"}},
            ScoringStrategy("MostAllocated", DEFAULT_RESOURCES),
            id="a strategy without resources gets the default resources",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu"}, {"name": "memory", "weight": 3}],
                }
            },
            ScoringStrategy("LeastAllocated", (ResourceSpec("cpu", 1), ResourceSpec("memory", 3))),
            id="a resource without weight gets weight 1",
        ),
    ],
)
def test_node_resources_fit_args_defaults(raw: Any, want: ScoringStrategy) -> None:
    """SetDefaults_NodeResourcesFitArgs."""
    cfg = profile(pluginConfig=[{"name": "NodeResourcesFit", "args": raw}])
    assert one(cfg).args["NodeResourcesFit"].scoring_strategy == want


def test_plugin_args_defaults() -> None:
    """The other Set_Defaults: weights, defaultingType, timeouts."""
    assert default_args("InterPodAffinity", None) == {"hardPodAffinityWeight": 1}
    assert default_args("PodTopologySpread", {}) == {"defaultingType": "System"}
    assert default_args("VolumeBinding", None) == {
        "bindTimeoutSeconds": 600,
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
    }
    assert default_args("DefaultPreemption", None) == {
        "minCandidateNodesPercentage": 10,
        "minCandidateNodesAbsolute": 100,
    }
    assert default_args("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu"}]}) == {
        "resources": [{"name": "cpu", "weight": 1}]
    }
    assert default_args("ImageLocality", None) is None


# SetDefaults_VolumeBindingArgs with StorageCapacityScoring on (Beta, on by default
# since v1.37): 0 % utilization scores 10, 100 % scores 0.
DEFAULT_VOLUME_SHAPE = (UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0))
MOST_ALLOCATED_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(
            None,
            VolumeBindingArgs(600, DEFAULT_VOLUME_SHAPE),
            id="no args: 600 s and the default shape",
        ),
        pytest.param(
            {"bindTimeoutSeconds": 0},
            VolumeBindingArgs(0, DEFAULT_VOLUME_SHAPE),
            id="a timeout of 0 is kept (only an absent one is defaulted)",
        ),
        pytest.param(
            {"bindTimeoutSeconds": None},
            VolumeBindingArgs(600, DEFAULT_VOLUME_SHAPE),
            id="a null timeout is defaulted",
        ),
        pytest.param(
            {"bindTimeoutSeconds": 30, "shape": []},
            VolumeBindingArgs(30, DEFAULT_VOLUME_SHAPE),
            id="an empty shape gets the default shape",
        ),
        pytest.param(
            {"shape": MOST_ALLOCATED_SHAPE},
            VolumeBindingArgs(600, (UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10))),
            id="a shape of its own is kept",
        ),
    ],
)
def test_volume_binding_args_defaults(raw: Any, want: VolumeBindingArgs) -> None:
    """SetDefaults_VolumeBindingArgs, as the resolved profile's args show it."""
    cfg = profile(pluginConfig=[{"name": "VolumeBinding", "args": raw}])
    assert one(cfg).args["VolumeBinding"] == want


def test_requested_to_capacity_ratio_args() -> None:
    """The shape is read from scoringStrategy.requestedToCapacityRatio.shape."""
    cfg = profile(
        pluginConfig=[
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "RequestedToCapacityRatio",
                        "requestedToCapacityRatio": {
                            "shape": [
                                {"utilization": 0, "score": 0},
                                {"utilization": 100, "score": 10},
                            ]
                        },
                    }
                },
            }
        ]
    )
    strategy = one(cfg).args["NodeResourcesFit"].scoring_strategy
    assert [(s.utilization, s.score) for s in strategy.shape] == [(0, 0), (100, 10)]


def test_profiles_are_chosen_by_name() -> None:
    """Several profiles, each its own plugins; names must be unique."""
    qs = {"queueSort": {"enabled": [{"name": "PrioritySort"}]}}
    profiles, errors = resolve_configuration(
        {
            "profiles": [
                {"schedulerName": "a", "plugins": qs},
                {"schedulerName": "b", "plugins": {**qs, "score": {"disabled": [{"name": "*"}]}}},
            ]
        }
    )
    assert errors == []
    assert [p.scheduler_name for p in profiles] == ["a", "b"]
    assert profiles[1].enabled("score") == ()
    twice = {"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]}
    _, errors = resolve_configuration(twice)
    assert any(e.startswith("profiles[1].schedulerName: Duplicate value") for e in errors)


def test_queue_sort_must_match_across_profiles() -> None:
    """validateCommonQueueSort."""
    _, errors = resolve_configuration(
        {
            "profiles": [
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}},
                },
            ]
        }
    )
    assert any("queueSort must be the same for all profiles" in e for e in errors)


def test_scheduler_name_required_with_several_profiles() -> None:
    """Only a single profile is named default-scheduler by default."""
    _, errors = resolve_configuration({"profiles": [{}, {"schedulerName": "b"}]})
    assert "profiles[0].schedulerName: Required value" in errors


def test_duplicate_plugin_config_is_refused() -> None:
    """validatePluginConfig: one pluginConfig entry per plugin."""
    _, errors = resolve_configuration(
        profile(
            pluginConfig=[
                {"name": "InterPodAffinity", "args": {}},
                {"name": "InterPodAffinity", "args": {}},
            ]
        )
    )
    assert 'profiles[0].pluginConfig[1]: Duplicate value: "InterPodAffinity"' in errors


@pytest.mark.parametrize(
    ("minor", "first", "declared_features"),
    [
        # v1.35: NodeDeclaredFeatures alpha (off): not in the default profile.
        pytest.param(35, ("NodeUnschedulable", "NodeName"), False, id="v1.35"),
        # v1.36: the gate is beta and on: appended last.
        pytest.param(36, ("NodeUnschedulable", "NodeName"), True, id="v1.36"),
        # v1.37: GA; getDefaultPlugins lists NodeName before NodeUnschedulable.
        pytest.param(37, ("NodeName", "NodeUnschedulable"), True, id="v1.37"),
    ],
)
def test_default_profile_per_release(
    minor: int, first: tuple[str, str], declared_features: bool
) -> None:
    """Each release's getDefaultPlugins and applyFeatureGates (default_plugins.go of
    v1.35.4, v1.36.3, v1.37.2): the filter order and NodeDeclaredFeatures."""
    profiles, errors = resolve_configuration({}, features_for(KubeVersion(1, minor)))
    assert errors == []
    filters = profiles[0].enabled("filter")
    assert filters[:2] == first
    assert ("NodeDeclaredFeatures" in filters) is declared_features
    assert profiles[0].score_weights == WEIGHTS


def test_node_declared_features_gate_turned_on_in_v1_35() -> None:
    """featureGates: NodeDeclaredFeatures=true on v1.35 adds the filter, as
    applyFeatureGates does."""
    features = features_for(KubeVersion(1, 35), {"NodeDeclaredFeatures": True})
    profiles, _ = resolve_configuration({}, features)
    assert profiles[0].enabled("filter")[-1] == "NodeDeclaredFeatures"

"""The Validate*Args ports, from validation_pluginargs_test.go and the scoring strategy
tests' weight cases, as kube-scheduler renders them."""

from __future__ import annotations

import pytest

from tests.upstream_messages import KEY_REGEX
from webhook.scheduler.config.profiles import resolve_configuration
from webhook.scheduler.config.types import (
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from webhook.scheduler.config.validation import (
    validate_balanced_allocation_args,
    validate_default_preemption_args,
    validate_inter_pod_affinity_args,
    validate_node_resources_fit_args,
    validate_volume_binding_args,
)


def fit(
    *resources: ResourceSpec,
    type_: str = "LeastAllocated",
    shape: tuple[UtilizationShapePoint, ...] | None = None,
) -> NodeResourcesFitArgs:
    return NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(type_, resources, shape))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(
            fit(ResourceSpec("memory", -1), ResourceSpec("cpu", 1)),
            [
                "scoringStrategy.resources[0].weight: Invalid value: -1: "
                "resource weight of memory not in valid range (0, 100]"
            ],
            id="resource with negative weight",
        ),
        pytest.param(
            fit(ResourceSpec("memory", 1), ResourceSpec("cpu", 0)),
            [
                "scoringStrategy.resources[1].weight: Invalid value: 0: "
                "resource weight of cpu not in valid range (0, 100]"
            ],
            id="resource with zero weight",
        ),
        pytest.param(
            fit(ResourceSpec("memory", 1), ResourceSpec("cpu", 101)),
            [
                "scoringStrategy.resources[1].weight: Invalid value: 101: "
                "resource weight of cpu not in valid range (0, 100]"
            ],
            id="resource weight larger than MaxNodeScore",
        ),
        pytest.param(fit(ResourceSpec("cpu", 100)), [], id="weight 100 is valid"),
        pytest.param(
            fit(ResourceSpec("cpu", 1), type_="Invalid"),
            [
                'scoringStrategy.type: Unsupported value: "Invalid": supported values: '
                '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
            ],
            id="unsupported scoring strategy type",
        ),
        pytest.param(
            fit(ResourceSpec("cpu", 1), type_="RequestedToCapacityRatio", shape=()),
            ["scoringStrategy.shape: Required value: at least one point must be specified"],
            id="empty shape",
        ),
        pytest.param(
            fit(
                ResourceSpec("cpu", 1),
                type_="RequestedToCapacityRatio",
                shape=(
                    UtilizationShapePoint(50, 5),
                    UtilizationShapePoint(10, 11),
                    UtilizationShapePoint(101, -1),
                ),
            ),
            [
                "scoringStrategy.shape[1].utilization: Invalid value: 10: "
                "values must be sorted in increasing order",
                "scoringStrategy.shape[1].score: Invalid value: 11: not in valid range [0, 10]",
                "scoringStrategy.shape[2].utilization: Invalid value: 101: "
                "not in valid range [0, 100]",
                "scoringStrategy.shape[2].score: Invalid value: -1: not in valid range [0, 10]",
            ],
            id="shape out of order and out of range",
        ),
        pytest.param(
            NodeResourcesFitArgs(ignored_resource_groups=("example.com/x",)),
            [
                'ignoredResourceGroups[0]: Invalid value: "example.com/x": '
                "resource group name can't contain '/'"
            ],
            id="ignored resource group with a slash",
        ),
        pytest.param(
            NodeResourcesFitArgs(
                ignored_resources=("example.com/aaa", "foo"),
                ignored_resource_groups=("example.com",),
            ),
            [],
            id="IgnoredResources and IgnoredResourceGroups: valid args",
        ),
        pytest.param(
            NodeResourcesFitArgs(ignored_resources=("",)),
            [
                'ignoredResources[0]: Invalid value: "": name part must be non-empty',
                f'ignoredResources[0]: Invalid value: "": name part {KEY_REGEX}',
            ],
            id="IgnoredResources: name is empty",
        ),
    ],
)
def test_validate_node_resources_fit_args(args: NodeResourcesFitArgs, want: list[str]) -> None:
    """ValidateNodeResourcesFitArgs' messages."""
    assert validate_node_resources_fit_args(args) == want


def test_balanced_allocation_weights_must_be_one() -> None:
    """ValidateNodeResourcesBalancedAllocationArgs: weight 1 only, names unique."""
    args = NodeResourcesBalancedAllocationArgs((ResourceSpec("cpu", 2), ResourceSpec("cpu", 1)))
    assert validate_balanced_allocation_args(args, "args") == [
        "args.resources[0].weight: Invalid value: 2: must be 1",
        'args.resources[1].name: Duplicate value: "cpu"',
    ]


@pytest.mark.parametrize(("weight", "ok"), [(-1, False), (0, True), (100, True), (101, False)])
def test_hard_pod_affinity_weight_range(weight: int, ok: bool) -> None:
    """ValidateInterPodAffinityArgs: 0..100."""
    errs = validate_inter_pod_affinity_args(InterPodAffinityArgs(weight), "args")
    assert errs == (
        []
        if ok
        else [f"args.hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0-100]"]
    )


def test_default_preemption_args() -> None:
    """ValidateDefaultPreemptionArgs: ranges, and not both zero."""
    assert validate_default_preemption_args(DefaultPreemptionArgs(0, 0)) == [
        "minCandidateNodesPercentage: Invalid value: 0: "
        "cannot be zero at the same time as minCandidateNodesAbsolute",
        "minCandidateNodesAbsolute: Invalid value: 0: "
        "cannot be zero at the same time as minCandidateNodesPercentage",
    ]
    assert validate_default_preemption_args(DefaultPreemptionArgs(101, -1)) == [
        "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
        "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
    ]


def shape(*points: tuple[int, int]) -> tuple[UtilizationShapePoint, ...]:
    return tuple(UtilizationShapePoint(u, s) for u, s in points)


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(VolumeBindingArgs(0), [], id="zero is a valid config"),
        pytest.param(VolumeBindingArgs(10), [], id="positive value is valid config"),
        pytest.param(
            VolumeBindingArgs(-10),
            [
                "bindTimeoutSeconds: Invalid value: -10: "
                "invalid BindTimeoutSeconds, should not be a negative value"
            ],
            id="negative value is invalid config",
        ),
        pytest.param(
            VolumeBindingArgs(10, ()),
            ["shape: Required value: at least one point must be specified"],
            id="[StorageCapacityScoring=on] shape should not be empty",
        ),
        pytest.param(
            VolumeBindingArgs(10, None),
            ["shape: Required value: at least one point must be specified"],
            id="a nil shape is refused as an empty one",
        ),
        pytest.param(
            VolumeBindingArgs(10, shape((3, 3), (1, 1))),
            ["shape[1].utilization: Invalid value: 1: values must be sorted in increasing order"],
            id="[StorageCapacityScoring=on] shape points must be sorted in increasing order",
        ),
        pytest.param(
            VolumeBindingArgs(10, shape((10, 3), (10, 3))),
            ["shape[1].utilization: Invalid value: 10: values must be sorted in increasing order"],
            id="utilization values repeated",
        ),
        pytest.param(
            VolumeBindingArgs(10, shape((-1, 1), (10, -1), (20, 11), (101, 1))),
            [
                "shape[0].utilization: Invalid value: -1: not in valid range [0, 100]",
                "shape[1].score: Invalid value: -1: not in valid range [0, 10]",
                "shape[2].score: Invalid value: 11: not in valid range [0, 10]",
                "shape[3].utilization: Invalid value: 101: not in valid range [0, 100]",
            ],
            id="[StorageCapacityScoring=on] shape point: invalid utilization and score",
        ),
        pytest.param(
            VolumeBindingArgs(600, shape((0, 0), (50, 3), (100, 5))),
            [],
            id="a shape of three points",
        ),
    ],
)
def test_volume_binding_args(args: VolumeBindingArgs, want: list[str]) -> None:
    """ValidateVolumeBindingArgs with StorageCapacityScoring on (v1.37's default):
    TestValidateVolumeBindingArgs' cases for the gate on."""
    assert validate_volume_binding_args(args) == want


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(
            {
                "bindTimeoutSeconds": -1,
                "shape": [{"utilization": 50, "score": 5}, {"utilization": 50, "score": 12}],
            },
            [
                "profiles[0].pluginConfig[0].args.bindTimeoutSeconds: Invalid value: -1: "
                "invalid BindTimeoutSeconds, should not be a negative value",
                "profiles[0].pluginConfig[0].args.shape[1].utilization: Invalid value: 50: "
                "values must be sorted in increasing order",
                "profiles[0].pluginConfig[0].args.shape[1].score: Invalid value: 12: "
                "not in valid range [0, 10]",
            ],
            id="timeout, order and score refused with the profile path",
        ),
        pytest.param(
            {"shape": [{"utilization": 101, "score": 0}]},
            [
                "profiles[0].pluginConfig[0].args.shape[0].utilization: Invalid value: 101: "
                "not in valid range [0, 100]"
            ],
            id="utilization past 100",
        ),
        pytest.param(
            {"shape": {"utilization": 0, "score": 10}},
            [
                'profiles[0].pluginConfig[0].args: Invalid value: {"shape":{"score":10,'
                "\"utilization\":0}}: shape: must be a list, got {'utilization': 0, 'score': 10}"
            ],
            id="a shape that is not a list",
        ),
        pytest.param({"shape": [{"utilization": 0, "score": 0}]}, [], id="one point is enough"),
    ],
)
def test_volume_binding_shape_in_a_profile(args: dict[str, object], want: list[str]) -> None:
    """A profile's VolumeBinding shape is accepted, or refused with kube-scheduler's
    messages under the profile's path."""
    _, errors = resolve_configuration(
        {"profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": args}]}]}
    )
    assert errors == want


def test_plugin_config_errors_carry_the_profile_path() -> None:
    """validatePluginConfig prefixes profiles[i].pluginConfig[j].args; NodeResourcesFit is
    checked when the plugin is built, without a prefix."""
    _, errors = resolve_configuration(
        {
            "profiles": [
                {
                    "schedulerName": "p",
                    "pluginConfig": [
                        {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}},
                        {"name": "PodTopologySpread", "args": {"defaultingType": "Other"}},
                        {
                            "name": "NodeResourcesFit",
                            "args": {
                                "scoringStrategy": {
                                    "type": "LeastAllocated",
                                    "resources": [{"name": "cpu", "weight": 200}],
                                }
                            },
                        },
                    ],
                }
            ]
        }
    )
    assert errors == [
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 101: "
        "not in valid range [0-100]",
        'profiles[0].pluginConfig[1].args.defaultingType: Unsupported value: "Other": '
        'supported values: "System", "List"',
        "scoringStrategy.resources[0].weight: Invalid value: 200: "
        "resource weight of cpu not in valid range (0, 100]",
    ]

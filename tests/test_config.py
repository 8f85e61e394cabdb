"""Settings: the scheduler configuration read once, from the config key
`schedulerConfiguration` or a --scheduler-config file (which wins), with the older
`podTopologySpread` key meaning a PodTopologySpread pluginConfig entry.

Legend: KSC is a KubeSchedulerConfiguration header; `profiles` expectations map each
profile's schedulerName to (filter plugins, score weights) or to the PodTopologySpread
args it resolves to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.config import (
    FORESIGHT_DEFAULT_BUDGET_MS,
    FORESIGHT_MAX_BUDGET_MS,
    SCHEDULER_CONFIG_KEY,
    Settings,
    default_profiles,
    load_scheduler_config,
    load_settings,
    settings_from_dict,
)
from webhook.errors import ConfigError
from webhook.scheduler.config.profiles import resolve_configuration
from webhook.scheduler.config.types import InterPodAffinityArgs, SpreadArgs
from webhook.scheduler.scaleup import DEFAULT_GROUP_LABELS

KSC = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
ZONE = "topology.kubernetes.io/zone"
ZONE_DEFAULT = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}
LIST_ZONE = {"defaultingType": "List", "defaultConstraints": [ZONE_DEFAULT]}
LIST_ZONE_ARGS = SpreadArgs((ZONE_DEFAULT,), "List")
ONLY_NODE_AFFINITY = {
    "multiPoint": {
        "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}, {"name": "NodeAffinity"}],
        "disabled": [{"name": "*"}],
    },
    "filter": {"disabled": [{"name": "*"}]},
}


def ksc(*profiles: dict[str, Any]) -> dict[str, Any]:
    return {**KSC, "profiles": list(profiles)}


def pts_config(args: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": "PodTopologySpread", "args": args}]


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------
# Valid configurations: what each profile resolves to


def test_default_settings_hold_the_default_profile() -> None:
    """No config at all: kube-scheduler's default-scheduler profile, built once."""
    settings = Settings()
    assert settings.scheduler == resolve_configuration({})[0]
    assert [p.scheduler_name for p in settings.scheduler] == ["default-scheduler"]
    assert settings.scheduler is default_profiles()
    assert load_settings(None).scheduler is default_profiles()
    assert settings.spread == SpreadArgs((), "System")


VALID: list[tuple[str, dict[str, Any], dict[str, tuple[tuple[str, ...], dict[str, int]]]]] = [
    (
        "two profiles, the second scoring with ImageLocality alone",
        ksc(
            {"schedulerName": "default-scheduler"},
            {
                "schedulerName": "images",
                "plugins": {
                    "score": {
                        "disabled": [{"name": "*"}],
                        "enabled": [{"name": "ImageLocality", "weight": 5}],
                    }
                },
            },
        ),
        {
            "default-scheduler": (
                default_profiles()[0].enabled("filter"),
                dict(default_profiles()[0].score_weights),
            ),
            "images": (default_profiles()[0].enabled("filter"), {"ImageLocality": 5}),
        },
    ),
    (
        "multiPoint disable-all + enable NodeAffinity",
        ksc({"schedulerName": "only-affinity", "plugins": ONLY_NODE_AFFINITY}),
        {"only-affinity": ((), {"NodeAffinity": 1})},
    ),
    (
        "a single unnamed profile is default-scheduler",
        ksc({"plugins": {"score": {"enabled": [{"name": "TaintToleration", "weight": 7}]}}}),
        {
            "default-scheduler": (
                default_profiles()[0].enabled("filter"),
                {**default_profiles()[0].score_weights, "TaintToleration": 7},
            )
        },
    ),
]


@pytest.mark.parametrize(("name", "cfg", "want"), VALID, ids=[case[0] for case in VALID])
@pytest.mark.parametrize("where", ["key", "flag"])
def test_valid_configuration_resolves_each_profile(
    tmp_path: Path,
    name: str,
    cfg: dict[str, Any],
    want: dict[str, tuple[tuple[str, ...], dict[str, int]]],
    where: str,
) -> None:
    """The same KubeSchedulerConfiguration inline or as a file resolves the same profiles."""
    if where == "key":
        settings = load_settings(write(tmp_path, "config.yaml", {SCHEDULER_CONFIG_KEY: cfg}))
    else:
        settings = load_settings(None, write(tmp_path, "sched.yaml", cfg))
    got = {
        p.scheduler_name: (p.enabled("filter"), dict(p.score_weights)) for p in settings.scheduler
    }
    assert got == want


def test_profile_for_follows_the_scheduler_name() -> None:
    """A pod's spec.schedulerName picks its profile; "" is default-scheduler; a name no
    profile has is None (another scheduler's pod)."""
    settings = settings_from_dict(
        {
            SCHEDULER_CONFIG_KEY: ksc(
                {"schedulerName": "default-scheduler"},
                {"schedulerName": "only-affinity", "plugins": ONLY_NODE_AFFINITY},
            )
        }
    )
    default, only = settings.scheduler
    assert settings.profile_for("default-scheduler") is default
    assert settings.profile_for("") is default
    assert settings.profile_for("only-affinity") is only
    assert settings.profile_for("someone-else") is None


def test_spread_is_the_default_scheduler_profile_args() -> None:
    """Settings.spread: PodTopologySpread args of default-scheduler, wherever it is listed;
    kube-scheduler's defaults without such a profile."""
    cfg = ksc(
        {"schedulerName": "other", "pluginConfig": pts_config({"defaultingType": "List"})},
        {"schedulerName": "default-scheduler", "pluginConfig": pts_config(LIST_ZONE)},
    )
    assert settings_from_dict({SCHEDULER_CONFIG_KEY: cfg}).spread == LIST_ZONE_ARGS
    alone = ksc({"schedulerName": "other", "pluginConfig": pts_config(LIST_ZONE)})
    assert settings_from_dict({SCHEDULER_CONFIG_KEY: alone}).spread == SpreadArgs()


def test_plugin_args_come_with_upstream_defaults() -> None:
    """pluginConfig args are defaulted as kube-scheduler defaults them."""
    cfg = ksc({"pluginConfig": [{"name": "InterPodAffinity", "args": {}}]})
    profile = settings_from_dict({SCHEDULER_CONFIG_KEY: cfg}).scheduler[0]
    assert profile.args["InterPodAffinity"] == InterPodAffinityArgs(hard_pod_affinity_weight=1)


# ---------------------------------------------------------------------------------------
# Invalid configurations: refused with kube-scheduler's messages


INVALID: list[tuple[str, Any, str]] = [
    (
        "invalid resource weight",
        ksc(
            {
                "pluginConfig": [
                    {
                        "name": "NodeResourcesFit",
                        "args": {
                            "scoringStrategy": {
                                "type": "LeastAllocated",
                                "resources": [{"name": "cpu", "weight": 101}],
                            }
                        },
                    }
                ]
            }
        ),
        "scoringStrategy.resources[0].weight: Invalid value: 101: "
        "resource weight of cpu not in valid range (0, 100]",
    ),
    (
        "score weights could overflow",
        ksc({"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 2**62}]}}}),
        "total score of Score plugins could overflow",
    ),
    (
        "plugin weight not an integer",
        ksc({"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": "high"}]}}}),
        'plugin "ImageLocality": weight must be an integer',
    ),
    (
        "missing bind plugin refused",
        ksc({"schedulerName": "nobind", "plugins": {"bind": {"disabled": [{"name": "*"}]}}}),
        'at least one bind plugin is needed for profile with scheduler name "nobind"',
    ),
    (
        "unknown plugin",
        ksc({"plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}),
        'FilterPlugin "NoSuchPlugin" does not exist',
    ),
    (
        "hardPodAffinityWeight out of range",
        ksc(
            {"pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}]}
        ),
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 101: "
        "not in valid range [0-100]",
    ),
    (
        "duplicate scheduler names",
        ksc({"schedulerName": "a"}, {"schedulerName": "a"}),
        'profiles[1].schedulerName: Duplicate value: "profiles[0].schedulerName"',
    ),
]


@pytest.mark.parametrize(("name", "cfg", "message"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_configuration_is_refused_with_the_scheduler_message(
    tmp_path: Path, name: str, cfg: Any, message: str
) -> None:
    """Inline the error names the key; as a file it names the file; the message is
    resolve_configuration's (kube-scheduler's) in both."""
    with pytest.raises(ConfigError) as inline:
        settings_from_dict({SCHEDULER_CONFIG_KEY: cfg})
    assert str(inline.value) == f"{SCHEDULER_CONFIG_KEY}: {message}"
    path = write(tmp_path, "sched.yaml", cfg)
    with pytest.raises(ConfigError) as from_file:
        load_settings(None, path)
    assert str(from_file.value) == f"scheduler config {path}: {message}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("profiles: []\n", "Object 'Kind' is missing", id="no kind"),
        pytest.param(
            "kind: KubeSchedulerConfiguration\n",
            "Object 'apiVersion' is missing",
            id="no apiVersion",
        ),
        pytest.param("- a\n", "must be a KubeSchedulerConfiguration object", id="a list"),
        pytest.param("kind: [\n", "is not valid YAML", id="broken YAML"),
        pytest.param(
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            'no kind "KubeSchedulerConfiguration" is registered for version '
            '"kubescheduler.config.k8s.io/v1beta3"',
            id="an older version",
        ),
    ],
)
def test_unusable_scheduler_config_file_is_refused(tmp_path: Path, text: str, message: str) -> None:
    """The file is a single KubeSchedulerConfiguration naming kind and apiVersion, as
    kube-scheduler's decoder wants its --config file."""
    with pytest.raises(ConfigError, match=message):
        load_settings(None, write(tmp_path, "sched.yaml", text))


def test_missing_scheduler_config_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read scheduler config"):
        load_scheduler_config(tmp_path / "absent.yaml")


# ---------------------------------------------------------------------------------------
# Key and flag together; the older podTopologySpread key


def test_the_flag_wins_over_the_config_key(tmp_path: Path) -> None:
    """With both, the --scheduler-config file is the configuration; the key is not read
    (not even validated: the flag replaces it)."""
    config = write(
        tmp_path,
        "config.yaml",
        {
            SCHEDULER_CONFIG_KEY: ksc({"schedulerName": "from-key"}, {"schedulerName": "from-key"}),
            "injectDefaults": False,
        },
    )
    flag = write(tmp_path, "sched.yaml", ksc({"schedulerName": "from-flag"}))
    settings = load_settings(config, flag)
    assert [p.scheduler_name for p in settings.scheduler] == ["from-flag"]
    assert settings.inject_defaults is False  # the rest of the config still applies
    with pytest.raises(ConfigError, match="Duplicate value"):
        load_settings(config)


# name, config document (flag file or None), want: schedulerName -> PTS args
SPREAD_KEY: list[tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, SpreadArgs]]] = [
    (
        "the key alone sets the default profile's args",
        {"podTopologySpread": LIST_ZONE},
        None,
        {"default-scheduler": LIST_ZONE_ARGS},
    ),
    (
        "the key reaches every profile of the inline configuration",
        {
            "podTopologySpread": LIST_ZONE,
            SCHEDULER_CONFIG_KEY: ksc(
                {"schedulerName": "default-scheduler"}, {"schedulerName": "b"}
            ),
        },
        None,
        {"default-scheduler": LIST_ZONE_ARGS, "b": LIST_ZONE_ARGS},
    ),
    (
        "the key reaches every profile of the flag's file",
        {"podTopologySpread": LIST_ZONE},
        ksc({"schedulerName": "a"}, {"schedulerName": "b"}),
        {"a": LIST_ZONE_ARGS, "b": LIST_ZONE_ARGS},
    ),
    (
        "a profile's own PodTopologySpread pluginConfig wins over the key",
        {"podTopologySpread": {"defaultingType": "System"}},
        ksc(
            {"schedulerName": "default-scheduler", "pluginConfig": pts_config(LIST_ZONE)},
            {"schedulerName": "b"},
        ),
        {"default-scheduler": LIST_ZONE_ARGS, "b": SpreadArgs((), "System")},
    ),
    (
        "an empty key is kube-scheduler's defaults",
        {"podTopologySpread": {}},
        None,
        {"default-scheduler": SpreadArgs((), "System")},
    ),
]


@pytest.mark.parametrize(
    ("name", "config", "flag", "want"), SPREAD_KEY, ids=[c[0] for c in SPREAD_KEY]
)
def test_pod_topology_spread_key_is_a_plugin_config_entry(
    tmp_path: Path,
    name: str,
    config: dict[str, Any],
    flag: dict[str, Any] | None,
    want: dict[str, SpreadArgs],
) -> None:
    """podTopologySpread means a PodTopologySpread pluginConfig entry in every profile
    that has none of its own."""
    flag_path = write(tmp_path, "sched.yaml", flag) if flag is not None else None
    settings = load_settings(write(tmp_path, "config.yaml", config), flag_path)
    got = {p.scheduler_name: p.args["PodTopologySpread"] for p in settings.scheduler}
    assert got == want
    if "default-scheduler" in want:
        assert settings.spread == want["default-scheduler"]


def test_pod_topology_spread_key_keeps_its_own_messages() -> None:
    """An invalid podTopologySpread key is refused naming the key, as before."""
    bad = {
        "defaultingType": "List",
        "defaultConstraints": [{**ZONE_DEFAULT, "labelSelector": {"matchLabels": {"a": "b"}}}],
    }
    with pytest.raises(ConfigError, match=r"^podTopologySpread: .*defaultConstraints\[0\]"):
        settings_from_dict({"podTopologySpread": bad})
    with pytest.raises(ConfigError, match="must be a mapping"):
        settings_from_dict({"podTopologySpread": "List"})


def test_settings_do_not_change_the_raw_document() -> None:
    """The podTopologySpread entry is added to a copy: `raw` stays as written."""
    cfg = ksc({"schedulerName": "a"})
    raw = {"podTopologySpread": LIST_ZONE, SCHEDULER_CONFIG_KEY: cfg}
    settings = settings_from_dict(raw)
    assert settings.raw[SCHEDULER_CONFIG_KEY] == ksc({"schedulerName": "a"})
    assert "pluginConfig" not in cfg["profiles"][0]


@pytest.mark.parametrize(
    ("policy", "budget"),
    [
        ({}, FORESIGHT_DEFAULT_BUDGET_MS),
        ({"foresightBudgetMilliseconds": None}, FORESIGHT_DEFAULT_BUDGET_MS),
        ({"foresightBudgetMilliseconds": 0}, 0),
        ({"foresightBudgetMilliseconds": 1}, 1),
        ({"foresightBudgetMilliseconds": FORESIGHT_MAX_BUDGET_MS}, FORESIGHT_MAX_BUDGET_MS),
    ],
)
def test_foresight_budget_is_read_from_policy(policy: dict[str, Any], budget: int) -> None:
    assert settings_from_dict({"policy": policy}).foresight_budget_ms == budget


@pytest.mark.parametrize("value", [-1, FORESIGHT_MAX_BUDGET_MS + 1, 2.5, True, "25", "25ms"])
def test_foresight_budget_out_of_range_is_refused(value: Any) -> None:
    message = (
        r"^policy\.foresightBudgetMilliseconds: must be a whole number of milliseconds from 0 "
        rf"\(no unschedulable foresight\) to {FORESIGHT_MAX_BUDGET_MS}, got "
    )
    with pytest.raises(ConfigError, match=message):
        settings_from_dict({"policy": {"foresightBudgetMilliseconds": value}})


@pytest.mark.parametrize(
    ("value", "labels"),
    [
        (None, DEFAULT_GROUP_LABELS),
        (["example.com/pool"], ("example.com/pool",)),
        (["example.com/pool", "node.kubernetes.io/instance-type"],
         ("example.com/pool", "node.kubernetes.io/instance-type")),
    ],
    ids=["absent: the well-known labels", "one key", "replaces the list, in order"],
)  # fmt: skip
def test_node_group_labels_are_read(value: Any, labels: tuple[str, ...]) -> None:
    raw = {} if value is None else {"nodeGroupLabels": value}
    assert settings_from_dict(raw).node_group_labels == labels


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], r"^nodeGroupLabels: must be a non-empty list of label keys, got \[\]$"),
        ("pool", r"^nodeGroupLabels: must be a non-empty list of label keys, got 'pool'$"),
        ([7], r"^nodeGroupLabels\[0\]: Invalid value: 7: must be a string$"),
        (["a/b/c"], r"^nodeGroupLabels\[0\]: Invalid value: \"a/b/c\": a valid label key must"),
        (["pool", "pool"], r"^nodeGroupLabels: 'pool' is listed twice$"),
    ],
    ids=["empty", "not a list", "not a string", "not a label key", "twice"],
)
def test_node_group_labels_are_validated(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_from_dict({"nodeGroupLabels": value})


@pytest.mark.parametrize(
    ("policy", "separate"),
    [
        (None, False),
        ({}, False),
        ({"separateRevisions": None}, False),
        ({"separateRevisions": False}, False),
        ({"separateRevisions": True}, True),
        ({"denyUnschedulable": True}, False),
    ],
)
def test_separate_revisions_is_read_from_policy(policy: Any, separate: bool) -> None:
    """policy.separateRevisions is off unless set to true."""
    raw = {} if policy is None else {"policy": policy}
    assert settings_from_dict(raw).separate_revisions is separate


@pytest.mark.parametrize("value", ["true", 1, "yes", [True]])
def test_separate_revisions_must_be_a_bool(value: Any) -> None:
    with pytest.raises(ConfigError) as err:
        settings_from_dict({"policy": {"separateRevisions": value}})
    assert str(err.value) == f"policy.separateRevisions: must be true or false, got {value!r}"

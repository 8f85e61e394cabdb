"""Resource quantities, pod requests and node allocatable, as kube-scheduler counts them.

- `parse_quantity` follows apimachinery's `resource.ParseQuantity`: a decimal
  number with a binary (Ki..Ei), decimal (n, u, m, k, M, G, T, P, E) or
  exponent (e3, E-2) suffix; the value is rounded up to a multiple of 10^-9
  and kept exactly as an integer count of nano-units.
- `pod_requests` follows component-helpers `resource.PodRequests`: containers
  are summed, each init container is maxed against them, restartable init
  containers (sidecars) add to both, pod-level requests for cpu, memory and
  hugepages replace the container totals, and the pod overhead is added.
  The exact sums are converted once, as the scheduler's `framework.Resource`
  does: cpu to millicores, everything else to units, rounding up.
- `non_zero_requests` is `pod_requests` with the scoring defaults for cpu and
  memory a container does not request (schedutil.GetNonzeroRequests): what
  NodeResourcesFit's scoring counts, and on the node side NodeInfo.NonZeroRequested.
- `node_allocatable` reads status.allocatable the same way.

Only resources the scheduler accounts are kept: cpu, memory,
ephemeral-storage, pods, and scalar resources (extended resources,
hugepages-*, kubernetes.io/-prefixed and attachable-volumes-*).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from operator import is_not
from typing import Any

from webhook.api.kube import RawObj

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "NANO",
    "is_extended_resource_name",
    "is_scalar_resource_name",
    "milli_value",
    "node_allocatable",
    "non_zero_requests",
    "parse_quantity",
    "pod_requests",
    "unit_value",
]

NANO = 10**9
_INT64_MAX = 2**63 - 1
# Quantities are capped at maxAllowed (2^63-1 units), expressed here in nano-units.
_MAX_NANOS = _INT64_MAX * NANO

_DECIMAL_SUFFIXES = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
# Largest power of ten that can still leave a product under the cap for a mantissa >= 1.
_MAX_USEFUL_EXPONENT = len(str(_MAX_NANOS))


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def _scan(text: str) -> tuple[bool, str, str, str] | None:
    """parseQuantityString: (positive, integer digits, fraction digits, suffix) or None.

    Port of resource/quantity.go: parseQuantityString.
    """
    positive = True
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        return None
    return positive, num, denom, text[suffix_start:]


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    scanned = _scan(text)
    if scanned is None:
        return None
    positive, num, denom, suffix = scanned
    base, exponent = 10, 0
    if suffix in _DECIMAL_SUFFIXES:
        exponent = _DECIMAL_SUFFIXES[suffix]
    elif suffix in _BINARY_SUFFIXES:
        base, exponent = 2, _BINARY_SUFFIXES[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        exponent = int(suffix[1:])
        if not -(2**63) <= exponent <= _INT64_MAX:
            return None
    else:
        return None
    digits = (num + denom).lstrip("0")
    if not digits:
        return 0
    mantissa = int(digits)
    if base == 2:
        numerator, tens = mantissa << exponent, 9 - len(denom)
    else:
        numerator, tens = mantissa, exponent + 9 - len(denom)
    if tens >= _MAX_USEFUL_EXPONENT:
        nanos = _MAX_NANOS
    elif tens >= 0:
        nanos = numerator * 10**tens
    elif -tens >= len(str(numerator)) + 1:
        nanos = 1  # less than one nano-unit: rounded up to the smallest amount
    else:
        nanos = _ceil_div(numerator, 10**-tens)
    nanos = min(nanos, _MAX_NANOS)
    return nanos if positive else -nanos


def parse_quantity(value: Any) -> int | None:
    """A Kubernetes quantity in nano-units (exact, rounded up to 10^-9), or None when
    it does not parse. JSON numbers are read as their decimal text, as the API does.

    Port of resource/quantity.go: ParseQuantity.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        value = str(value)
    elif isinstance(value, float):
        value = repr(value)
    if not isinstance(value, str) or len(value) > 256:
        return None
    return _parse_text(value)


def _round_away(nanos: int, unit: int) -> int:
    # Quantity.ScaledValue rounds away from zero, and saturates here instead of wrapping.
    magnitude = _ceil_div(abs(nanos), unit)
    magnitude = min(magnitude, _INT64_MAX)
    return magnitude if nanos >= 0 else -magnitude


def milli_value(nanos: int) -> int:
    """Quantity.MilliValue of a nano-unit amount.

    Port of resource/quantity.go: MilliValue.
    """
    return _round_away(nanos, 10**6)


def unit_value(nanos: int) -> int:
    """Quantity.Value of a nano-unit amount.

    Port of resource/quantity.go: Value.
    """
    return _round_away(nanos, NANO)


_QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)


@lru_cache(maxsize=1024)
def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: not native (has a '/', no kubernetes.io/ prefix),
    not a quota "requests." name, and "requests.<name>" is a qualified name.

    Port of core/v1/helper/helpers.go: IsExtendedResourceName.
    """
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    quota_name = "requests." + name
    prefix, _, short = quota_name.rpartition("/")
    if "/" in prefix or len(prefix) > 253 or len(short) > 63:
        return False
    return _QUALIFIED_NAME.match(quota_name) is not None


@lru_cache(maxsize=1024)
def is_scalar_resource_name(name: str) -> bool:
    """schedutil.IsScalarResourceName: extended, hugepages-*, kubernetes.io/-prefixed
    native, or attachable-volumes-* resources.

    Port of scheduler/util/utils.go: IsScalarResourceName.
    """
    if "kubernetes.io/" in name:
        return True
    if name.startswith("hugepages-") or name.startswith("attachable-volumes-"):
        return True
    return is_extended_resource_name(name)


def _accounted(name: str) -> bool:
    return name in ("cpu", "memory", "ephemeral-storage") or is_scalar_resource_name(name)


def _resource_list(raw: Any) -> dict[str, int]:
    """A ResourceList as exact nano-unit amounts; unreadable entries are skipped."""
    out: dict[str, int] = {}
    if not isinstance(raw, dict):
        return out
    for name, quantity in raw.items():
        if not isinstance(name, str):
            continue
        nanos = parse_quantity(quantity)
        if nanos is not None:
            out[name] = nanos
    return out


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    """Port of resource/helpers.go: addResourceList."""
    for name, amount in more.items():
        total[name] = total.get(name, 0) + amount


def _max(total: dict[str, int], more: Mapping[str, int]) -> None:
    """Port of resource/helpers.go: maxResourceList."""
    for name, amount in more.items():
        if name not in total or amount > total[name]:
            total[name] = amount


def _requests_of(container: Any) -> dict[str, int]:
    if not isinstance(container, dict):
        return {}
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return {}
    return _resource_list(resources.get("requests"))


def _status_requests(pod: RawObj) -> dict[str, tuple[dict[str, int], dict[str, int]]]:
    """Per container name: (status.resources.requests, allocatedResources), for the
    containers whose status reports resources (in-place pod resize)."""
    status = pod.get("status")
    if not isinstance(status, dict):
        return {}
    out: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        statuses = status.get(key)
        if not isinstance(statuses, list):
            continue
        for cs in statuses:
            if not isinstance(cs, dict) or not isinstance(cs.get("resources"), dict):
                continue
            name = cs.get("name")
            if isinstance(name, str):
                out[name] = (
                    _resource_list(cs["resources"].get("requests")),
                    _resource_list(cs.get("allocatedResources")),
                )
    return out


def _resize_infeasible(pod: RawObj) -> bool:
    status = pod.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, dict) and condition.get("type") == "PodResizePending":
            return condition.get("reason") == "Infeasible"
    return False


def _effective(container: Any, statuses: dict[str, Any], infeasible: bool) -> dict[str, int]:
    """Port of resource/helpers.go: determineContainerReqs."""
    requests = _requests_of(container)
    name = container.get("name") if isinstance(container, dict) else None
    if not statuses or not isinstance(name, str) or name not in statuses:
        return requests
    status_requests, allocated = statuses[name]
    # determineContainerReqs: a pending infeasible resize falls back to what runs.
    result = {} if infeasible else dict(requests)
    _max(result, status_requests)
    _max(result, allocated)
    return result


def _aggregate_nanos(pod: RawObj, use_status: bool) -> dict[str, int]:
    """Port of resource/helpers.go: PodRequests."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return {}
    statuses = _status_requests(pod) if use_status else {}
    infeasible = bool(statuses) and _resize_infeasible(pod)
    total: dict[str, int] = {}
    containers = spec.get("containers")
    for container in containers if isinstance(containers, list) else ():
        _add(total, _effective(container, statuses, infeasible))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    init_containers = spec.get("initContainers")
    for container in init_containers if isinstance(init_containers, list) else ():
        restartable = isinstance(container, dict) and container.get("restartPolicy") == "Always"
        if restartable:
            requests = _effective(container, statuses, infeasible)
            _add(total, requests)
            _add(sidecars, requests)
            during = dict(sidecars)
        else:
            # A regular init container runs next to the sidecars started before it.
            during = dict(_requests_of(container))
            _add(during, sidecars)
        _max(init_peak, during)
    _max(total, init_peak)
    pod_level = spec.get("resources")
    if isinstance(pod_level, dict):
        for name, nanos in _resource_list(pod_level.get("requests")).items():
            if name in ("cpu", "memory") or name.startswith("hugepages-"):
                total[name] = nanos
    _add(total, _resource_list(spec.get("overhead")))
    return total


def pod_requests(pod: RawObj, *, use_status: bool = True) -> dict[str, int]:
    """The pod's effective requests: {"cpu": millicores, "memory": bytes, "pods": 1, ...}.

    `use_status` reads in-place resize state from the pod status, as the scheduler does
    for pods already bound to a node; it computes an incoming pod with it off.
    cpu and memory are always present; other resources only when requested.
    """
    out: dict[str, int] = {"cpu": 0, "memory": 0, "pods": 1}
    if not isinstance(pod, dict):
        return out
    for name, nanos in _aggregate_nanos(pod, use_status).items():
        if name == "cpu":
            out["cpu"] = milli_value(nanos)
        elif name != "pods" and _accounted(name):
            out[name] = unit_value(nanos)
    return out


# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what a container that
# requests no cpu / memory counts for scoring (pkg/scheduler/util/pod_resources.go).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

_NON_MISSING = {"cpu": f"{DEFAULT_MILLI_CPU_REQUEST}m", "memory": str(DEFAULT_MEMORY_REQUEST)}


def _with_defaults(container: Any) -> Any:
    """The container with the scoring defaults for the cpu / memory it does not request
    (the container itself when it requests both)."""
    if not isinstance(container, dict):
        return container
    resources = container.get("resources")
    resources = resources if isinstance(resources, dict) else {}
    requests = resources.get("requests")
    requests = requests if isinstance(requests, dict) else {}
    missing = {k: v for k, v in _NON_MISSING.items() if k not in requests}
    if not missing:
        return container
    return {**container, "resources": {**resources, "requests": {**requests, **missing}}}


def non_zero_requests(
    pod: RawObj, *, use_status: bool = False, requests: dict[str, int] | None = None
) -> dict[str, int]:
    """pod_requests with every container's missing cpu / memory request counted as the
    scoring defaults (PodResourcesOptions.NonMissingContainerRequests), init and
    sidecar containers included; pod-level requests and overhead as pod_requests.

    `requests`: pod_requests(pod, use_status=use_status) when the caller has it
    already; it is returned as it is when every container requests cpu and memory
    (the defaults then change nothing).

    Port of resource_allocation.go: calculatePodResourceRequest (the non-zero branch),
    and of the NonZeroRequested half of framework/types.go: calculateResource.

    CAVEAT: with `use_status`, the defaults are applied before a resized container's
    status is maxed in, where upstream applies them after; they differ only for a
    container that requests no cpu (memory) and reports less than the default.
    """
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return pod_requests(pod, use_status=use_status) if requests is None else requests
    filled = dict(spec)
    changed = False
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        if isinstance(containers, list):
            with_defaults = [_with_defaults(c) for c in containers]
            changed = changed or any(map(is_not, with_defaults, containers))
            filled[field] = with_defaults
    if not changed and requests is not None:
        return requests
    return pod_requests({**pod, "spec": filled}, use_status=use_status)


def node_allocatable(node: RawObj) -> dict[str, int] | None:
    """status.allocatable as {"cpu": millicores, "memory": bytes, "pods": n, ...}.

    None when the node reports no allocatable (absent, null or empty): the
    scheduling model treats such a node as having unlimited resources. When it is
    present, a resource it omits has none (upstream's zero value), pods included.
    """
    status = node.get("status") if isinstance(node, dict) else None
    allocatable = status.get("allocatable") if isinstance(status, dict) else None
    if not isinstance(allocatable, dict) or not allocatable:
        return None
    out: dict[str, int] = {}
    for name, nanos in _resource_list(allocatable).items():
        if name == "cpu":
            out["cpu"] = milli_value(nanos)
        elif name == "pods" or _accounted(name):
            out[name] = unit_value(nanos)
    return out

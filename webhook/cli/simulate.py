"""`topospread simulate`: where kube-scheduler would put a workload's pods, node by node.

Reads the cluster state (a snapshot file, or by default the live cluster of the
current kubeconfig context), an optional config, and manifests: every workload of
a multi-document render (Deployments, StatefulSets, Jobs, ... and the custom
workloads the config declares), or the one `--kind/--name` choose. Each workload
stands for its pod template, with the labels its controller adds to each pod
(`pod-template-hash`, `controller-revision-hash`, the Job labels) synthesised for a
new revision, so `matchLabelKeys` narrows as it does in the cluster; its
`spec.replicas` copies are placed one after another (`--replicas` overrides).
Prints every node's filter verdicts and scores, the chosen node, the placements and
the distribution. A pod no scheduling cycle is run for (another scheduler's
schedulerName, scheduling gates, resource claims: placement.not_scheduled) gets one
line saying why, and `notScheduled` in JSON; the other workloads are simulated. Exit
codes: 0 on success (even when a pod fits nowhere), 2 on bad input or an unreachable
cluster.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import multiprocessing
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from webhook.api.kube import HANDLED_KINDS, RawObj, as_dict, pod_template
from webhook.audit.drills.ranges import value_range
from webhook.cli.common import CliConfig, load_target, template_of
from webhook.cli.inputs import Document, expand_inputs, read_documents
from webhook.cluster.files import load_objects
from webhook.errors import InputError
from webhook.render.html import simulate_page
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import (
    Framework,
    Placement,
    Preemption,
    Sampler,
    Simulation,
    not_scheduled,
    simulate,
)
from webhook.scheduler.scaleup import Diagnosis, NodeGroups, Pending, diagnose, node_groups

__all__ = [
    "Workload",
    "controller_labels",
    "outcome_ranges",
    "processes",
    "sampler_for",
    "sampling_asked",
    "sampling_error",
    "read_pod",
    "TABLE_NODES",
    "render_table",
    "select_workloads",
    "without_cyclic_gc",
]

# k8s.io/apimachinery/pkg/util/rand SafeEncodeString's alphabet: no vowels, no 0/1/3.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def template_hash(template: Any) -> str:
    """A pod-template-hash shaped like the Deployment controller's (FNV-32a, safe-encoded).

    CAVEAT: upstream hashes the Go struct's printed form, so the value differs from the
    cluster's; it only needs to differ from the hash of every other revision.
    """
    digest = _fnv32a(json.dumps(template, sort_keys=True, separators=(",", ":")).encode())
    return "".join(_SAFE_ALPHABET[int(c) % len(_SAFE_ALPHABET)] for c in str(digest))


def controller_labels(obj: RawObj, template: Any) -> dict[str, str]:
    """The labels the workload's controller adds to each pod it creates, for a new revision.

    Deployment: pod-template-hash (through its ReplicaSet); StatefulSet and DaemonSet:
    controller-revision-hash (`<name>-<hash>`), DaemonSet also pod-template-generation;
    Job (and a CronJob's Jobs): the job-name and controller-uid labels, old and new.
    """
    kind = obj.get("kind")
    meta = as_dict(obj.get("metadata"))
    name = str(meta.get("name") or "")
    digest = template_hash(template)
    if kind == "Deployment":
        return {"pod-template-hash": digest}
    if kind in ("StatefulSet", "DaemonSet"):
        out = {"controller-revision-hash": f"{name}-{digest}"}
        if kind == "DaemonSet":
            out["pod-template-generation"] = str(meta.get("generation") or 1)
        return out
    if kind in ("Job", "CronJob"):
        job = name if kind == "Job" else f"{name}-{digest[:8]}"
        uid = str(meta.get("uid") or f"00000000-0000-4000-8000-{_fnv32a(job.encode()):012d}")
        return {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": job,
            "controller-uid": uid,
            "job-name": job,
        }
    return {}


def _default_replicas(obj: RawObj) -> int:
    kind = obj.get("kind")
    spec = as_dict(obj.get("spec"))
    if kind == "Job":
        value = spec.get("parallelism")
    elif kind == "CronJob":
        value = as_dict(as_dict(spec.get("jobTemplate")).get("spec")).get("parallelism")
    elif kind in ("Pod", "DaemonSet", "PodTemplate"):
        value = 1
    else:
        value = spec.get("replicas", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


@dataclass(frozen=True)
class Workload:
    """One thing to simulate: the pod it stands for and how many copies to place."""

    title: str
    pod: RawObj
    replicas: int


def workload_pod(obj: RawObj, config: CliConfig, namespace: str) -> RawObj:
    """The pod a workload creates (a Pod: itself), namespace and controller labels set."""
    kind = obj.get("kind")
    template = template_of(obj, config)
    where = f"{kind} {as_dict(obj.get('metadata')).get('name') or ''}".strip()
    if template is None:
        raise InputError(f"{where}: the {kind}'s metadata and spec must be objects")
    if kind == "Pod":
        pod = obj
    else:
        meta = as_dict(obj.get("metadata"))
        pod_meta = copy.deepcopy(template.metadata)
        pod_meta.setdefault("name", meta.get("name") or "pod")
        if meta.get("namespace") and "namespace" not in pod_meta:
            pod_meta["namespace"] = meta["namespace"]
        labels = pod_meta.get("labels")
        labels = dict(labels) if isinstance(labels, dict) else {}
        raw_template = {"metadata": template.metadata, "spec": template.spec}
        for key, value in controller_labels(obj, raw_template).items():
            labels.setdefault(key, value)
        custom = config.custom(obj)
        if custom is not None:
            for key in sorted(custom.pod_labels):
                labels.setdefault(key, template_hash(raw_template))
        if labels:
            pod_meta["labels"] = labels
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template.spec}
    meta = as_dict(pod.get("metadata"))
    if not meta.get("namespace"):
        pod = {**pod, "metadata": {**meta, "namespace": namespace}}
    return pod


def read_pod(path: str) -> RawObj:
    """The one pod a POD_FILE describes; a workload stands for its pod template."""
    objs = load_objects(path)
    if len(objs) != 1:
        raise InputError(f"{path}: expected exactly one Pod (or workload), found {len(objs)}")
    obj = objs[0]
    kind = obj.get("kind")
    if kind is None:
        raise InputError(f"{path}: the object has no kind (expected kind: Pod)")
    if kind not in HANDLED_KINDS:
        raise InputError(f"{path}: cannot simulate a {kind}; give a Pod or a workload")
    if pod_template(obj) is None:
        raise InputError(f"{path}: the {kind}'s metadata and spec must be objects")
    return workload_pod(obj, CliConfig(), "default")


def select_workloads(
    docs: list[Document],
    config: CliConfig,
    *,
    kind: str | None = None,
    name: str | None = None,
) -> list[Document]:
    """The documents to simulate: every workload, or those --kind/--name choose.

    InputError when nothing is left, naming what there was to choose from.
    """
    workloads = [
        d for d in docs if d.obj.get("kind") in HANDLED_KINDS or config.custom(d.obj) is not None
    ]
    chosen = [
        d
        for d in workloads
        if (kind is None or str(d.obj.get("kind")).lower() == kind.lower())
        and (name is None or as_dict(d.obj.get("metadata")).get("name") == name)
    ]
    if chosen:
        return chosen
    sources = sorted({d.source for d in docs}) or ["the input"]
    if not workloads:
        kinds = sorted({str(d.obj.get("kind")) for d in docs})
        found = f" (found: {', '.join(kinds)})" if kinds else " (no objects at all)"
        if len(docs) == 1:
            raise InputError(
                f"{sources[0]}: cannot simulate a {kinds[0]}; give a Pod or a workload"
            )
        raise InputError(f"{', '.join(sources)}: nothing to simulate: no Pod or workload{found}")
    names = ", ".join(
        f"{d.obj.get('kind')}/{as_dict(d.obj.get('metadata')).get('name')}" for d in workloads
    )
    raise InputError(f"no workload matches --kind/--name; there are: {names}")


def _warn_invalid(pod: RawObj, err: TextIO) -> None:
    from webhook.validation.rules import validate_object

    for error in validate_object(pod):
        print(f"warning: {error.error()}", file=err)


def _skew(domains: dict[str, int]) -> int:
    return max(domains.values()) - min(domains.values()) if domains else 0


# Up to this many nodes the table has a row per node; past it, a summary (--all-nodes).
TABLE_NODES = 50
# Rows of the summary: the best nodes by score.
TOP_ROWS = 10


def _deciding(first: Placement) -> list[str]:
    """The score plugins whose scores differ between feasible nodes: the ones that
    decided the ranking (a plugin giving every node the same score decides nothing)."""
    seen: dict[str, set[int]] = {}
    for n in first.feasible:
        for plugin, score in n.scores.items():
            seen.setdefault(plugin, set()).add(score)
    return [plugin for plugin, values in seen.items() if len(values) > 1]


def preemption_line(preemption: Preemption) -> str:
    """What DefaultPreemption would do for a pod no node fits."""
    victims = ", ".join(preemption.victims)
    return (
        f"Preemption: would evict {len(preemption.victims)} pod(s) on {preemption.node} "
        f"({victims}); the pod is nominated there and binds once they are gone"
    )


def render_table(sim: Simulation, *, all_nodes: bool = False) -> str:
    """A readable per-node table (or, on a big cluster, a summary of it), the placements
    and the per-domain distribution.

    SCORE is the weighted sum kube-scheduler ranks by; DECIDED BY lists the normalised
    scores of the plugins that differ between feasible nodes.
    """
    first: Placement = sim.first
    if first.not_scheduled is not None:
        return f"Pod {first.pod}: {first.not_scheduled.text()}\n"
    lines = []
    feasible = len(first.feasible)
    chosen = first.selected_node or "none"
    lines.append(
        f"Pod {first.pod}: {feasible}/{len(first.nodes)} nodes feasible, selected {chosen}"
    )
    if first.error:
        lines.append(f"Error: {first.error}")
    if first.preemption is not None:
        lines.append(preemption_line(first.preemption))
    sampled = first.sampling
    if sampled is not None:
        lines.append(sampling_line(sampled.to_json(), len(first.nodes)))
    if len(first.tied_nodes) > 1:
        best = max(n.score for n in first.feasible)
        how = (
            "drawn at random from the seed"
            if sampled is not None
            else "kube-scheduler picks one of them at random; shown: the first by name"
        )
        lines.append(
            f"{len(first.tied_nodes)} nodes tie at score {best}: "
            f"{', '.join(first.tied_nodes[:TOP_ROWS])}"
            + (" ..." if len(first.tied_nodes) > TOP_ROWS else "")
            + f" ({how})"
        )
    deciding = _deciding(first)
    rows = first.nodes
    summary = not all_nodes and len(first.nodes) > TABLE_NODES
    if summary:
        # The chosen node first (with ties drawn at random it need not be first by name).
        pool, what = first.feasible, "feasible"
        if sampled is not None:
            scored = set(sampled.scored)
            pool, what = [n for n in pool if n.name in scored], "scored"
        chosen_first = sorted(pool, key=lambda n: (n.name != first.selected_node, -n.score, n.name))
        rows = chosen_first[:TOP_ROWS]
        lines.append(f"The {len(rows)} best of {len(pool)} {what} node(s) (--all-nodes for all):")
    width = max([len("NODE"), *(len(n.name) for n in rows)])
    lines.append(f"{'NODE':<{width}}  FEASIBLE  SCORE  DECIDED BY / WHY NOT")
    for n in rows:
        score = str(n.score) if n.feasible else "-"
        if n.feasible:
            detail = ", ".join(f"{p}={n.scores[p]}" for p in deciding if p in n.scores)
        else:
            detail = "; ".join(
                f"{plugin}: {s.reason or s.code.value}"
                for plugin, s in n.filters.items()
                if not s.ok
            )
        mark = "*" if n.name == first.selected_node else " "
        feasible_text = "yes" if n.feasible else "no"
        lines.append(f"{n.name:<{width}}{mark} {feasible_text:<8}  {score:>5}  {detail}".rstrip())
    if first.reasons:
        summary_text = ", ".join(f"{count} {reason}" for reason, count in first.reasons.items())
        lines.append(f"Failures: {summary_text}")
    if len(sim.placements) > 1:
        placed = sum(1 for p in sim.placements if p is not None)
        lines.append(f"Placements ({placed}/{len(sim.placements)} placed):")
        preemptions = sim.preemptions or [None] * len(sim.placements)
        for i, (node, evicted) in enumerate(zip(sim.placements, preemptions, strict=True), 1):
            after = f"  (after preempting {len(evicted.victims)})" if evicted else ""
            lines.append(f"  {i:>4}  {node or '(unschedulable)'}{after}")
    if sim.distribution:
        lines.append("Distribution of matching pods (after placement):")
        for key, domains in sim.distribution.items():
            lines.append(f"  {key}  (skew {_skew(domains)})")
            dw = max(len(d) for d in domains) if domains else 0
            for domain, count in domains.items():
                lines.append(f"    {domain:<{dw}}  {count}")
    return "\n".join(lines) + "\n"


def sampling_line(sampling: dict[str, Any], nodes: int) -> str:
    """One line saying how a sampled cycle chose (Placement.sampling's JSON)."""
    if "nominatedNode" in sampling:
        return (
            f"Sampled: the pod's nominated node {sampling['nominatedNode']} passes every "
            "filter and is taken without looking at other nodes"
        )
    pct = sampling["percentageOfNodesToScore"]
    pct_text = "adaptive" if pct == 0 else f"{pct}%"
    return (
        f"Sampled as kube-scheduler (percentageOfNodesToScore {pct_text}): "
        f"{len(sampling['scoredNodes'])} node(s) scored of {nodes}, the scan looking for "
        f"{sampling['numFeasibleNodesToFind']} from index {sampling['startIndex']} of the "
        f"node tree's order and looking at {sampling['processedNodes']}"
    )


def domain_ranges(
    distributions: Sequence[dict[str, dict[str, int]]],
) -> dict[str, dict[str, dict[str, int | float]]]:
    """Per topology key and domain, the range of the counts over runs (a domain absent
    from a run counts 0 there)."""
    out: dict[str, dict[str, dict[str, int | float]]] = {}
    keys = dict.fromkeys(k for d in distributions for k in d)
    for key in keys:
        domains = sorted({dom for d in distributions for dom in d.get(key, {})})
        out[key] = {
            dom: value_range([d.get(key, {}).get(dom, 0) for d in distributions]) for dom in domains
        }
    return out


def outcome_ranges(
    outcomes: Sequence[tuple[str | None, int, dict[str, dict[str, int]]]],
) -> dict[str, Any]:
    """The JSON `runs` of simulate --runs: outcomes are, per run, (the first copy's
    selected node, the copies left pending, the distribution afterwards)."""
    selected: dict[str, int] = {}
    for node, _, _ in outcomes:
        if node is not None:
            selected[node] = selected.get(node, 0) + 1
    return {
        "count": len(outcomes),
        "pending": value_range([p for _, p, _ in outcomes]),
        "domains": domain_ranges([d for _, _, d in outcomes]),
        "selectedNodes": dict(sorted(selected.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def _range_text(r: dict[str, Any]) -> str:
    if r["min"] == r["max"]:
        return str(r["min"])
    return f"{r['min']}..{r['max']} (median {r['median']})"


def render_runs(runs: dict[str, Any], seed: int) -> str:
    """The text of `runs`: the ranges over the runs."""
    count = runs["count"]
    lines = [f"Over {count} runs (seeds {seed}..{seed + count - 1}):"]
    lines.append(f"  pending copies  {_range_text(runs['pending'])}")
    for key, domains in runs["domains"].items():
        lines.append(f"  {key}")
        # Past TABLE_NODES domains (a hostname key), only those that vary are listed.
        shown = domains
        if len(domains) > TABLE_NODES:
            shown = {d: r for d, r in domains.items() if r["min"] != r["max"]}
        dw = max((len(d) for d in shown), default=0)
        for domain, r in list(shown.items())[:TABLE_NODES]:
            lines.append(f"    {domain:<{dw}}  {_range_text(r)}")
        rest = len(domains) - min(len(shown), TABLE_NODES)
        if rest:
            lines.append(f"    ... {rest} more domains (-o json), the others the same in every run")
    chosen = list(runs["selectedNodes"].items())
    if chosen:
        shown = ", ".join(f"{node} x{n}" for node, n in chosen[:TOP_ROWS])
        more = f" and {len(chosen) - TOP_ROWS} more" if len(chosen) > TOP_ROWS else ""
        lines.append(f"  first copy went to  {shown}{more}")
    return "\n".join(lines) + "\n"


# What the forked run workers read (set in the parent before the pool forks, so the
# snapshot and its warm caches are shared copy-on-write, never pickled).
_RUN_INPUT: tuple[RawObj, Snapshot, int, Framework | None, int | None] | None = None


def _one_run(seed: int) -> tuple[str | None, int, dict[str, dict[str, int]]]:
    """One run of the workload in _RUN_INPUT with this seed: (first copy's node, pending
    copies, distribution)."""
    if _RUN_INPUT is None:
        raise RuntimeError("_one_run outside a --runs batch")
    pod, snapshot, replicas, framework, percentage = _RUN_INPUT
    sim = simulate(
        pod, snapshot, replicas=replicas, framework=framework, sampler=Sampler(percentage, seed)
    )
    return _outcome(sim)


def _outcome(sim: Simulation) -> tuple[str | None, int, dict[str, dict[str, int]]]:
    return sim.first.selected_node, sim.placements.count(None), sim.distribution


def processes(jobs: int) -> int:
    """Worker processes for `jobs` runs: one per core but one, no more than the runs.

    A forked worker first copies the pages of the loaded cluster it touches (each run
    copies the snapshot), so on 2 cores two workers were slower than the runs one after
    another in the parent (bench_sampling.py, docs/performance.md): with fewer than 3
    cores the runs stay in the parent."""
    return max(1, min(jobs, (os.cpu_count() or 1) - 1))


def more_runs(
    pod: RawObj,
    snapshot: Snapshot,
    replicas: int,
    framework: Framework | None,
    percentage: int | None,
    seeds: Sequence[int],
    workers: int | None = None,
) -> list[tuple[str | None, int, dict[str, dict[str, int]]]]:
    """The outcomes of the runs with these seeds: in forked worker processes when there
    are several runs and cores (each run is independent; the parent has already run
    one, so the workers inherit its warm caches), else one after another. workers: how
    many processes (default: processes())."""
    global _RUN_INPUT
    _RUN_INPUT = (pod, snapshot, replicas, framework, percentage)
    try:
        workers = processes(len(seeds)) if workers is None else workers
        if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
            return [_one_run(seed) for seed in seeds]
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return pool.map(_one_run, seeds, chunksize=max(1, len(seeds) // (workers * 4)))
    finally:
        _RUN_INPUT = None


def _named(pod: RawObj, name: str) -> RawObj:
    return {**pod, "metadata": {**as_dict(pod.get("metadata")), "name": name}}


def scale_up(
    pod: RawObj, sim: Simulation, snapshot: Snapshot, framework: Framework, groups: NodeGroups
) -> Diagnosis | None:
    """Would a new node take the copies `sim` could not place (None when every copy was
    placed): each judged against the cluster with the copies placed before it. Copies
    are named as simulate names them (name, name-2, ..., "-x" added while taken)."""
    if None not in sim.placements:
        return None
    ns, _, base = sim.first.pod.partition("/")
    names: list[str] = []
    for i in range(len(sim.placements)):
        name = base if i == 0 else f"{base}-{i + 1}"
        while i > 0 and (snapshot.has_pod(ns, name) or name in names):
            name += "-x"
        names.append(name)
    placed = [(_named(pod, n), node) for n, node in zip(names, sim.placements, strict=True) if node]
    pending = [
        Pending(f"{ns}/{n}", _named(pod, n), framework)
        for n, node in zip(names, sim.placements, strict=True)
        if node is None
    ]
    return diagnose(pending, snapshot, groups, placed=placed)


# Pending copies listed one per line in the text; the rest are counted (copies of one
# workload get the same answer).
PENDING_LINES = 10


def render_scale_up(diagnosis: Diagnosis) -> str:
    """The text: one line per pending copy (the first PENDING_LINES), the nodes in no
    group, and the summary when several are pending."""
    verdicts = list(diagnosis.verdicts.items())
    lines = [f"Pending {pod}: {v.line()}" for pod, v in verdicts[:PENDING_LINES]]
    if len(verdicts) > PENDING_LINES:
        lines.append(f"... and {len(verdicts) - PENDING_LINES} more pending copies alike")
    ungrouped = diagnosis.groups.ungrouped_line()
    if ungrouped:
        lines.append(ungrouped[:1].upper() + ungrouped[1:])
    if len(verdicts) > 1:
        lines.append(diagnosis.summary()[:1].upper() + diagnosis.summary()[1:])
    return "\n".join(lines) + "\n"


def sampling_error(args: argparse.Namespace) -> str | None:
    """The usage error of the sampling flags, None when they are fine."""
    percentage = getattr(args, "percentage_of_nodes_to_score", None)
    if percentage is not None and not 0 <= percentage <= 100:
        return f"--percentage-of-nodes-to-score must be in 0..100, got {percentage}"
    seed = getattr(args, "seed", None)
    if seed is not None and seed < 0:
        return f"--seed must be 0 or more, got {seed}"
    runs = getattr(args, "runs", None)
    if runs is not None and runs < 1:
        return f"--runs must be at least 1, got {runs}"
    return None


def sampling_asked(args: argparse.Namespace) -> bool:
    """Whether any sampling flag was given (each implies sampling)."""
    return any(
        getattr(args, name, None) is not None
        for name in ("percentage_of_nodes_to_score", "seed", "runs")
    )


def sampler_for(args: argparse.Namespace, seed_offset: int = 0) -> Sampler:
    """The sampler of one run: the flags' (each implies sampling), else one that samples
    only for a profile setting percentageOfNodesToScore."""
    if not sampling_asked(args):
        return Sampler(always=False)
    seed = (getattr(args, "seed", None) or 0) + seed_offset
    return Sampler(getattr(args, "percentage_of_nodes_to_score", None), seed)


@contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: a snapshot is millions of acyclic objects
    that every full collection would walk again (a 150,000-pod simulation runs about
    twice as fast without it); plain reference counting still frees everything."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _title(obj: RawObj, pod: RawObj) -> str:
    meta = as_dict(pod.get("metadata"))
    name = as_dict(obj.get("metadata")).get("name") or meta.get("name") or ""
    return f"{obj.get('kind')} {meta.get('namespace')}/{name}"


def cli_simulate(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the simulate subcommand; InputError / ConfigError / ClusterError reach the
    dispatcher (exit 2)."""
    out = out or sys.stdout
    err = err or sys.stderr
    replicas: Any = getattr(args, "replicas", None)
    if replicas is not None and (not isinstance(replicas, int) or replicas < 1):
        print(f"topospread simulate: --replicas must be at least 1, got {replicas}", file=err)
        return 2
    problem = sampling_error(args)
    if problem is not None:
        print(f"topospread simulate: {problem}", file=err)
        return 2
    runs_asked: int = getattr(args, "runs", None) or 1
    # The manifests first: a bad file fails before the cluster is read.
    docs = [d for path in expand_inputs(args) for d in read_documents(path)]
    with without_cyclic_gc():
        target = load_target(args, live_by_default=True, err=err)
        chosen = select_workloads(
            docs, target.config, kind=getattr(args, "kind", None), name=getattr(args, "name", None)
        )
        workloads = []
        for doc in chosen:
            pod = workload_pod(doc.obj, target.config, target.namespace)
            count = replicas if replicas is not None else _default_replicas(doc.obj)
            workloads.append(Workload(_title(doc.obj, pod), pod, count))
        if target.snapshot is None:  # pragma: no cover - load_target always gives one here
            raise InputError("no cluster state: give --snapshot FILE or a kubeconfig")
        results: list[tuple[Workload, Simulation, Diagnosis | None]] = []
        ranges: list[dict[str, Any] | None] = []
        groups = node_groups(target.snapshot, target.settings.node_group_labels)
        for w in workloads:
            _warn_invalid(w.pod, err)
            framework = target.settings.framework_for(w.pod)
            why = not_scheduled(w.pod, framework) if framework is None else None
            if why is not None:  # another scheduler's pod: reported, not placed
                held = Placement.held(w.pod, why)
                results.append((w, Simulation([None] * w.replicas, held, {}), None))
                ranges.append(None)
                continue
            # Each workload is a run of its own, from the first seed.
            sim = simulate(
                w.pod,
                target.snapshot,
                replicas=w.replicas,
                framework=framework,
                sampler=sampler_for(args),
            )
            diagnosis = None
            if framework is not None and sim.first.not_scheduled is None:
                diagnosis = scale_up(w.pod, sim, target.snapshot, framework, groups)
            results.append((w, sim, diagnosis))
            runs = None
            if runs_asked > 1 and sim.first.not_scheduled is None:
                first_seed = getattr(args, "seed", None) or 0
                seeds = range(first_seed + 1, first_seed + runs_asked)
                percentage = getattr(args, "percentage_of_nodes_to_score", None)
                others = more_runs(w.pod, target.snapshot, w.replicas, framework, percentage, seeds)
                runs = outcome_ranges([_outcome(sim), *others])
            ranges.append(runs)
    output = getattr(args, "output", "table")
    if output in ("json", "html"):
        docs_json = [
            {
                "workload": w.title,
                "replicas": w.replicas,
                **sim.to_json(),
                "scaleUp": diagnosis.to_json() if diagnosis is not None else {},
                **({"runs": runs} if runs is not None else {}),
                "kubernetesVersion": str(target.kubernetes_version),
            }
            for (w, sim, diagnosis), runs in zip(results, ranges, strict=True)
        ]
        document: Any = docs_json
        if len(docs_json) == 1:
            del docs_json[0]["workload"], docs_json[0]["replicas"]
            document = docs_json[0]
        if output == "html":
            out.write(simulate_page(document))
        else:
            out.write(json.dumps(document, indent=2) + "\n")
    else:
        for i, (w, sim, diagnosis) in enumerate(results):
            if len(results) > 1:
                out.write(("\n" if i else "") + f"== {w.title} ({w.replicas} replicas)\n")
            out.write(render_table(sim, all_nodes=getattr(args, "all_nodes", False)))
            if diagnosis is not None:
                out.write(render_scale_up(diagnosis))
            if ranges[i] is not None:
                out.write(render_runs(ranges[i] or {}, getattr(args, "seed", None) or 0))
    # Beside the answer, not in it: the table stays the scheduler's view alone.
    err.write(f"modelled as Kubernetes {target.kubernetes_version}\n")
    return 0

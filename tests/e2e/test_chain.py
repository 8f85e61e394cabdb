"""The webhook inside the real admission chain (issue 38), small: about 300 pods a phase,
created by the real ReplicaSet controller through two replicas with failurePolicy Fail,
and each fault once under that load. The counts that must be zero are asserted here;
the figures (rates, latency buckets, CPU) come from `make bench-chain`, never from a
timed test. The orchestration is tests/e2e/chain.py, shared with bench/bench_chain.py.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.chain import GRACEFUL, Phase, Runner, chain_nodes, chain_plane, installed
from tests.e2e.controlplane import DEFAULT_MINOR
from tests.e2e.report import record

PODS = 300
NODES = 12


@pytest.fixture(scope="module")
def runner(request: pytest.FixtureRequest) -> Iterator[Runner]:
    workdir = Path(tempfile.mkdtemp(prefix="topospread-e2e-chain-"))
    minor = os.environ.get("K8S", DEFAULT_MINOR)
    cp = chain_plane(workdir, minor)
    failed_before = request.session.testsfailed
    try:
        cp.start()
        cp.add_nodes(chain_nodes(NODES))
        with installed(cp, workdir / "webhook") as chain:
            runner = Runner(cp, chain, PODS, wait_seconds=300)
            yield runner
            # Every phase's figures, for a person reading a failure (build/e2e-results).
            record("chain", minor, {"phases": len(runner.results)},
                   [p.figures() for p in runner.results])
    finally:
        cp.stop()
        if request.session.testsfailed > failed_before:
            keep = Path(os.environ.get("TOPOSPREAD_E2E_LOGS", "build/e2e-logs")).resolve()
            shutil.copytree(workdir / "logs", keep / "chain", dirs_exist_ok=True)
            print(f"\ne2e chain: logs kept in {keep / 'chain'}")
        shutil.rmtree(workdir, ignore_errors=True)


def zero_counts(phase: Phase) -> dict[str, object]:
    """Every count that must be zero, with what explains a non-zero one. Creations that
    failed for another reason than a webhook count too, except while kube-apiserver
    itself restarts (they fail then whatever the webhook does)."""
    f = phase.figures()
    other = [] if phase.fault == "apiserver-restart" else f["failedCreateOtherExamples"]
    return {
        "stuck": f["stuck"], "faultError": f["faultError"],
        "callingWebhookError": f["callingWebhookError"], "failOpen": f["failOpen"],
        "failedCreate": f["failedCreate"], "failedCreateOther": other,
        "missingMutation": f["missingExamples"],
    }


CLEAN = {"stuck": [], "faultError": None, "callingWebhookError": 0, "failOpen": 0,
         "failedCreate": 0, "failedCreateOther": [], "missingMutation": []}


def test_steady_load_through_both_webhooks(runner: Runner) -> None:
    phase = runner.phase("steady", webhooks=True)
    assert zero_counts(phase) == CLEAN
    calls = phase.figures()["admission"]
    # Every pod passed the mutating webhook, and the validating one (pods and the
    # ReplicaSets the Deployment controller writes).
    assert set(calls) == set(runner.chain.webhook_names()), calls
    assert all(row["calls"] >= PODS for row in calls.values()), calls


@pytest.mark.parametrize("fault", GRACEFUL)
def test_a_graceful_fault_under_load_refuses_no_pod(runner: Runner, fault: str) -> None:
    phase = runner.phase(fault, webhooks=True, fault=fault)
    assert zero_counts(phase) == CLEAN, phase.figures()
    assert phase.figures()["admission"], "the webhooks were called during the fault"


def test_kill_9_loses_at_most_the_calls_in_flight(runner: Runner) -> None:
    """The killed replica's calls in flight may fail (the ReplicaSet controller creates
    those pods again); every ReplicaSet still reaches its count and every pod is mutated.
    In flight: at most its worker's 4 threads' reviews plus the connections it had
    accepted and not yet answered, which at the controllers' pace is a few."""
    phase = runner.phase("kill-9", webhooks=True, fault="kill-9")
    f = phase.figures()
    assert f["stuck"] == [] and f["faultError"] is None, f
    assert f["missingExamples"] == [] and f["failOpen"] == 0, f
    assert f["callingWebhookError"] <= 16, f
    assert f["failedCreate"] <= f["callingWebhookError"], f

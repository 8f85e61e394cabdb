"""The workload controllers' decisions, ported from kube-controller-manager
(`pkg/controller`): which pods a ReplicaSet deletes first, how a Deployment splits a
scale across its ReplicaSets and steps through a rollout, which ordinals a
StatefulSet removes or adds; and the deletion costs that keep a spread (costs.py,
ours). Pure functions of raw pods and small records, the clock passed in (`now`);
the audit's drills (webhook/audit/workloads/) do the rest."""

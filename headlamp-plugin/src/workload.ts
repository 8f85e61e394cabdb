/*
 * What the detail section reads of the page's own objects (raw JSON, as Headlamp holds
 * them): the workload and its controller owner, the label selector of its pods, and
 * each pod's phase with the scheduler's PodScheduled condition.
 */

import { LivePod, WorkloadRef } from './report';

/** The fields of a Deployment, StatefulSet or ReplicaSet the section reads. */
export interface RawWorkload {
  kind: string;
  metadata: {
    namespace: string;
    name: string;
    ownerReferences?: { kind: string; name: string; controller?: boolean }[];
  };
  spec?: { selector?: { matchLabels?: Record<string, string> } };
}

/** The fields of a Pod the section reads. */
export interface RawPod {
  metadata: { namespace: string; name: string };
  status?: {
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

/** The workload as the audit names it, with its controller owner when it has one. */
export function workloadRef(raw: RawWorkload): WorkloadRef {
  const owner = raw.metadata.ownerReferences?.find(o => o.controller === true);
  return {
    kind: raw.kind,
    namespace: raw.metadata.namespace,
    name: raw.metadata.name,
    owner: owner ? { kind: owner.kind, name: owner.name } : undefined,
  };
}

/**
 * The workload's matchLabels as a label selector: the pods `kubectl get pods -l` lists
 * ('' when there are none: then no pod is listed). matchExpressions are not applied; the
 * audit's pending pods are matched by name among these.
 */
export function labelSelector(raw: RawWorkload): string {
  return Object.entries(raw.spec?.selector?.matchLabels ?? {})
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}

/** A pod as the section lists it: its phase and, when not scheduled, the scheduler's words. */
export function livePod(raw: RawPod): LivePod {
  const scheduled = raw.status?.conditions?.find(c => c.type === 'PodScheduled');
  return {
    namespace: raw.metadata.namespace,
    name: raw.metadata.name,
    phase: raw.status?.phase ?? '',
    unschedulable:
      scheduled && scheduled.status === 'False'
        ? { reason: scheduled.reason ?? '', message: scheduled.message ?? '' }
        : undefined,
  };
}

/*
 * topospread's Headlamp plugin: a "Topology spread" section on the detail pages of
 * Deployments, StatefulSets and ReplicaSets, and a cluster-level "Topology spread"
 * page. Both read the in-cluster audit's /report.json (docs/headlamp.md); this file
 * only fetches and registers, the views are in views.tsx.
 */

import {
  ApiProxy,
  DetailsViewSectionProps,
  K8s,
  registerDetailsViewSection,
  registerRoute,
  registerSidebarEntry,
  Utils,
} from '@kinvolk/headlamp-plugin/lib';
import React from 'react';
import { LivePod, WorkloadRef } from './report';
import { AuditState, DEFAULT_LOCATION, loadAudit, proxyPath } from './source';
import { ClusterPage, SpreadSection } from './views';

const KINDS = new Set(['Deployment', 'StatefulSet', 'ReplicaSet']);

/** The body of an API server path as text, through Headlamp's request helper. */
async function getText(path: string): Promise<string> {
  const response: Response = await ApiProxy.request(path, { isJSON: false });
  return response.text();
}

// How often an open view reads the document again (the audit runs every 300 s by default).
const REFRESH_MS = 60_000;

/** The audit's state: read when the view opens, then every REFRESH_MS while it is open. */
function useAudit(): AuditState {
  const [state, setState] = React.useState<AuditState>({ kind: 'loading' });
  React.useEffect(() => {
    let live = true;
    const read = () =>
      loadAudit(getText, DEFAULT_LOCATION).then(
        s => live && setState(s),
        err =>
          live &&
          setState({
            kind: 'unreachable',
            location: DEFAULT_LOCATION,
            status: 0,
            message: String(err),
          })
      );
    read();
    const timer = setInterval(read, REFRESH_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  return state;
}

interface RawPod {
  metadata: { namespace: string; name: string };
  status?: {
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

function livePod(raw: RawPod): LivePod {
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

/** matchLabels as a label selector (the pods `kubectl get pods -l` lists; matchExpressions
 * are not applied: the audit's pending pods are matched by name). */
function labelSelector(selector: { matchLabels?: Record<string, string> } | undefined): string {
  return Object.entries(selector?.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

function WorkloadSection({ resource }: { resource: K8s.cluster.KubeObject }) {
  const json = resource.jsonData as {
    kind: string;
    metadata: {
      namespace: string;
      name: string;
      uid: string;
      ownerReferences?: { kind: string; name: string; controller?: boolean }[];
    };
    spec?: { selector?: { matchLabels?: Record<string, string> } };
  };
  const owner = json.metadata.ownerReferences?.find(o => o.controller);
  const workload: WorkloadRef = {
    kind: json.kind,
    namespace: json.metadata.namespace,
    name: json.metadata.name,
    owner: owner ? { kind: owner.kind, name: owner.name } : undefined,
  };
  const selector = labelSelector(json.spec?.selector);
  const [pods] = K8s.ResourceClasses.Pod.useList({
    namespace: workload.namespace,
    labelSelector: selector || undefined,
  });
  const state = useAudit();
  const live = selector ? (pods ?? []).map(p => livePod(p.jsonData as RawPod)) : [];
  return <SpreadSection state={state} workload={workload} pods={live} />;
}

registerDetailsViewSection(({ resource }: DetailsViewSectionProps) => {
  if (!resource || !KINDS.has(resource.kind)) {
    return null;
  }
  return <WorkloadSection resource={resource} />;
});

function TopologySpreadPage() {
  const state = useAudit();
  const cluster = Utils.getCluster() ?? '';
  const reportHref = `/clusters/${encodeURIComponent(cluster)}${proxyPath(
    DEFAULT_LOCATION,
    'report'
  )}`;
  return <ClusterPage state={state} reportHref={reportHref} />;
}

registerSidebarEntry({
  parent: 'cluster',
  name: 'topospread',
  label: 'Topology spread',
  url: '/topospread',
  icon: 'mdi:chart-bar-stacked',
});

registerRoute({
  path: '/topospread',
  sidebar: 'topospread',
  name: 'topospread',
  exact: true,
  component: () => <TopologySpreadPage />,
});

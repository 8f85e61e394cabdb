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
import { AuditState, DEFAULT_LOCATION, loadAudit, proxyPath } from './source';
import { ClusterPage, SpreadSection } from './views';
import { labelSelector, livePod, RawPod, RawWorkload, workloadRef } from './workload';

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

function WorkloadSection({ resource }: { resource: K8s.cluster.KubeObject }) {
  const raw = resource.jsonData as RawWorkload;
  const workload = workloadRef(raw);
  const selector = labelSelector(raw);
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

/*
 * The views, as pure components of the audit's state: the "Topology spread" section of
 * a workload's detail page and the cluster-level "Topology spread" page. They take what
 * to show as props (the connectors in index.tsx fetch it), so the stories and the
 * tests render exactly what Headlamp renders. Every string is React text (escaped);
 * nothing is set as HTML.
 */

import {
  NameValueTable,
  SectionBox,
  SimpleTable,
  StatusLabel,
} from '@kinvolk/headlamp-plugin/lib/CommonComponents';
import Box from '@mui/material/Box';
import Typography from '@mui/material/Typography';
import React from 'react';
import {
  AuditDocument,
  ConstraintEntry,
  drillOf,
  entriesFor,
  LivePod,
  pendingRows,
  selectorText,
  violationsWorstFirst,
  WorkloadEntry,
  workloadLabel,
  WorkloadRef,
} from './report';
import { AuditState, INSTALL_COMMAND } from './source';

export const SECTION_TITLE = 'Topology spread';

/** A table column of long text (scheduler reasons, verdicts): wraps anywhere, wider. */
const LONG_TEXT = { gridTemplate: 2, cellProps: { sx: { overflowWrap: 'anywhere' } } };

function Command({ children }: { children: string }) {
  return (
    <Box
      component="pre"
      sx={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all', fontSize: '0.85rem', m: 0 }}
    >
      <code>{children}</code>
    </Box>
  );
}

/** An empty or error state: what happened, then what to do (a command, or a hint). */
function NotReady({
  kind,
  said,
  command,
  hint,
}: {
  kind: AuditState['kind'];
  said: React.ReactNode;
  command?: string;
  hint?: string;
}) {
  return (
    <Box data-state={kind}>
      <Typography gutterBottom>{said}</Typography>
      {command !== undefined && <Command>{command}</Command>}
      {hint !== undefined && <Typography variant="body2">{hint}</Typography>}
    </Box>
  );
}

/** What the views show instead of the document: loading, or why there is none. */
export function AuditNotReady({ state }: { state: Exclude<AuditState, { kind: 'ready' }> }) {
  if (state.kind === 'loading') {
    return <NotReady kind="loading" said="Reading the topospread audit…" />;
  }
  const service = `${state.location.namespace}/${state.location.service}`;
  switch (state.kind) {
    case 'missing':
      return (
        <NotReady
          kind="missing"
          said={`No topospread audit in this cluster (no Service ${service}). The audit measures every workload's spread; install it with its report endpoint:`}
          command={INSTALL_COMMAND}
        />
      );
    case 'no-endpoint':
      return (
        <NotReady
          kind="no-endpoint"
          said="The topospread audit runs, but without its JSON endpoint /report.json (audit.report is off). Turn it on:"
          command={INSTALL_COMMAND}
        />
      );
    case 'unreachable':
      return (
        <NotReady
          kind="unreachable"
          said={`The topospread audit could not be reached through the API server (${
            state.status ? `HTTP ${state.status}` : 'no answer'
          }): ${state.message}`}
          hint={`It needs get on services and services/proxy for ${service}; 503 also means the audit has not finished its first run.`}
        />
      );
    case 'malformed':
      return (
        <NotReady
          kind="malformed"
          said={`The audit's /report.json is not the document this plugin reads: ${state.message}`}
          hint="Check that the plugin and the topospread audit are of matching versions."
        />
      );
  }
}

/** The pods per domain of one constraint as bars, with the count before a drill. */
export function DomainBars({ constraint }: { constraint: ConstraintEntry }) {
  const domains = Object.entries(constraint.domains).sort(([a], [b]) => a.localeCompare(b));
  const before = constraint.before ?? {};
  const largest = Math.max(1, ...domains.map(([, n]) => n), ...Object.values(before));
  if (domains.length === 0) {
    return <Typography variant="body2">No eligible domain.</Typography>;
  }
  return (
    <Box role="list" aria-label={`pods per ${constraint.topologyKey}`}>
      {domains.map(([domain, count]) => (
        <Box
          key={domain}
          role="listitem"
          data-testid="domain-bar"
          data-domain={domain}
          data-count={count}
          sx={{
            display: 'grid',
            // the bar keeps at least 4rem however narrow the cell (a table column)
            gridTemplateColumns:
              'minmax(3rem, 12rem) minmax(4rem, 1fr) minmax(1.5rem, max-content)',
            gap: 1,
            mb: 0.5,
          }}
        >
          <Typography variant="body2" noWrap title={domain}>
            {domain}
          </Typography>
          <Box sx={{ bgcolor: 'action.hover', borderRadius: 1, height: '1.25rem' }}>
            <Box
              data-testid="domain-fill"
              sx={{
                width: `${(count / largest) * 100}%`,
                height: '100%',
                borderRadius: 1,
                bgcolor: constraint.violated ? 'error.main' : 'primary.main',
              }}
            />
          </Box>
          <Typography variant="body2" data-testid="domain-count">
            {count}
            {domain in before ? ` (was ${before[domain]})` : ''}
          </Typography>
        </Box>
      ))}
    </Box>
  );
}

export function Verdict({ violated }: { violated: boolean }) {
  return (
    <StatusLabel status={violated ? 'error' : 'success'} data-testid="verdict">
      {violated ? 'Violated' : 'Holds'}
    </StatusLabel>
  );
}

/** One constraint evaluation: its key and limits, the audit's verdict, the bars. */
export function ConstraintView({ constraint }: { constraint: ConstraintEntry }) {
  return (
    <Box data-testid="constraint" data-violated={constraint.violated} sx={{ mb: 2 }}>
      <NameValueTable
        rows={[
          { name: 'Topology key', value: constraint.topologyKey },
          { name: 'When unsatisfiable', value: constraint.whenUnsatisfiable },
          { name: 'maxSkew', value: <span data-testid="max-skew">{constraint.maxSkew}</span> },
          { name: 'Skew', value: <span data-testid="skew">{constraint.skew}</span> },
          { name: 'Constraint', value: <Verdict violated={constraint.violated} /> },
          ...(constraint.labelSelector !== undefined
            ? [{ name: 'Counts pods', value: selectorText(constraint.labelSelector) }]
            : []),
        ]}
      />
      <DomainBars constraint={constraint} />
    </Box>
  );
}

function WorkloadConstraints({ entry }: { entry: WorkloadEntry }) {
  return (
    <>
      {entry.constraints.map((c, i) => (
        // two evaluations may be equal in every field shown (two revisions of a rollout)
        <ConstraintView key={i} constraint={c} />
      ))}
    </>
  );
}

function PendingTable({ doc, pods }: { doc: AuditDocument; pods: LivePod[] }) {
  const rows = pendingRows(doc, pods);
  return (
    <SimpleTable
      columns={[
        { label: 'Pending pod', getter: r => r.pod },
        { label: 'Reason', getter: r => r.reason, ...LONG_TEXT },
        {
          label: 'Would a new node help?',
          getter: r => r.scaleUp ?? 'not diagnosed by the audit',
          ...LONG_TEXT,
        },
      ]}
      data={rows}
      emptyMessage="No Pending pod."
    />
  );
}

/** The section of a Deployment's, StatefulSet's or ReplicaSet's detail page. */
export function SpreadSection({
  state,
  workload,
  pods,
}: {
  state: AuditState;
  workload: WorkloadRef;
  pods: LivePod[];
}) {
  if (state.kind !== 'ready') {
    return (
      <SectionBox title={SECTION_TITLE}>
        <AuditNotReady state={state} />
      </SectionBox>
    );
  }
  const { entries, under } = entriesFor(state.doc, workload);
  return (
    <SectionBox title={SECTION_TITLE}>
      <Box data-state="ready">
        {under !== undefined && (
          <Typography variant="body2" gutterBottom>
            The audit counts these pods with {under}.
          </Typography>
        )}
        {entries.length === 0 ? (
          <Typography data-testid="no-constraints" gutterBottom>
            The audit found no topologySpreadConstraints on the running pods of{' '}
            {workloadLabel(workload)}.
          </Typography>
        ) : (
          entries.map((e, i) => <WorkloadConstraints key={i} entry={e} />)
        )}
        <Typography variant="subtitle1" sx={{ mt: 2 }}>
          Pending pods
        </Typography>
        <PendingTable doc={state.doc} pods={pods} />
      </Box>
    </SectionBox>
  );
}

function Generated({ doc }: { doc: AuditDocument }) {
  return (
    <Typography variant="body2" gutterBottom data-testid="generated">
      {doc.generated !== undefined ? `Audited ${doc.generated}` : 'Audit time not given'}; workloads
      audited: {doc.workloads.length}; violated constraints: {doc.violations}.
    </Typography>
  );
}

function ViolatedTable({ doc }: { doc: AuditDocument }) {
  return (
    <SimpleTable
      columns={[
        { label: 'Workload', getter: v => workloadLabel(v.workload) },
        { label: 'Topology key', getter: v => v.constraint.topologyKey, ...LONG_TEXT },
        {
          label: 'Skew / maxSkew',
          getter: v => (
            <span data-testid="skew">{`${v.constraint.skew} / ${v.constraint.maxSkew}`}</span>
          ),
        },
        {
          label: 'Pods per domain',
          getter: v => <DomainBars constraint={v.constraint} />,
          gridTemplate: 2,
        },
        { label: 'Constraint', getter: v => <Verdict violated={v.constraint.violated} /> },
      ]}
      data={violationsWorstFirst(doc)}
      emptyMessage="Every audited constraint holds."
    />
  );
}

function DrillBox({ doc }: { doc: AuditDocument }) {
  const drill = drillOf(doc);
  if (drill === null) {
    return (
      <Typography variant="body2" data-testid="no-drill">
        This audit ran no drill (the in-cluster audit never does). A drill from a workstation:{' '}
        <code>topospread audit --unreachable-nodes topology.kubernetes.io/zone=ZONE</code>.
      </Typography>
    );
  }
  const pending = doc.pending ?? [];
  return (
    <Box data-testid="drill">
      <NameValueTable
        rows={[
          { name: 'Drill', value: drill.name },
          { name: 'Nodes', value: drill.nodes.join(', ') },
          { name: 'Pending pods', value: String(pending.length) },
          { name: 'Not recreated', value: (doc.notRecreated ?? []).join(', ') || 'none' },
        ]}
      />
      {(doc.scaleUpSummary ?? []).map(line => (
        <Typography key={line} variant="body2">
          {line}
        </Typography>
      ))}
      <SimpleTable
        columns={[
          { label: 'Pending pod', getter: (r: { pod: string }) => r.pod },
          {
            label: 'Would a new node help?',
            getter: (r: { pod: string }) => doc.scaleUpReasons?.[r.pod] ?? 'not diagnosed',
            ...LONG_TEXT,
          },
        ]}
        data={pending.map(pod => ({ pod }))}
        emptyMessage="Every displaced pod found a node."
      />
    </Box>
  );
}

function PlanBox({ doc }: { doc: AuditDocument }) {
  if (doc.plan === undefined) {
    return (
      <Typography variant="body2" data-testid="no-plan">
        This audit made no plan (the in-cluster audit does not).{' '}
        <code>topospread audit --plan</code> prints one; audit.rebalance carries it out, one
        eviction at a time.
      </Typography>
    );
  }
  return (
    <Box data-testid="plan">
      <Typography variant="body2" gutterBottom>
        Evictions: {doc.plan.length};{' '}
        {doc.planComplete
          ? 'after them no checked constraint is violated.'
          : 'a partial plan: no plan within the cluster’s capacity fixes every violation.'}
      </Typography>
      <SimpleTable
        columns={[
          { label: 'Step', getter: (m: { step: number }) => m.step },
          { label: 'Evict pod', getter: (m: { pod: string }) => m.pod },
          { label: 'From node', getter: (m: { from: string }) => m.from },
          { label: 'To node', getter: (m: { to: string }) => m.to },
        ]}
        data={doc.plan.map((m, i) => ({ ...m, step: i + 1 }))}
        emptyMessage="Nothing to move."
      />
    </Box>
  );
}

/** The cluster-level page: violations worst first, the drill, the plan, /report. */
export function ClusterPage({ state, reportHref }: { state: AuditState; reportHref: string }) {
  if (state.kind !== 'ready') {
    return (
      <SectionBox title={SECTION_TITLE}>
        <AuditNotReady state={state} />
      </SectionBox>
    );
  }
  const { doc } = state;
  return (
    <>
      <SectionBox title={SECTION_TITLE}>
        <Box data-state="ready">
          <Generated doc={doc} />
          <Typography variant="body2" gutterBottom>
            The audit's own page:{' '}
            <a href={reportHref} target="_blank" rel="noopener noreferrer">
              /report
            </a>
          </Typography>
          <ViolatedTable doc={doc} />
        </Box>
      </SectionBox>
      <SectionBox title="Drill">
        <DrillBox doc={doc} />
      </SectionBox>
      <SectionBox title="Rebalancing plan">
        <PlanBox doc={doc} />
      </SectionBox>
    </>
  );
}

/*
 * The two views in each state, on the documents the real CLI made: the bars hold the
 * audit's counts, the verdicts are the audit's, and every empty or error state says
 * what to do. The expectations are read from the CLI's JSON with JSON.parse alone.
 */

import { cleanup, screen, within } from '@testing-library/react';
import React from 'react';
import { afterEach, describe, expect, test } from 'vitest';
import { AuditDocument, LivePod, parseReport, WorkloadRef } from './report';
import { AuditState, DEFAULT_LOCATION, INSTALL_COMMAND } from './source';
import { fixtureDoc, fixtureJson, FixtureName } from './testing/fixtures';
import { bars, renderInTheme } from './testing/render';
import { ClusterPage, SpreadSection } from './views';

afterEach(cleanup);

const location = DEFAULT_LOCATION;

function ready(doc: AuditDocument): AuditState {
  return { kind: 'ready', location, doc };
}

/** The [domain, count] pairs of a workload's constraints in the CLI's JSON. */
function printedBars(name: FixtureName, kind: string, ns: string, wl: string): [string, number][] {
  const printed = fixtureJson(name);
  return printed.workloads
    .filter((w: any) => w.kind === kind && w.namespace === ns && w.name === wl)
    .flatMap((w: any) => w.constraints)
    .flatMap((c: any) => Object.entries(c.domains).sort(([a], [b]) => a.localeCompare(b)));
}

function section(state: AuditState, workload: WorkloadRef, pods: LivePod[] = []) {
  return renderInTheme(<SpreadSection state={state} workload={workload} pods={pods} />);
}

describe('the detail section', () => {
  test('holds: the bars of each domain, maxSkew, skew and "Holds"', () => {
    const { container } = section(ready(fixtureDoc('holds')), {
      kind: 'Deployment',
      namespace: 'shop',
      name: 'web',
    });
    expect(screen.getByText('Topology spread')).toBeTruthy();
    expect(bars(container)).toEqual(printedBars('holds', 'Deployment', 'shop', 'web'));
    expect(bars(container).length).toBeGreaterThan(0);
    expect(screen.getAllByTestId('verdict').map(v => v.textContent)).toEqual(['Holds']);
    expect(screen.getByTestId('skew').textContent).toBe('0');
    expect(screen.getByText('No Pending pod.')).toBeTruthy();
  });

  test('violated: the audit\'s skew above maxSkew and "Violated"', () => {
    const printed = fixtureJson('violated').workloads.find((w: any) => w.name === 'api');
    const { container } = section(ready(fixtureDoc('violated')), {
      kind: 'Deployment',
      namespace: 'shop',
      name: 'api',
    });
    expect(bars(container)).toEqual(printedBars('violated', 'Deployment', 'shop', 'api'));
    expect(screen.getAllByTestId('verdict').map(v => v.textContent)).toEqual(['Violated']);
    expect(screen.getByTestId('skew').textContent).toBe(String(printed.constraints[0].skew));
    expect(screen.getByTestId('max-skew').textContent).toBe(String(printed.constraints[0].maxSkew));
    // the pods it counts, the revision merged in by matchLabelKeys
    expect(container.textContent).toContain('app=api, tier=backend, pod-template-hash in (');
  });

  test("Pending: the drill's pending pod with its reasons and whether a new node helps", () => {
    const printed = fixtureJson('pending');
    const { container } = section(
      ready(fixtureDoc('pending')),
      { kind: 'ReplicaSet', namespace: 'shop', name: 'web-5d9c' },
      [{ namespace: 'shop', name: 'web-5d9c-a', phase: 'Running' }]
    );
    expect(screen.getByText('shop/web-5d9c-a')).toBeTruthy();
    expect(screen.getByText(printed.scaleUpReasons['shop/web-5d9c-a'])).toBeTruthy();
    for (const reason of Object.keys(printed.pendingReasons['shop/web-5d9c-a'])) {
      expect(container.textContent).toContain(reason);
    }
    // after the drill the bars are the domains left, each with its count before
    expect(bars(container)).toEqual(printedBars('pending', 'ReplicaSet', 'shop', 'web-5d9c'));
    expect(container.textContent).toContain('(was 1)');
  });

  test("Pending in the cluster: the scheduler's message, not diagnosed by the audit", () => {
    section(
      ready(fixtureDoc('in-cluster')),
      { kind: 'Deployment', namespace: 'shop', name: 'web' },
      [
        {
          namespace: 'shop',
          name: 'web-7d4b9c-q2',
          phase: 'Pending',
          unschedulable: {
            reason: 'Unschedulable',
            message:
              "0/6 nodes are available: 3 node(s) didn't match pod topology spread constraints.",
          },
        },
      ]
    );
    expect(screen.getByText('shop/web-7d4b9c-q2')).toBeTruthy();
    expect(screen.getByText(/^Unschedulable: 0\/6 nodes are available/)).toBeTruthy();
    expect(screen.getByText('not diagnosed by the audit')).toBeTruthy();
  });

  test("a Deployment's ReplicaSet: the Deployment's spread, saying so", () => {
    const { container } = section(ready(fixtureDoc('in-cluster')), {
      kind: 'ReplicaSet',
      namespace: 'shop',
      name: 'api-58d4c7f9b',
      owner: { kind: 'Deployment', name: 'api' },
    });
    expect(screen.getByText('The audit counts these pods with Deployment shop/api.')).toBeTruthy();
    expect(bars(container)).toEqual(printedBars('in-cluster', 'Deployment', 'shop', 'api'));
  });

  test('a workload without constraints: says the audit found none', () => {
    section(ready(fixtureDoc('holds')), {
      kind: 'Deployment',
      namespace: 'shop',
      name: 'unconstrained',
    });
    expect(screen.getByTestId('no-constraints').textContent).toContain(
      'Deployment shop/unconstrained'
    );
  });
});

// state, the text it must show (the command to run, the status, the reason)
const notReady: [string, AuditState, (string | RegExp)[]][] = [
  ['loading', { kind: 'loading' }, [/Reading the topospread audit/]],
  [
    'no audit',
    { kind: 'missing', location },
    [/No topospread audit in this cluster/, INSTALL_COMMAND],
  ],
  [
    'no JSON endpoint',
    { kind: 'no-endpoint', location },
    [/without its JSON endpoint/, INSTALL_COMMAND],
  ],
  [
    'audit unreachable',
    {
      kind: 'unreachable',
      location,
      status: 503,
      message: 'Service Unavailable - no endpoints available',
    },
    [/HTTP 503/, /no endpoints available/, /services\/proxy/],
  ],
  [
    'malformed JSON',
    { kind: 'malformed', location, message: 'not JSON: Unexpected token' },
    [/not the document this plugin reads: not JSON/],
  ],
];

describe.each(['detail section', 'cluster page'])('the %s without a document', view => {
  test.each(notReady)('%s', (_, state, texts) => {
    const { container } =
      view === 'detail section'
        ? section(state, { kind: 'Deployment', namespace: 'shop', name: 'web' })
        : renderInTheme(<ClusterPage state={state} reportHref="/report" />);
    expect(container.querySelector(`[data-state="${state.kind}"]`)).not.toBeNull();
    for (const text of texts) {
      expect(container.textContent).toMatch(text);
    }
    expect(bars(container)).toEqual([]);
  });
});

describe('the cluster page', () => {
  test('violated: the violated constraint, the plan and its evictions, the /report link', () => {
    const printed = fixtureJson('violated');
    const { container } = renderInTheme(
      <ClusterPage state={ready(fixtureDoc('violated'))} reportHref="/x/report" />
    );
    expect(bars(container)).toEqual(printedBars('violated', 'Deployment', 'shop', 'api'));
    expect(screen.getByText('Deployment shop/api')).toBeTruthy();
    expect(screen.queryByText('Deployment shop/web')).toBeNull();
    const plan = screen.getByTestId('plan');
    for (const move of printed.plan) {
      expect(within(plan).getByText(move.pod)).toBeTruthy();
      expect(within(plan).getByText(move.from)).toBeTruthy();
      expect(within(plan).getByText(move.to)).toBeTruthy();
    }
    expect(plan.textContent).toContain(`Evictions: ${printed.plan.length}`);
    expect(screen.getByText('/report').getAttribute('href')).toBe('/x/report');
    expect(screen.getByTestId('no-drill')).toBeTruthy();
  });

  test('holds: no violated constraint, no plan, no drill', () => {
    const { container } = renderInTheme(
      <ClusterPage state={ready(fixtureDoc('holds'))} reportHref="/report" />
    );
    expect(screen.getByText('Every audited constraint holds.')).toBeTruthy();
    expect(screen.getByTestId('no-plan')).toBeTruthy();
    expect(screen.getByTestId('no-drill')).toBeTruthy();
    expect(bars(container)).toEqual([]);
  });

  test('a drill: its nodes, the pending pods and whether a new node helps', () => {
    const printed = fixtureJson('outage');
    renderInTheme(<ClusterPage state={ready(fixtureDoc('outage'))} reportHref="/report" />);
    const drill = screen.getByTestId('drill');
    expect(drill.textContent).toContain(printed.unreachableNodes.join(', '));
    for (const pod of printed.pending) {
      expect(within(drill).getByText(pod)).toBeTruthy();
    }
    expect(within(drill).getAllByText(printed.scaleUpReasons[printed.pending[0]]).length).toBe(
      printed.pending.length
    );
    expect(drill.textContent).toContain(printed.notRecreated.join(', '));
    // the outage leaves shop/web violated: it heads the table
    expect(screen.getByText('Deployment shop/web')).toBeTruthy();
  });

  test('the in-cluster document: when the audit ran', () => {
    const printed = fixtureJson('in-cluster');
    renderInTheme(<ClusterPage state={ready(fixtureDoc('in-cluster'))} reportHref="/report" />);
    expect(screen.getByTestId('generated').textContent).toContain(`Audited ${printed.generated}`);
    expect(screen.getByTestId('generated').textContent).toContain(
      `violated constraints: ${printed.violations}`
    );
  });
});

describe('strings from the cluster', () => {
  const hostile = '<img src=x onerror="window.__owned=1">';
  const text = JSON.stringify({
    workloads: [
      {
        kind: 'Deployment',
        namespace: 'shop',
        name: hostile,
        constraints: [
          {
            index: 0,
            topologyKey: hostile,
            whenUnsatisfiable: 'DoNotSchedule',
            maxSkew: 1,
            minDomains: null,
            skew: 2,
            violated: true,
            domains: { [hostile]: 2, b: 0 },
          },
        ],
      },
    ],
    violations: 1,
    plan: [{ pod: `shop/${hostile}`, from: hostile, to: 'b' }],
  });

  test.each(['detail section', 'cluster page'])('are text in the %s, never markup', view => {
    const state = ready(parseReport(text));
    const { container } =
      view === 'detail section'
        ? section(state, { kind: 'Deployment', namespace: 'shop', name: hostile })
        : renderInTheme(<ClusterPage state={state} reportHref="/report" />);
    expect(container.querySelector('img')).toBeNull();
    expect(container.textContent).toContain(hostile);
    expect(bars(container)[0]).toEqual([hostile, 2]);
    expect((window as any).__owned).toBeUndefined();
  });
});

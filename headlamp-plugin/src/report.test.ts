/*
 * The document's check and lookups, on the documents the real CLI made (fixtures) and
 * on small documents drawn by the builders below.
 *
 * Legend: a workload drawn as "ns/name 3/1/0 max 1" has one zone constraint with
 * those pods per zone (zone-a/zone-b/zone-c), skew and violated as the audit would
 * report them (given here, never computed).
 */

import { describe, expect, test } from 'vitest';
import {
  AuditDocument,
  ConstraintEntry,
  entriesFor,
  MalformedReport,
  parseReport,
  pendingRows,
  selectorText,
  violationsWorstFirst,
  WorkloadEntry,
} from './report';
import { fixtureDoc, fixtureJson, FixtureName } from './testing/fixtures';

function constraint(
  counts: number[],
  maxSkew: number,
  skew: number,
  violated: boolean
): ConstraintEntry {
  const zones = ['zone-a', 'zone-b', 'zone-c'];
  return {
    index: 0,
    topologyKey: 'topology.kubernetes.io/zone',
    whenUnsatisfiable: 'DoNotSchedule',
    maxSkew,
    minDomains: null,
    skew,
    violated,
    domains: Object.fromEntries(counts.map((n, i) => [zones[i], n])),
  };
}

function workload(kind: string, ref: string, ...constraints: ConstraintEntry[]): WorkloadEntry {
  const [namespace, name] = ref.split('/');
  return { kind, namespace, name, constraints };
}

function doc(...workloads: WorkloadEntry[]): AuditDocument {
  const violations = workloads.flatMap(w => w.constraints).filter(c => c.violated).length;
  return { workloads, violations };
}

describe('parseReport', () => {
  const names: FixtureName[] = ['holds', 'violated', 'outage', 'pending', 'in-cluster'];
  test.each(names)('reads the CLI document %s as printed', name => {
    const printed = fixtureJson(name);
    const read = fixtureDoc(name);
    expect(read).toEqual(printed);
    expect(read.workloads.length).toBeGreaterThan(0);
  });

  const malformed: [string, string, string][] = [
    ['not JSON', '<html>502 Bad Gateway</html>', 'not JSON'],
    ['a list', '[]', 'not a JSON object'],
    ['no workloads', '{"violations": 0}', '"workloads" is not a list'],
    ['the error document', '{"error": "no audit has completed yet"}', 'answered with an error'],
    [
      'a count that is text',
      '{"workloads": [{"kind": "Deployment", "namespace": "a", "name": "b", "constraints": [{"index": 0, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 1, "skew": 0, "violated": false, "domains": {"z": "2"}}]}], "violations": 0}',
      'workloads[0].constraints[0].domains is not a map of counts',
    ],
    [
      'a verdict that is text',
      '{"workloads": [{"kind": "Deployment", "namespace": "a", "name": "b", "constraints": [{"index": 0, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 1, "skew": 3, "violated": "yes", "domains": {}}]}], "violations": 1}',
      'workloads[0].constraints[0].violated is not a boolean',
    ],
    [
      'a name that is a number',
      '{"workloads": [{"kind": "Pod", "namespace": "a", "name": 7, "constraints": []}], "violations": 0}',
      'workloads[0].name is not a string',
    ],
    [
      'a move without a target',
      '{"workloads": [], "violations": 0, "plan": [{"pod": "a/b", "from": "n1"}]}',
      'plan[0] lacks pod, from or to',
    ],
    [
      'violations as text',
      '{"workloads": [], "violations": "1"}',
      '"violations" is not an integer',
    ],
    [
      'a selector whose labels are numbers',
      '{"workloads": [{"kind": "Deployment", "namespace": "a", "name": "b", "constraints": [{"index": 0, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 1, "skew": 0, "violated": false, "domains": {}, "labelSelector": {"matchLabels": {"app": 1}}}]}], "violations": 0}',
      'workloads[0].constraints[0].labelSelector.matchLabels is not a map of strings',
    ],
  ];
  test.each(malformed)('refuses %s, naming what is wrong', (_, text, message) => {
    expect(() => parseReport(text)).toThrow(MalformedReport);
    expect(() => parseReport(text)).toThrow(message);
  });

  test('keeps keys it does not know (the document may grow)', () => {
    const read = parseReport('{"workloads": [], "violations": 0, "newKey": {"a": 1}}');
    expect((read as unknown as Record<string, unknown>).newKey).toEqual({ a: 1 });
  });
});

describe('violationsWorstFirst', () => {
  test('the CLI document: the one violated constraint, shop/api over maxSkew 1', () => {
    const found = violationsWorstFirst(fixtureDoc('violated'));
    const printed = fixtureJson('violated');
    const api = printed.workloads.find((w: WorkloadEntry) => w.name === 'api');
    expect(found.map(v => [v.workload.name, v.constraint])).toEqual([['api', api.constraints[0]]]);
  });

  test('the CLI document where every constraint holds: none', () => {
    expect(violationsWorstFirst(fixtureDoc('holds'))).toEqual([]);
  });

  // name, workloads, the order expected (namespace/name)
  const cases: [string, WorkloadEntry[], string[]][] = [
    [
      'more above maxSkew first',
      [
        workload('Deployment', 'a/small', constraint([2, 0, 0], 1, 2, true)),
        workload('Deployment', 'b/large', constraint([5, 0, 0], 1, 5, true)),
      ],
      ['b/large', 'a/small'],
    ],
    [
      'same excess: larger skew first',
      [
        workload('Deployment', 'a/x', constraint([2, 0, 0], 1, 2, true)),
        workload('Deployment', 'a/y', constraint([4, 1, 1], 2, 3, true)),
      ],
      ['a/y', 'a/x'],
    ],
    [
      'ties by name; constraints that hold left out',
      [
        workload('StatefulSet', 'shop/db', constraint([3, 1, 1], 1, 2, true)),
        workload('Deployment', 'shop/web', constraint([3, 1, 1], 1, 2, true)),
        workload('Deployment', 'shop/ok', constraint([1, 1, 1], 1, 0, false)),
      ],
      ['shop/web', 'shop/db'],
    ],
  ];
  test.each(cases)('%s', (_, workloads, order) => {
    const found = violationsWorstFirst(doc(...workloads));
    expect(found.map(v => `${v.workload.namespace}/${v.workload.name}`)).toEqual(order);
  });
});

describe('entriesFor', () => {
  const audited = fixtureDoc('in-cluster');
  // page, expected entries (Kind ns/name), under
  const cases: [string, Parameters<typeof entriesFor>[1], string[], string | undefined][] = [
    [
      'a Deployment: its own',
      { kind: 'Deployment', namespace: 'shop', name: 'api' },
      ['Deployment shop/api'],
      undefined,
    ],
    [
      "a Deployment's ReplicaSet: the Deployment's",
      {
        kind: 'ReplicaSet',
        namespace: 'shop',
        name: 'api-58d4c7f9b',
        owner: { kind: 'Deployment', name: 'api' },
      },
      ['Deployment shop/api'],
      'Deployment shop/api',
    ],
    [
      'another namespace: none',
      { kind: 'Deployment', namespace: 'blog', name: 'api' },
      [],
      undefined,
    ],
    [
      'an owner the audit has not: none',
      {
        kind: 'ReplicaSet',
        namespace: 'shop',
        name: 'x-1',
        owner: { kind: 'Deployment', name: 'x' },
      },
      [],
      undefined,
    ],
  ];
  test.each(cases)('%s', (_, ref, expected, under) => {
    const found = entriesFor(audited, ref);
    expect(found.entries.map(w => `${w.kind} ${w.namespace}/${w.name}`)).toEqual(expected);
    expect(found.under).toEqual(under);
  });
});

describe('pendingRows', () => {
  test("the drill's pending pod of the workload: the audit's reasons and scale-up verdict", () => {
    const printed = fixtureJson('pending');
    const rows = pendingRows(fixtureDoc('pending'), [
      { namespace: 'shop', name: 'web-5d9c-a', phase: 'Running' },
      { namespace: 'shop', name: 'other', phase: 'Running' },
    ]);
    expect(rows).toEqual([
      {
        pod: 'shop/web-5d9c-a',
        reason: Object.entries(printed.pendingReasons['shop/web-5d9c-a'])
          .map(([r, n]) => `${r}: ${n}`)
          .join('; '),
        scaleUp: printed.scaleUpReasons['shop/web-5d9c-a'],
        source: 'audit',
      },
    ]);
    expect(rows[0].scaleUp).toMatch(/^no new node would help/);
  });

  test("a pod Pending in the cluster that the audit did not list: the scheduler's message", () => {
    const rows = pendingRows(fixtureDoc('in-cluster'), [
      {
        namespace: 'shop',
        name: 'api-58d4c7f9b-new',
        phase: 'Pending',
        unschedulable: { reason: 'Unschedulable', message: '0/6 nodes are available' },
      },
      { namespace: 'shop', name: 'api-58d4c7f9b-run', phase: 'Running' },
    ]);
    expect(rows).toEqual([
      {
        pod: 'shop/api-58d4c7f9b-new',
        reason: 'Unschedulable: 0/6 nodes are available',
        scaleUp: null,
        source: 'cluster',
      },
    ]);
  });

  test("pending pods of other workloads are not the workload's", () => {
    expect(
      pendingRows(fixtureDoc('outage'), [{ namespace: 'shop', name: 'api-1', phase: 'Running' }])
    ).toEqual([]);
  });
});

describe('selectorText', () => {
  test("the in-cluster document's selector, the revision merged in by matchLabelKeys", () => {
    const printed = fixtureJson('in-cluster');
    const api = printed.workloads.find((w: WorkloadEntry) => w.name === 'api');
    expect(api.constraints[0].labelSelector.matchExpressions[0].key).toBe('pod-template-hash');
    expect(selectorText(api.constraints[0].labelSelector)).toBe(
      `app=api, tier=backend, pod-template-hash in (${api.constraints[0].labelSelector.matchExpressions[0].values[0]})`
    );
  });

  // selector, text
  const cases: [string, Parameters<typeof selectorText>[0], string][] = [
    ['none', undefined, ''],
    ['empty: every pod', {}, ''],
    ['Exists', { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, 'tier Exists'],
    [
      'NotIn with two values',
      { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a', 'b'] }] },
      'zone notin (a, b)',
    ],
  ];
  test.each(cases)('%s', (_, selector, text) => {
    expect(selectorText(selector)).toBe(text);
  });
});

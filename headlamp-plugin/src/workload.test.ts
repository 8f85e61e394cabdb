/*
 * The page's own objects as the detail section reads them: built as raw JSON by the
 * small builders below (a Deployment's ReplicaSet, a Pod and its PodScheduled condition).
 */

import { describe, expect, test } from 'vitest';
import { labelSelector, livePod, RawPod, RawWorkload, workloadRef } from './workload';

function replicaSet(
  name: string,
  owners: RawWorkload['metadata']['ownerReferences'] = []
): RawWorkload {
  return {
    kind: 'ReplicaSet',
    metadata: { namespace: 'shop', name, ownerReferences: owners },
    spec: { selector: { matchLabels: { app: 'web', 'pod-template-hash': '7d4b9c' } } },
  };
}

function pod(
  phase: string,
  scheduled?: { status: string; reason?: string; message?: string }
): RawPod {
  return {
    metadata: { namespace: 'shop', name: 'web-7d4b9c-q2' },
    status: { phase, conditions: scheduled ? [{ type: 'PodScheduled', ...scheduled }] : [] },
  };
}

describe('workloadRef', () => {
  test("a Deployment's ReplicaSet: its controller owner", () => {
    const rs = replicaSet('web-7d4b9c', [
      { kind: 'HorizontalPodAutoscaler', name: 'not-a-controller' },
      { kind: 'Deployment', name: 'web', controller: true },
    ]);
    expect(workloadRef(rs)).toEqual({
      kind: 'ReplicaSet',
      namespace: 'shop',
      name: 'web-7d4b9c',
      owner: { kind: 'Deployment', name: 'web' },
    });
  });

  test('a bare ReplicaSet, or owners none of which is the controller: no owner', () => {
    expect(workloadRef(replicaSet('web-1')).owner).toBeUndefined();
    expect(
      workloadRef(replicaSet('web-2', [{ kind: 'Deployment', name: 'web' }])).owner
    ).toBeUndefined();
  });
});

describe('labelSelector', () => {
  test('matchLabels as kubectl -l takes them', () => {
    expect(labelSelector(replicaSet('web-1'))).toBe('app=web,pod-template-hash=7d4b9c');
  });

  test('no matchLabels: empty (the section then lists no pod)', () => {
    expect(labelSelector({ kind: 'StatefulSet', metadata: { namespace: 'a', name: 'b' } })).toBe(
      ''
    );
  });
});

describe('livePod', () => {
  // phase, PodScheduled, expected unschedulable
  const cases: [string, string, Parameters<typeof pod>[1], unknown][] = [
    [
      'Pending and unschedulable: the scheduler reason and message',
      'Pending',
      { status: 'False', reason: 'Unschedulable', message: '0/6 nodes are available' },
      { reason: 'Unschedulable', message: '0/6 nodes are available' },
    ],
    ['Pending, not yet tried: nothing', 'Pending', undefined, undefined],
    ['Running: nothing', 'Running', { status: 'True' }, undefined],
  ];
  test.each(cases)('%s', (_, phase, scheduled, unschedulable) => {
    expect(livePod(pod(phase, scheduled))).toEqual({
      namespace: 'shop',
      name: 'web-7d4b9c-q2',
      phase,
      unschedulable,
    });
  });
});

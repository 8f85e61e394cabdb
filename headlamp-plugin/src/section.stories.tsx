/*
 * The views in each state, on the documents the real CLI made (fixtures). `make
 * test-plugin` builds these stories statically and opens each in Chromium
 * (tests/headlamp/storybook.py): it checks the bars against the CLI's JSON and that
 * the console stays clean, and keeps a screenshot of each.
 */

import { Meta, StoryObj } from '@storybook/react';
import React from 'react';
import { AuditState, DEFAULT_LOCATION } from './source';
import { InHeadlamp } from './testing/context';
import { fixtureDoc, FixtureName } from './testing/fixtures';
import { SpreadSection } from './views';

const location = DEFAULT_LOCATION;

function ready(name: FixtureName): AuditState {
  return { kind: 'ready', location, doc: fixtureDoc(name) };
}

const NOT_READY: Record<string, AuditState> = {
  missing: { kind: 'missing', location },
  noEndpoint: { kind: 'no-endpoint', location },
  unreachable: {
    kind: 'unreachable',
    location,
    status: 503,
    message: 'Service Unavailable - no endpoints available for service "topospread-audit"',
  },
  malformed: {
    kind: 'malformed',
    location,
    message: 'not JSON: Unexpected token \'<\', "<html>" is not valid JSON',
  },
};

const inHeadlamp = (Story: React.ComponentType) => (
  <InHeadlamp>
    <Story />
  </InHeadlamp>
);

const detail: Meta<typeof SpreadSection> = {
  title: 'Topology spread/Detail section',
  component: SpreadSection,
  decorators: [inHeadlamp],
};
export default detail;

type DetailStory = StoryObj<typeof SpreadSection>;
const web = { kind: 'Deployment', namespace: 'shop', name: 'web' };

export const Holds: DetailStory = { args: { state: ready('holds'), workload: web, pods: [] } };

export const Violated: DetailStory = {
  args: {
    state: ready('in-cluster'),
    workload: { kind: 'Deployment', namespace: 'shop', name: 'api' },
    pods: [],
  },
};

export const Pending: DetailStory = {
  args: {
    state: ready('outage'),
    workload: web,
    pods: [
      { namespace: 'shop', name: 'web-6f7c-a1', phase: 'Running' },
      { namespace: 'shop', name: 'web-6f7c-a2', phase: 'Running' },
    ],
  },
};

export const ReplicaSetOfADeployment: DetailStory = {
  args: {
    state: ready('in-cluster'),
    workload: {
      kind: 'ReplicaSet',
      namespace: 'shop',
      name: 'api-58d4c7f9b',
      owner: { kind: 'Deployment', name: 'api' },
    },
    pods: [],
  },
};

export const NoAudit: DetailStory = { args: { state: NOT_READY.missing, workload: web, pods: [] } };
export const NoEndpoint: DetailStory = {
  args: { state: NOT_READY.noEndpoint, workload: web, pods: [] },
};
export const Unreachable: DetailStory = {
  args: { state: NOT_READY.unreachable, workload: web, pods: [] },
};
export const Malformed: DetailStory = {
  args: { state: NOT_READY.malformed, workload: web, pods: [] },
};

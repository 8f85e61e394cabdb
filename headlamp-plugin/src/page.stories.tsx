/* The cluster-level page in each state (see views.stories.tsx). */

import { Meta, StoryObj } from '@storybook/react';
import React from 'react';
import { AuditState, DEFAULT_LOCATION, proxyPath } from './source';
import { InHeadlamp } from './testing/context';
import { fixtureDoc, FixtureName } from './testing/fixtures';
import { ClusterPage } from './views';

const location = DEFAULT_LOCATION;
const reportHref = `/clusters/main${proxyPath(location, 'report')}`;

function ready(name: FixtureName): AuditState {
  return { kind: 'ready', location, doc: fixtureDoc(name) };
}

const page: Meta<typeof ClusterPage> = {
  title: 'Topology spread/Cluster page',
  component: ClusterPage,
  decorators: [
    (Story: React.ComponentType) => (
      <InHeadlamp>
        <Story />
      </InHeadlamp>
    ),
  ],
};
export default page;

type PageStory = StoryObj<typeof ClusterPage>;

/** The in-cluster audit's own /report.json: violations, no drill, no plan. */
export const InCluster: PageStory = { args: { state: ready('in-cluster'), reportHref } };
/** `audit --plan`: the violation and the evictions that fix it. */
export const WithPlan: PageStory = { args: { state: ready('violated'), reportHref } };
/** `audit --unreachable-nodes`: the drill's pending pods and the scale-up verdict. */
export const Drill: PageStory = { args: { state: ready('outage'), reportHref } };
export const Holds: PageStory = { args: { state: ready('holds'), reportHref } };
export const NoAudit: PageStory = { args: { state: { kind: 'missing', location }, reportHref } };
export const Malformed: PageStory = {
  args: {
    state: { kind: 'malformed', location, message: '"workloads" is not a list' },
    reportHref,
  },
};

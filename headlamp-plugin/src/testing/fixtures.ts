/*
 * The audit documents the tests and the stories read: made by the real CLI before they
 * run (`make test-plugin`, `make headlamp-storybook`: python -m tests.headlamp.fixtures
 * headlamp-plugin/fixtures), never written by hand, so the plugin cannot drift from
 * the JSON the audit prints.
 */

import holds from '../../fixtures/holds.json';
import inCluster from '../../fixtures/in-cluster.json';
import outage from '../../fixtures/outage.json';
import pending from '../../fixtures/pending.json';
import violated from '../../fixtures/violated.json';
import { AuditDocument, parseReport } from '../report';

const DOCUMENTS = { holds, violated, outage, pending, 'in-cluster': inCluster };

export type FixtureName = keyof typeof DOCUMENTS;

/** The document's text, as the audit printed or served it. */
export function fixtureText(name: FixtureName): string {
  return JSON.stringify(DOCUMENTS[name]);
}

/** The document as the CLI printed it, parsed by JSON.parse alone (the expectation). */
export function fixtureJson(name: FixtureName): any {
  return JSON.parse(fixtureText(name));
}

/** The document as the plugin reads it. */
export function fixtureDoc(name: FixtureName): AuditDocument {
  return parseReport(fixtureText(name));
}

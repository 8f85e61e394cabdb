/*
 * The audit's JSON document (`topospread audit -o json`, served in the cluster as
 * /report.json): its types, a check of its shape, and the lookups the views need.
 *
 * Every number and verdict shown comes from the document: skew, maxSkew, violated,
 * the pods per domain, pending reasons and the scale-up verdicts are the audit's. Nothing
 * here decides whether a constraint holds; the plugin only picks, orders and shows.
 */

/** One constraint evaluation of a workload (`workloads[].constraints[]`). */
export interface ConstraintEntry {
  index: number;
  topologyKey: string;
  whenUnsatisfiable: string;
  maxSkew: number;
  minDomains: number | null;
  skew: number;
  violated: boolean;
  /** Every eligible domain -> its matching running pods (0 included). */
  domains: Record<string, number>;
  /** After a drill: the domains as they were before it. */
  before?: Record<string, number>;
  /** The pods it counts: the constraint's selector, matchLabelKeys' values merged in. */
  labelSelector?: LabelSelector;
}

/** A label selector as Kubernetes writes it. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** A selector as one line, kubectl's way (`app=web, pod-template-hash in (58d4c7f9b)`). */
export function selectorText(selector: LabelSelector | undefined): string {
  if (selector === undefined) {
    return '';
  }
  const labels = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  const expressions = (selector.matchExpressions ?? []).map(e =>
    e.values !== undefined && e.values.length > 0
      ? `${e.key} ${e.operator.toLowerCase()} (${e.values.join(', ')})`
      : `${e.key} ${e.operator}`
  );
  return [...labels, ...expressions].join(', ');
}

/** One audited workload (`workloads[]`). */
export interface WorkloadEntry {
  kind: string;
  namespace: string;
  name: string;
  pods?: number;
  constraints: ConstraintEntry[];
}

/** One move of the rebalancing plan (`plan[]`): an eviction, then a placement. */
export interface Move {
  pod: string;
  from: string;
  to: string;
}

/** A scale-up template where a pending pod would fit (`scaleUp["ns/pod"][]`). */
export interface ScaleUpTemplate {
  group: string;
  zone: string;
}

/** The document, with the keys the plugin reads; any other key is kept and ignored. */
export interface AuditDocument {
  workloads: WorkloadEntry[];
  violations: number;
  /** When the in-cluster audit ran (added by /report.json, RFC 3339). */
  generated?: string;
  kubernetesVersion?: string;
  plan?: Move[];
  planComplete?: boolean;
  planReasons?: Record<string, unknown>;
  removedNodes?: string[];
  unreachableNodes?: string[];
  drainedNodes?: string[];
  blocked?: Record<string, string>;
  pending?: string[];
  pendingReasons?: Record<string, Record<string, number>>;
  notRecreated?: string[];
  notRecreatedReason?: string;
  scaleUp?: Record<string, ScaleUpTemplate[]>;
  scaleUpReasons?: Record<string, string>;
  scaleUpSummary?: string[];
}

/** Why a document was refused: a sentence naming the first key that is wrong. */
export class MalformedReport extends Error {}

type Json = unknown;

function isObject(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function need(ok: boolean, what: string): void {
  if (!ok) {
    throw new MalformedReport(what);
  }
}

function isCounts(value: Json): value is Record<string, number> {
  return isObject(value) && Object.values(value).every(n => Number.isInteger(n));
}

function isStrings(value: Json): value is string[] {
  return Array.isArray(value) && value.every(s => typeof s === 'string');
}

function checkConstraint(c: Json, where: string): void {
  need(isObject(c), `${where} is not an object`);
  const e = c as Record<string, Json>;
  need(typeof e.topologyKey === 'string', `${where}.topologyKey is not a string`);
  need(typeof e.whenUnsatisfiable === 'string', `${where}.whenUnsatisfiable is not a string`);
  need(Number.isInteger(e.index), `${where}.index is not an integer`);
  need(Number.isInteger(e.maxSkew), `${where}.maxSkew is not an integer`);
  need(Number.isInteger(e.skew), `${where}.skew is not an integer`);
  need(typeof e.violated === 'boolean', `${where}.violated is not a boolean`);
  need(isCounts(e.domains), `${where}.domains is not a map of counts`);
  need(e.before === undefined || isCounts(e.before), `${where}.before is not a map of counts`);
  if (e.labelSelector !== undefined) {
    checkSelector(e.labelSelector, `${where}.labelSelector`);
  }
}

function checkSelector(s: Json, where: string): void {
  need(isObject(s), `${where} is not an object`);
  const sel = s as Record<string, Json>;
  need(
    sel.matchLabels === undefined ||
      (isObject(sel.matchLabels) &&
        Object.values(sel.matchLabels).every(v => typeof v === 'string')),
    `${where}.matchLabels is not a map of strings`
  );
  need(
    sel.matchExpressions === undefined ||
      (Array.isArray(sel.matchExpressions) &&
        sel.matchExpressions.every(
          x =>
            isObject(x) &&
            typeof x.key === 'string' &&
            typeof x.operator === 'string' &&
            (x.values === undefined || isStrings(x.values))
        )),
    `${where}.matchExpressions is not a list of requirements`
  );
}

function checkWorkload(w: Json, i: number): void {
  const where = `workloads[${i}]`;
  need(isObject(w), `${where} is not an object`);
  const e = w as Record<string, Json>;
  for (const key of ['kind', 'namespace', 'name']) {
    need(typeof e[key] === 'string', `${where}.${key} is not a string`);
  }
  need(Array.isArray(e.constraints), `${where}.constraints is not a list`);
  (e.constraints as Json[]).forEach((c, j) => checkConstraint(c, `${where}.constraints[${j}]`));
}

/**
 * The document in `text`, checked: MalformedReport when it is not JSON or not the
 * shape of `audit -o json` (the keys the plugin reads; others may be added freely).
 */
export function parseReport(text: string): AuditDocument {
  let doc: Json;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new MalformedReport(`not JSON: ${(err as Error).message}`);
  }
  need(isObject(doc), 'the document is not a JSON object');
  const d = doc as Record<string, Json>;
  if (typeof d.error === 'string' && d.workloads === undefined) {
    throw new MalformedReport(`the audit answered with an error: ${d.error}`);
  }
  need(Array.isArray(d.workloads), '"workloads" is not a list');
  (d.workloads as Json[]).forEach(checkWorkload);
  need(Number.isInteger(d.violations), '"violations" is not an integer');
  need(d.generated === undefined || typeof d.generated === 'string', '"generated" is not a string');
  if (d.plan !== undefined) {
    need(Array.isArray(d.plan), '"plan" is not a list');
    (d.plan as Json[]).forEach((m, i) => {
      need(isObject(m), `plan[${i}] is not an object`);
      const move = m as Record<string, Json>;
      need(
        ['pod', 'from', 'to'].every(k => typeof move[k] === 'string'),
        `plan[${i}] lacks pod, from or to`
      );
    });
  }
  for (const key of [
    'pending',
    'removedNodes',
    'unreachableNodes',
    'drainedNodes',
    'notRecreated',
  ]) {
    need(d[key] === undefined || isStrings(d[key]), `"${key}" is not a list of strings`);
  }
  for (const key of ['pendingReasons', 'scaleUp', 'scaleUpReasons', 'blocked']) {
    need(d[key] === undefined || isObject(d[key]), `"${key}" is not an object`);
  }
  need(
    d.scaleUpSummary === undefined || isStrings(d.scaleUpSummary),
    '"scaleUpSummary" is not a list of strings'
  );
  return doc as unknown as AuditDocument;
}

/** A workload as the audit names it (`Kind namespace/name`). */
export function workloadLabel(w: { kind: string; namespace: string; name: string }): string {
  return `${w.kind} ${w.namespace}/${w.name}`;
}

/** What a detail page shows: the resource and, when the audit counts its pods under an
 * owner (a Deployment's ReplicaSet), that owner. */
export interface WorkloadRef {
  kind: string;
  namespace: string;
  name: string;
  /** The controller owner (ownerReferences, controller: true), when it has one. */
  owner?: { kind: string; name: string };
}

/**
 * The entries of the audit for a workload's detail page: its own, or else its
 * controller owner's (the audit reports a Deployment's ReplicaSets under the
 * Deployment); `under` names the owner when it was the owner's.
 */
export function entriesFor(
  doc: AuditDocument,
  ref: WorkloadRef
): { entries: WorkloadEntry[]; under?: string } {
  const match = (kind: string, name: string) =>
    doc.workloads.filter(w => w.kind === kind && w.namespace === ref.namespace && w.name === name);
  const own = match(ref.kind, ref.name);
  if (own.length > 0 || ref.owner === undefined) {
    return { entries: own };
  }
  const owners = match(ref.owner.kind, ref.owner.name);
  return owners.length > 0
    ? { entries: owners, under: `${ref.owner.kind} ${ref.namespace}/${ref.owner.name}` }
    : { entries: [] };
}

/** A violated constraint evaluation with its workload, for the cluster page. */
export interface Violation {
  workload: WorkloadEntry;
  constraint: ConstraintEntry;
  /** How far the skew the audit measured is above the maxSkew it allows. */
  excess: number;
}

/**
 * The constraint evaluations the audit marked violated, worst first: the largest
 * skew above maxSkew, then the largest skew, then by workload name (a stable order).
 */
export function violationsWorstFirst(doc: AuditDocument): Violation[] {
  const found: Violation[] = [];
  for (const workload of doc.workloads) {
    for (const constraint of workload.constraints) {
      if (constraint.violated) {
        found.push({ workload, constraint, excess: constraint.skew - constraint.maxSkew });
      }
    }
  }
  return found.sort(
    (a, b) =>
      b.excess - a.excess ||
      b.constraint.skew - a.constraint.skew ||
      workloadLabel(a.workload).localeCompare(workloadLabel(b.workload)) ||
      a.constraint.index - b.constraint.index
  );
}

/** A Pending pod of a workload, as the detail section lists it. */
export interface PendingRow {
  pod: string;
  /** The reasons: the audit's (`pendingReasons`, "reason: nodes") or the cluster's. */
  reason: string;
  /** The audit's verdict on a new node, or null when the audit did not diagnose it. */
  scaleUp: string | null;
  /** Where it comes from: the audit's drill, or the cluster's own pod status. */
  source: 'audit' | 'cluster';
}

/** A pod of the workload as the cluster lists it (the fields the section reads). */
export interface LivePod {
  namespace: string;
  name: string;
  phase: string;
  /** The PodScheduled condition's reason and message, when it is False. */
  unschedulable?: { reason: string; message: string };
}

function reasonsText(reasons: Record<string, number>): string {
  return Object.entries(reasons)
    .map(([reason, nodes]) => `${reason}: ${nodes}`)
    .join('; ');
}

function scaleUpText(doc: AuditDocument, pod: string): string | null {
  const verdict = doc.scaleUpReasons?.[pod];
  if (verdict !== undefined) {
    return verdict;
  }
  const templates = doc.scaleUp?.[pod];
  if (templates === undefined) {
    return null;
  }
  return templates.length === 0
    ? 'no new node would help'
    : `fits on a new node of ${templates.map(t => `${t.group} in ${t.zone}`).join(', ')}`;
}

/**
 * The Pending pods of a workload: those of the audit's `pending` among `pods` (the
 * workload's pods by name) with the audit's reasons and scale-up verdict, then the
 * cluster's own Pending pods the audit did not list, with the scheduler's message.
 */
export function pendingRows(doc: AuditDocument, pods: LivePod[]): PendingRow[] {
  const names = new Set(pods.map(p => `${p.namespace}/${p.name}`));
  const rows: PendingRow[] = (doc.pending ?? [])
    .filter(pod => names.has(pod))
    .map(pod => ({
      pod,
      reason: reasonsText(doc.pendingReasons?.[pod] ?? {}),
      scaleUp: scaleUpText(doc, pod),
      source: 'audit' as const,
    }));
  const listed = new Set(rows.map(r => r.pod));
  for (const p of pods) {
    const key = `${p.namespace}/${p.name}`;
    if (p.phase === 'Pending' && !listed.has(key)) {
      rows.push({
        pod: key,
        reason: p.unschedulable
          ? `${p.unschedulable.reason}: ${p.unschedulable.message}`
          : 'not scheduled yet',
        scaleUp: scaleUpText(doc, key),
        source: 'cluster',
      });
    }
  }
  return rows;
}

/** The drill a document reports, if any: its name and the nodes it took. */
export function drillOf(doc: AuditDocument): { name: string; nodes: string[] } | null {
  if (doc.removedNodes !== undefined) {
    return { name: 'nodes removed (--without-nodes)', nodes: doc.removedNodes };
  }
  if (doc.unreachableNodes !== undefined) {
    return { name: 'nodes unreachable (--unreachable-nodes)', nodes: doc.unreachableNodes };
  }
  if (doc.drainedNodes !== undefined) {
    return { name: 'nodes drained (--drain-nodes)', nodes: doc.drainedNodes };
  }
  return null;
}

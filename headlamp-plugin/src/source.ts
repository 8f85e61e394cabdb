/*
 * Where the audit's document comes from: the in-cluster audit's /report.json through
 * the API server's service proxy, and what each failure means to the person looking.
 */

import { AuditDocument, MalformedReport, parseReport } from './report';

/** The audit Service the manifests and the Helm chart install (deploy/, docs/audit-server.md). */
export interface AuditLocation {
  namespace: string;
  service: string;
  port: number;
}

export const DEFAULT_LOCATION: AuditLocation = {
  namespace: 'topospread',
  service: 'topospread-audit',
  port: 9090,
};

/** The command that installs the audit with its report endpoint (docs/headlamp.md). */
export const INSTALL_COMMAND =
  'helm upgrade --install topospread deploy/helm/topospread -n topospread ' +
  '--set audit.enabled=true --set audit.report=true';

/** What the views show: loading, one of the empty or error states, or the document. */
export type AuditState =
  | { kind: 'loading' }
  | { kind: 'missing'; location: AuditLocation }
  | { kind: 'no-endpoint'; location: AuditLocation }
  | { kind: 'unreachable'; location: AuditLocation; status: number; message: string }
  | { kind: 'malformed'; location: AuditLocation; message: string }
  | { kind: 'ready'; location: AuditLocation; doc: AuditDocument };

/** A GET of an API server path answering its body as text; it rejects with an Error
 * carrying `status` when the answer is not 2xx (Headlamp's ApiProxy.request does). */
export type GetText = (path: string) => Promise<string>;

export function servicePath(loc: AuditLocation): string {
  return `/api/v1/namespaces/${encodeURIComponent(loc.namespace)}/services/${encodeURIComponent(
    loc.service
  )}`;
}

/** The service-proxy path of the audit's `/report.json` (or `/report` with `page`). */
export function proxyPath(loc: AuditLocation, page: 'report.json' | 'report'): string {
  return `/api/v1/namespaces/${encodeURIComponent(
    loc.namespace
  )}/services/http:${encodeURIComponent(loc.service)}:${loc.port}/proxy/${page}`;
}

function statusOf(err: unknown): number {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : 0;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The audit's state: is its Service there (404: not installed), does it serve
 * /report.json (404: audit.report is off), and is the answer the audit's document.
 */
export async function loadAudit(
  get: GetText,
  loc: AuditLocation = DEFAULT_LOCATION
): Promise<AuditState> {
  try {
    await get(servicePath(loc));
  } catch (err) {
    const status = statusOf(err);
    if (status === 404) {
      return { kind: 'missing', location: loc };
    }
    return { kind: 'unreachable', location: loc, status, message: messageOf(err) };
  }
  let text: string;
  try {
    text = await get(proxyPath(loc, 'report.json'));
  } catch (err) {
    const status = statusOf(err);
    if (status === 404) {
      return { kind: 'no-endpoint', location: loc };
    }
    return { kind: 'unreachable', location: loc, status, message: messageOf(err) };
  }
  try {
    return { kind: 'ready', location: loc, doc: parseReport(text) };
  } catch (err) {
    if (err instanceof MalformedReport) {
      return { kind: 'malformed', location: loc, message: err.message };
    }
    throw err;
  }
}

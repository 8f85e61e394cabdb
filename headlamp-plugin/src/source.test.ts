/*
 * Reaching the audit: each answer of the API server and of the audit behind its
 * service proxy, and the state the views get for it.
 */

import { describe, expect, test } from 'vitest';
import { DEFAULT_LOCATION, GetText, loadAudit, proxyPath, servicePath } from './source';
import { fixtureJson, fixtureText } from './testing/fixtures';

const SERVICE = '/api/v1/namespaces/topospread/services/topospread-audit';
const DOCUMENT =
  '/api/v1/namespaces/topospread/services/http:topospread-audit:9090/proxy/report.json';

function failure(status: number, message: string): Error {
  return Object.assign(new Error(message), { status });
}

/** A GetText answering each path from `answers` (a text, or an Error to reject with). */
function api(answers: Record<string, string | Error>): GetText & { asked: string[] } {
  const asked: string[] = [];
  const get = async (path: string) => {
    asked.push(path);
    const answer = answers[path];
    if (answer === undefined) {
      throw failure(404, `unexpected path ${path}`);
    }
    if (answer instanceof Error) {
      throw answer;
    }
    return answer;
  };
  return Object.assign(get, { asked });
}

describe('the paths', () => {
  test('the Service and its proxy, as the manifests name them', () => {
    expect(servicePath(DEFAULT_LOCATION)).toBe(SERVICE);
    expect(proxyPath(DEFAULT_LOCATION, 'report.json')).toBe(DOCUMENT);
    expect(proxyPath(DEFAULT_LOCATION, 'report')).toBe(DOCUMENT.replace(/\.json$/, ''));
  });

  test('names are encoded into the path', () => {
    const odd = { namespace: 'a/b', service: 'c?d', port: 1 };
    expect(proxyPath(odd, 'report.json')).toBe(
      '/api/v1/namespaces/a%2Fb/services/http:c%3Fd:1/proxy/report.json'
    );
  });
});

describe('loadAudit', () => {
  const service = '{"kind": "Service"}';
  // name, answers, the state's kind, what its detail says
  const cases: [string, Record<string, string | Error>, string, RegExp | null][] = [
    [
      'no audit installed (the Service is 404)',
      { [SERVICE]: failure(404, 'services "topospread-audit" not found') },
      'missing',
      null,
    ],
    [
      'no right to read the Service',
      { [SERVICE]: failure(403, 'Forbidden - services is forbidden') },
      'unreachable',
      /Forbidden/,
    ],
    [
      'the audit without audit.report (404 behind the proxy)',
      { [SERVICE]: service, [DOCUMENT]: failure(404, 'Not Found - not found') },
      'no-endpoint',
      null,
    ],
    [
      'the audit not answering (503)',
      {
        [SERVICE]: service,
        [DOCUMENT]: failure(503, 'Service Unavailable - no endpoints available'),
      },
      'unreachable',
      /no endpoints/,
    ],
    [
      'no answer at all',
      { [SERVICE]: service, [DOCUMENT]: new Error('Failed to fetch') },
      'unreachable',
      /Failed to fetch/,
    ],
    [
      'an HTML page instead of JSON',
      { [SERVICE]: service, [DOCUMENT]: '<html><body>proxy error</body></html>' },
      'malformed',
      /not JSON/,
    ],
    [
      'JSON of another shape',
      { [SERVICE]: service, [DOCUMENT]: '{"items": []}' },
      'malformed',
      /"workloads" is not a list/,
    ],
    [
      'a document cut short',
      { [SERVICE]: service, [DOCUMENT]: fixtureText('in-cluster').slice(0, 200) },
      'malformed',
      /not JSON/,
    ],
  ];
  test.each(cases)('%s', async (_, answers, kind, detail) => {
    const state = await loadAudit(api(answers));
    expect(state.kind).toBe(kind);
    if (detail !== null) {
      expect((state as { message: string }).message).toMatch(detail);
    }
  });

  test('the status of a failure is kept for the view', async () => {
    const state = await loadAudit(api({ [SERVICE]: failure(403, 'Forbidden') }));
    expect(state).toMatchObject({ kind: 'unreachable', status: 403 });
  });

  test("the in-cluster audit's /report.json: ready, the document as served", async () => {
    const get = api({ [SERVICE]: service, [DOCUMENT]: fixtureText('in-cluster') });
    const state = await loadAudit(get);
    expect(state.kind).toBe('ready');
    expect(state.kind === 'ready' && state.doc).toEqual(fixtureJson('in-cluster'));
    expect(get.asked).toEqual([SERVICE, DOCUMENT]);
  });
});

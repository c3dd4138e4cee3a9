import { IntegrationError } from '../integration-error.ts';
import {
  createJsonRequest,
  type IntegrationAuth,
  type IntegrationFetch,
  isRecord,
  malformed,
} from '../integration-http.ts';

/**
 * The tenant's case component, TheHive 5, through the subset of its v1 API svc uses: open a
 * case when an investigation is escalated and attach its indicators. Both calls are safe to
 * repeat, because a job may be retried after it already acted: the case carries the tag
 * `svc-ref:<externalRef>` and is looked up by it first; observables already on the case are
 * not sent again.
 */

export type Severity = 1 | 2 | 3 | 4;
export type Tlp = 0 | 1 | 2 | 3 | 4;
export type Pap = 0 | 1 | 2 | 3;
export type ObservableType = 'ip' | 'domain' | 'url' | 'hash' | 'mail';

export interface CaseInput {
  title: string;
  description: string;
  severity: Severity;
  tags: string[];
  tlp?: Tlp;
  pap?: Pap;
  /** svc's own identifier of what the case is about (the investigation id). */
  externalRef: string;
}

export interface CaseRef {
  /** TheHive's id, `~<digits>`. */
  id: string;
  /** The case number analysts see (#12). */
  number: number;
  /** False when a case with this externalRef already existed and was returned instead. */
  created: boolean;
}

export interface ObservableInput {
  dataType: ObservableType;
  data: string;
  message?: string;
}

export interface TheHiveClient {
  createCase(input: CaseInput): Promise<CaseRef>;
  /** The case carrying `svc-ref:<externalRef>`, if any. */
  findCase(externalRef: string): Promise<Omit<CaseRef, 'created'> | undefined>;
  addObservables(
    caseId: string,
    observables: ObservableInput[],
  ): Promise<{ added: number; present: number }>;
}

export interface TheHiveClientOptions {
  baseUrl: string;
  auth: IntegrationAuth;
  fetch: IntegrationFetch;
  /** Per request. Default 15 s. */
  timeoutMs?: number;
}

const SERVICE = 'TheHive';

/** Tags are free text in TheHive; the prefix keeps svc's reference apart from analysts' tags. */
export function referenceTag(externalRef: string): string {
  return `svc-ref:${externalRef}`;
}

function toCaseRef(value: unknown): Omit<CaseRef, 'created'> {
  if (!isRecord(value) || typeof value._id !== 'string' || typeof value.number !== 'number')
    throw malformed(SERVICE, 'case');
  return { id: value._id, number: value.number };
}

function checkReference(externalRef: string): void {
  // A tag, so it has to be one line of modest length to be found again by equality.
  if (!/^[\x21-\x7e]{1,200}$/.test(externalRef))
    throw new IntegrationError('rejected', `externalRef must be 1-200 visible ASCII characters`);
}

const observableKey = (dataType: string, data: string) => `${dataType}\u0000${data}`;

export function createTheHiveClient(options: TheHiveClientOptions): TheHiveClient {
  const request = createJsonRequest({
    service: SERVICE,
    baseUrl: options.baseUrl,
    auth: options.auth,
    fetch: options.fetch,
    timeoutMs: options.timeoutMs ?? 15_000,
  });

  async function findCase(externalRef: string) {
    checkReference(externalRef);
    const found = await request('POST', '/api/v1/query?name=svc-case-by-ref', {
      query: [
        { _name: 'listCase' },
        { _name: 'filter', _eq: { _field: 'tags', _value: referenceTag(externalRef) } },
        { _name: 'sort', _fields: [{ _createdAt: 'asc' }] },
        { _name: 'page', from: 0, to: 1 },
      ],
    });
    if (!Array.isArray(found)) throw malformed(SERVICE, 'query result');
    return found.length === 0 ? undefined : toCaseRef(found[0]);
  }

  async function existingObservables(caseId: string): Promise<Set<string>> {
    const found = await request('POST', '/api/v1/query?name=svc-case-observables', {
      query: [
        { _name: 'getCase', idOrName: caseId },
        { _name: 'observables' },
        { _name: 'page', from: 0, to: 10_000 },
      ],
    });
    if (!Array.isArray(found)) throw malformed(SERVICE, 'query result');
    const keys = new Set<string>();
    for (const o of found) {
      if (isRecord(o) && typeof o.dataType === 'string' && typeof o.data === 'string')
        keys.add(observableKey(o.dataType, o.data));
    }
    return keys;
  }

  return {
    findCase,

    async createCase(input) {
      const existing = await findCase(input.externalRef);
      if (existing) return { ...existing, created: false };
      const tag = referenceTag(input.externalRef);
      const created = await request('POST', '/api/v1/case', {
        title: input.title,
        description: input.description,
        severity: input.severity,
        tags: input.tags.includes(tag) ? input.tags : [...input.tags, tag],
        ...(input.tlp === undefined ? {} : { tlp: input.tlp }),
        ...(input.pap === undefined ? {} : { pap: input.pap }),
      });
      return { ...toCaseRef(created), created: true };
    },

    async addObservables(caseId, observables) {
      const path = `/api/v1/case/${encodeURIComponent(caseId)}/observable`;
      const present = await existingObservables(caseId);
      let added = 0;
      for (const o of observables) {
        const key = observableKey(o.dataType, o.data);
        if (present.has(key)) continue;
        const body = await request('POST', path, {
          dataType: o.dataType,
          data: o.data,
          ...(o.message === undefined ? {} : { message: o.message }),
        });
        // TheHive 5 answers with the list of observables it created (one per data value).
        if (!Array.isArray(body)) throw malformed(SERVICE, 'observable list');
        present.add(key);
        added += 1;
      }
      return { added, present: observables.length - added };
    },
  };
}

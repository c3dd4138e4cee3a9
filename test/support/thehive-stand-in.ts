import {
  basicHeader,
  type Fault,
  type RecordedRequest,
  type Reply,
  startStandInServer,
} from './http-stand-in.ts';

/**
 * A local server speaking the subset of TheHive 5's v1 API svc uses: `POST /api/v1/case`,
 * `POST /api/v1/case/{id}/observable` (answers the list of created observables) and
 * `POST /api/v1/query` with the steps `listCase`, `getCase`, `observables`, `filter` (`_eq`, or
 * the bare `_field`/`_value` pair), `sort` on `_createdAt` and `page`. Objects have TheHive's
 * shape (`_id` `~<digits>`, `_type`, `_createdAt` in epoch millis, labels beside levels).
 * Authentication: `Bearer <apiKey>` or Basic with the login; anything else answers TheHive's 401.
 */

export type StandInCase = {
  _id: string;
  _type: 'Case';
  _createdBy: string;
  _createdAt: number;
  number: number;
  title: string;
  description: string;
  severity: number;
  severityLabel: string;
  startDate: number;
  tags: string[];
  flag: boolean;
  tlp: number;
  tlpLabel: string;
  pap: number;
  papLabel: string;
  status: 'New';
  stage: 'New';
  assignee: string;
  customFields: unknown[];
  extraData: Record<string, unknown>;
};

export type StandInObservable = {
  _id: string;
  _type: 'Observable';
  _createdBy: string;
  _createdAt: number;
  dataType: string;
  data: string;
  message?: string;
  startDate: number;
  tlp: number;
  tlpLabel: string;
  pap: number;
  papLabel: string;
  ioc: boolean;
  sighted: boolean;
  tags: string[];
  reports: Record<string, unknown>;
  extraData: Record<string, unknown>;
};

export interface TheHiveStandIn {
  url: string;
  apiKey: string;
  login: { user: string; password: string };
  requests: RecordedRequest[];
  failNext(count: number, fault: Fault): void;
  /** Cases are created at once, their answers held back (http-stand-in.ts). */
  setLatency(ms: number): void;
  cases(): StandInCase[];
  observables(caseId: string): StandInObservable[];
  close(): Promise<void>;
}

const SEVERITY = ['', 'LOW', 'MEDIUM', 'HIGH', 'CRITICAL'];
const TLP = ['CLEAR', 'GREEN', 'AMBER', 'AMBER+STRICT', 'RED'];
const PAP = ['CLEAR', 'GREEN', 'AMBER', 'RED'];
const DATA_TYPES = new Set([
  'ip',
  'domain',
  'fqdn',
  'url',
  'hash',
  'mail',
  'mail_subject',
  'filename',
  'hostname',
  'user-agent',
  'uri_path',
  'registry',
  'other',
]);

const error = (status: number, type: string, message: string): Reply => ({
  status,
  body: { type, message },
});

const isInt = (v: unknown, min: number, max: number): v is number =>
  Number.isInteger(v) && (v as number) >= min && (v as number) <= max;

type Entity = Record<string, unknown>;

/** One filter expression: `{_eq: {_field, _value}}`, its bare form, `_and`, `_or`, `_not`. */
function matches(entity: Entity, filter: Entity): boolean {
  if (Array.isArray(filter._and)) return filter._and.every((f) => matches(entity, f as Entity));
  if (Array.isArray(filter._or)) return filter._or.some((f) => matches(entity, f as Entity));
  if (filter._not) return !matches(entity, filter._not as Entity);
  const eq = (filter._eq ?? filter) as { _field?: unknown; _value?: unknown };
  if (typeof eq._field !== 'string') throw new Error('unsupported filter');
  const actual = entity[eq._field];
  return Array.isArray(actual) ? actual.includes(eq._value) : actual === eq._value;
}

export async function startTheHiveStandIn(
  options: { apiKey?: string; user?: string; password?: string } = {},
): Promise<TheHiveStandIn> {
  const apiKey = options.apiKey ?? 'thehive-test-key';
  const login = { user: options.user ?? 'admin@thehive.local', password: options.password ?? 'p' };
  const cases: StandInCase[] = [];
  const observables = new Map<string, StandInObservable[]>();
  let sequence = 4096;
  const nextId = () => {
    sequence += 4096;
    return `~${sequence}`;
  };

  function createCase(body: Entity): Reply {
    if (typeof body.title !== 'string' || body.title.trim() === '')
      return error(400, 'AttributeCheckingError', 'title is missing');
    if (typeof body.description !== 'string')
      return error(400, 'AttributeCheckingError', 'description is missing');
    const severity = body.severity ?? 2;
    const tlp = body.tlp ?? 2;
    const pap = body.pap ?? 2;
    const tags = body.tags ?? [];
    if (!isInt(severity, 1, 4)) return error(400, 'AttributeCheckingError', 'invalid severity');
    if (!isInt(tlp, 0, 4)) return error(400, 'AttributeCheckingError', 'invalid tlp');
    if (!isInt(pap, 0, 3)) return error(400, 'AttributeCheckingError', 'invalid pap');
    if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string'))
      return error(400, 'AttributeCheckingError', 'invalid tags');
    const now = Date.now();
    const created: StandInCase = {
      _id: nextId(),
      _type: 'Case',
      _createdBy: login.user,
      _createdAt: now,
      number: cases.length + 1,
      title: body.title,
      description: body.description,
      severity,
      severityLabel: SEVERITY[severity] ?? '',
      startDate: now,
      tags: [...new Set(tags as string[])],
      flag: false,
      tlp,
      tlpLabel: TLP[tlp] ?? '',
      pap,
      papLabel: PAP[pap] ?? '',
      status: 'New',
      stage: 'New',
      assignee: login.user,
      customFields: [],
      extraData: {},
    };
    cases.push(created);
    observables.set(created._id, []);
    return { status: 201, body: created };
  }

  function addObservable(caseId: string, body: Entity): Reply {
    const list = observables.get(caseId);
    if (!list) return error(404, 'NotFoundError', `Case ${caseId} not found`);
    if (typeof body.dataType !== 'string' || !DATA_TYPES.has(body.dataType))
      return error(400, 'BadRequest', `Observable type ${String(body.dataType)} not found`);
    // TheHive 5 takes one value or a list of values of the same type.
    const values = Array.isArray(body.data) ? body.data : [body.data];
    if (values.length === 0 || !values.every((v) => typeof v === 'string' && v !== ''))
      return error(400, 'AttributeCheckingError', 'data is missing');
    const now = Date.now();
    const created = (values as string[]).map(
      (data): StandInObservable => ({
        _id: nextId(),
        _type: 'Observable',
        _createdBy: login.user,
        _createdAt: now,
        dataType: body.dataType as string,
        data,
        ...(typeof body.message === 'string' ? { message: body.message } : {}),
        startDate: now,
        tlp: 2,
        tlpLabel: 'AMBER',
        pap: 2,
        papLabel: 'AMBER',
        ioc: false,
        sighted: false,
        tags: [],
        reports: {},
        extraData: {},
      }),
    );
    list.push(...created);
    return { status: 201, body: created };
  }

  function query(body: Entity): Reply {
    const steps = body.query;
    if (!Array.isArray(steps) || steps.length === 0)
      return error(400, 'BadRequest', 'query is missing');
    let result: Entity[] = [];
    let caseId: string | undefined;
    for (const step of steps as Entity[]) {
      switch (step._name) {
        case 'listCase':
          result = [...cases];
          break;
        case 'getCase': {
          const found = cases.find(
            (c) => c._id === step.idOrName || `${c.number}` === step.idOrName,
          );
          if (!found) return error(404, 'NotFoundError', `Case ${String(step.idOrName)} not found`);
          caseId = found._id;
          result = [found];
          break;
        }
        case 'observables':
          if (caseId === undefined) return error(400, 'BadRequest', 'observables needs a case');
          result = [...(observables.get(caseId) ?? [])];
          break;
        case 'filter':
          try {
            result = result.filter((e) => matches(e, step));
          } catch {
            return error(400, 'BadRequest', 'Invalid filter');
          }
          break;
        case 'sort': {
          const [first] = (step._fields as Array<Record<string, string>> | undefined) ?? [];
          const descending = first?._createdAt === 'desc';
          result.sort(
            (a, b) => ((a._createdAt as number) - (b._createdAt as number)) * (descending ? -1 : 1),
          );
          break;
        }
        case 'page':
          result = result.slice(Number(step.from ?? 0), Number(step.to ?? result.length));
          break;
        default:
          return error(400, 'BadRequest', `Unknown query step ${String(step._name)}`);
      }
    }
    return { status: 200, body: result };
  }

  const server = await startStandInServer({
    authorized: (header) =>
      header === `Bearer ${apiKey}` || header === basicHeader(login.user, login.password),
    unauthorized: error(401, 'AuthenticationError', 'Authentication failure'),
    internalError: (status) => error(status, 'InternalError', 'stand-in fault'),
    route(request, url) {
      const body = (request.body ?? {}) as Entity;
      if (request.method === 'POST' && url.pathname === '/api/v1/case') return createCase(body);
      if (request.method === 'POST' && url.pathname === '/api/v1/query') return query(body);
      const observable = /^\/api\/v1\/case\/([^/]+)\/observable$/.exec(url.pathname);
      if (request.method === 'POST' && observable?.[1])
        return addObservable(decodeURIComponent(observable[1]), body);
      return error(404, 'NotFoundError', `${request.method} ${url.pathname} not found`);
    },
  });

  return {
    ...server,
    apiKey,
    login,
    cases: () => structuredClone(cases),
    observables: (caseId) => structuredClone(observables.get(caseId) ?? []),
  };
}

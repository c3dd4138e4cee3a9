import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { csvCell, REPORT_CSV_COLUMNS, reportCsv } from '../../src/domains/reports/report-csv.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS, TEST_PASSWORD } from '../support/sign-in.ts';

/** docs/reports.md "CSV export": RFC 4180 rows, a header, cells no spreadsheet runs as formulas. */

/** RFC 4180, read back: quoted cells may hold commas, quotes (doubled) and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += ch;
  }
  assert.equal(cell, '', 'the file ends with CRLF');
  return rows;
}

test('docs/reports.md CSV export: formula-looking text gets a leading apostrophe; quotes, commas and line breaks are quoted', () => {
  assert.equal(csvCell('=HYPERLINK("http://x")'), `"'=HYPERLINK(""http://x"")"`);
  assert.equal(csvCell('+1'), `"'+1"`);
  assert.equal(csvCell('-2'), `"'-2"`);
  assert.equal(csvCell('@SUM(A1)'), `"'@SUM(A1)"`);
  assert.equal(csvCell('\tcmd'), `"'\tcmd"`);
  assert.equal(csvCell('a,b'), '"a,b"');
  assert.equal(csvCell('line\nbreak'), '"line\nbreak"');
  assert.equal(csvCell('plain'), 'plain');
  assert.equal(csvCell(0.5), '0.5');
  assert.equal(csvCell(0), '0');
  assert.equal(csvCell(null), '');
  const text = reportCsv([]);
  assert.equal(text, `${REPORT_CSV_COLUMNS.join(',')}\r\n`);
});

let db: TestDatabase;
let api: TestApi;
let cookie: string;
let evil: string;

const EVIL_NAME = '=HYPERLINK("http://evil.example","click"), "quoted"\nnext';

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  const { rows } = await db.pools.app.query<{ id: string }>(
    'INSERT INTO tenants (slug, display_name) VALUES ($1, $2) RETURNING id',
    ['csv-evil', EVIL_NAME],
  );
  evil = rows[0]?.id ?? '';
  await db.pools.app.query(
    `INSERT INTO tenants (slug, display_name) VALUES ('csv-plain', 'Plain tenant')`,
  );
  await seedUser(db, api.hasher, {
    email: 'reports-admin@mssp.test',
    role: 'mssp_admin',
    password: TEST_PASSWORD,
  });
  const session = client(api);
  const login = await session.login('reports-admin@mssp.test', TEST_PASSWORD);
  assert.equal(login.status, 200);
  cookie = session.cookie() ?? '';
  assert.ok(cookie);
});
after(async () => {
  await api.close();
  await db.drop();
});

async function get(path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${api.url}${path}`, { headers: { origin: api.origin, cookie, ...headers } });
}

test('docs/reports.md CSV export: format=csv is a header row and one row per tenant and period, every page, as a download', async () => {
  const res = await get('/api/mssp/reports?period=day&from=2026-03-01&to=2026-03-03&format=csv');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/csv; charset=utf-8');
  assert.equal(
    res.headers.get('content-disposition'),
    'attachment; filename="svc-report-day-2026-03-01-2026-03-03.csv"',
  );
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const rows = parseCsv(await res.text());
  assert.deepEqual(rows[0], [...REPORT_CSV_COLUMNS]);
  const body = rows.slice(1);
  // At least the two tenants of this file (the install may hold others): three days each.
  for (const slug of ['csv-evil', 'csv-plain'])
    assert.deepEqual(
      body.filter((r) => r[1] === slug).map((r) => [r[3], r[4], r[5]]),
      [
        ['2026-03-01', '2026-03-01', '2026-03-01'],
        ['2026-03-02', '2026-03-02', '2026-03-02'],
        ['2026-03-03', '2026-03-03', '2026-03-03'],
      ],
    );
  for (const row of body) assert.equal(row.length, REPORT_CSV_COLUMNS.length);
  // The JSON's rows, page size aside, are the CSV's rows.
  const json = await get('/api/mssp/reports?period=day&from=2026-03-01&to=2026-03-03&limit=200');
  const { items } = (await json.json()) as { items: Record<string, unknown>[] };
  assert.deepEqual(
    body.map((r) => [r[0], r[3]]),
    items.map((i) => [i.tenant_id, i.period_start]),
  );
  const plain = body.find((r) => r[1] === 'csv-plain');
  // Empty figures: counts are 0, means and shares empty cells.
  assert.deepEqual(
    REPORT_CSV_COLUMNS.map((c, i) => [c, plain?.[i]]).filter(([c]) =>
      ['alerts', 'auto_closed_share', 'mean_time_to_resolve_seconds', 'llm_cost_usd'].includes(
        c as string,
      ),
    ),
    [
      ['alerts', '0'],
      ['auto_closed_share', ''],
      ['mean_time_to_resolve_seconds', ''],
      ['llm_cost_usd', '0'],
    ],
  );
});

test('docs/reports.md CSV export: a tenant name that looks like a formula is quoted text, never a formula', async () => {
  const res = await get(`/api/mssp/reports?tenant_id=${evil}&from=2026-03-01&to=2026-03-01`, {
    accept: 'text/csv',
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/csv/);
  const text = await res.text();
  const rows = parseCsv(text);
  assert.equal(rows.length, 2);
  assert.equal(rows[1]?.[2], `'${EVIL_NAME}`);
  assert.ok(!text.includes(',=HYPERLINK'), 'no cell starts with =');
  // Accept naming JSON first keeps JSON.
  const json = await get(`/api/mssp/reports?tenant_id=${evil}&from=2026-03-01&to=2026-03-01`, {
    accept: 'application/json, text/csv',
  });
  assert.match(json.headers.get('content-type') ?? '', /application\/json/);
  const body = (await json.json()) as { items: Array<{ tenant_name: string }> };
  assert.equal(body.items[0]?.tenant_name, EVIL_NAME);
});

test('docs/reports.md CSV export: a bad range is problem+json, not a file', async () => {
  const res = await get('/api/mssp/reports?from=2026-03-03&to=2026-03-01&format=csv');
  assert.equal(res.status, 400);
  assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
  assert.equal(((await res.json()) as { code: string }).code, 'report_range_inverted');
});

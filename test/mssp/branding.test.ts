import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import type { Static } from 'typebox';
import type { SvcClient } from '../../contracts/index.ts';
import type { BrandingUpdate } from '../../contracts/mssp.ts';
import { MAX_IMAGE_BYTES } from '../../src/domains/branding/branding-images.ts';
import {
  ConfigInvalidError,
  validateTenantConfig,
} from '../../src/domains/tenants/tenant-config.ts';
import { STRICT_OUTBOUND } from '../../src/net/outbound-url.ts';
import { impersonating, problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

// Issue 14 "Branding" and issue 15 "Branding" (spec §2.3 BrandingConfig): GET/PUT
// /api/mssp/tenants/{tenant_id}/branding. §5.8 for who may do what, §2.6 for the audit row,
// and the public lookup (GET /api/public/branding by host) showing the change.

type Change = Static<typeof BrandingUpdate>;

const CUSTOMERS = '*.customers.example.test';
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let db: TestDatabase;
let api: TestApi;
let tenantA: string;
let tenantB: string;
let admin: SvcClient;
let analyst: SvcClient;
let customer: SvcClient;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, {
    hash: { params: TEST_HASH_PARAMS },
    auth: { customerHostname: CUSTOMERS },
  });
  tenantA = await createTenant(db.pools.app, 'brand-a');
  tenantB = await createTenant(db.pools.app, 'brand-b');
  admin = await signedInAs({ db, api }, 'mssp_admin');
  analyst = await signedInAs({ db, api }, 'analyst');
  customer = await signedInAs({ db, api }, 'customer_viewer', { tenantId: tenantA });
});
after(async () => {
  await api.close();
  await db.drop();
});

const dataUrl = (type: string, bytes: Buffer) =>
  `data:image/${type};base64,${bytes.toString('base64')}`;
const svg = (markup: string) => dataUrl('svg+xml', Buffer.from(markup, 'utf8'));
/** A PNG signature followed by filler: only the signature and the size are checked. */
const png = (size: number) =>
  dataUrl('png', Buffer.concat([PNG_SIGNATURE, Buffer.alloc(size - PNG_SIGNATURE.length, 7)]));

const LOGO = svg(
  '<?xml version="1.0" encoding="UTF-8"?>' +
    '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">' +
    '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10">' +
    '<defs><linearGradient id="g"><stop offset="0" stop-color="#0b5394"/></linearGradient>' +
    '<circle id="c" r="4"/></defs><title>Acme on blue</title>' +
    '<use href="#c" fill="url(#g)"/><image xlink:href="data:image/png;base64,iVBORw0KGgo="/></svg>',
);

const ACME: Change = {
  app_name: 'Acme Shield',
  logo_url: LOGO,
  primary_color: '#0b5394',
  secondary_color: '#F1C232',
  favicon: 'https://cdn.acme.example/favicon.ico',
};

async function storedBranding(tenantId: string) {
  const { rows } = await db.pools.mssp.query<{ app_name: string; primary_color: string }>(
    'SELECT app_name, primary_color FROM branding_configs WHERE tenant_id = $1',
    [tenantId],
  );
  return rows;
}

async function brandingAudits(tenantId: string) {
  const { rows } = await db.pools.mssp.query<{
    actor_id: string;
    resource_id: string;
    before: unknown;
    after: unknown;
    acting_as: string | null;
  }>(
    `SELECT actor_id, resource_id, before, after, acting_as FROM audit_log
      WHERE tenant_id = $1 AND action = 'settings.update' AND resource_type = 'branding_config'
      ORDER BY "timestamp", id`,
    [tenantId],
  );
  return rows;
}

/** Nothing of a refused change reached the database: no branding row, no audit row. */
async function assertNothingWritten(tenantId: string, label: string): Promise<void> {
  assert.deepEqual(await storedBranding(tenantId), [], `${label}: no branding row`);
  assert.deepEqual(await brandingAudits(tenantId), [], `${label}: no audit row`);
}

async function userId(client: SvcClient): Promise<string> {
  const me = await client.auth.me();
  assert.equal(me.status, 200);
  return me.status === 200 ? me.body.identity.user_id : '';
}

/** The sign-in page's lookup, as a browser on `<slug>.customers.example.test` asks it. */
function publicBranding(slug: string): Promise<Record<string, unknown>> {
  const url = new URL('/api/public/branding', api.url);
  return new Promise((resolve, reject) => {
    const host = `${slug}.customers.example.test`;
    const req = request(url, { headers: { host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
    });
    req.on('error', reject);
    req.end();
  });
}

const put = (client: SvcClient, tenantId: string, body: Change) =>
  client.mssp.putBranding({ params: { tenant_id: tenantId }, body });

test('issue 15 a tenant without branding reads the install defaults, marked is_default', async () => {
  const res = await analyst.mssp.getBranding({ params: { tenant_id: tenantB } });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, {
    app_name: 'svc',
    logo_url: null,
    primary_color: '#374151',
    secondary_color: '#9ca3af',
    favicon: '',
    is_default: true,
    updated_at: null,
  });
});

test('§2.3 PUT replaces the branding, GET reads it back, settings.update audited with before/after; the public lookup shows it', async () => {
  const adminId = await userId(admin);
  assert.equal((await publicBranding('brand-a')).app_name, 'svc', 'install look before');

  const first = await put(admin, tenantA, ACME);
  assert.equal(first.status, 200);
  const got = await analyst.mssp.getBranding({ params: { tenant_id: tenantA } });
  assert.equal(got.status, 200);
  if (got.status !== 200 || first.status !== 200) return;
  assert.deepEqual(first.body, got.body);
  const { updated_at, ...stored } = got.body;
  assert.deepEqual(stored, { ...ACME, is_default: false });
  assert.ok(updated_at && Date.parse(updated_at) > 0);
  assert.deepEqual(await publicBranding('brand-a'), {
    app_name: ACME.app_name,
    logo_url: ACME.logo_url,
    primary_color: ACME.primary_color,
    secondary_color: ACME.secondary_color,
    favicon: ACME.favicon,
  });

  // The audit row names the logo by digest and size, not by 600 bytes of base64.
  const logoBytes = Buffer.from(LOGO.slice(LOGO.indexOf(',') + 1), 'base64');
  const digest = `data:image/svg+xml;base64 sha256=${createHash('sha256').update(logoBytes).digest('hex')} bytes=${logoBytes.length}`;
  const firstSnapshot = { ...ACME, logo_url: digest };
  assert.deepEqual(await brandingAudits(tenantA), [
    {
      actor_id: adminId,
      resource_id: tenantA,
      before: null,
      after: firstSnapshot,
      acting_as: null,
    },
  ]);

  // A second PUT replaces the whole branding: an absent logo and favicon are removed.
  const second = await put(admin, tenantA, {
    app_name: 'Acme Guard',
    primary_color: '#123',
    secondary_color: '#fff',
  });
  assert.equal(second.status, 200);
  const audits = await brandingAudits(tenantA);
  assert.equal(audits.length, 2);
  assert.deepEqual(
    [audits[1]?.before, audits[1]?.after],
    [
      firstSnapshot,
      {
        app_name: 'Acme Guard',
        logo_url: null,
        primary_color: '#123',
        secondary_color: '#fff',
        favicon: '',
      },
    ],
  );
  const after = await publicBranding('brand-a');
  assert.deepEqual(
    [after.app_name, after.logo_url, after.primary_color],
    ['Acme Guard', null, '#123'],
  );
  assert.equal((await publicBranding('brand-b')).app_name, 'svc', "B's look is untouched");
});

test('§5.8 an analyst may read but not change branding; nothing is written', async () => {
  const res = await put(analyst, tenantB, ACME);
  assert.deepEqual([res.status, problemCode(res)], [403, 'forbidden']);
  await assertNothingWritten(tenantB, 'analyst PUT');
});

test('§4 a customer gets wrong_family on the MSSP branding routes, even for its own tenant', async () => {
  const calls = [
    await customer.mssp.getBranding({ params: { tenant_id: tenantA } }),
    await put(customer, tenantA, ACME),
  ];
  for (const res of calls) assert.deepEqual([res.status, problemCode(res)], [403, 'wrong_family']);
});

test('issue 15 colours must be #rgb or #rrggbb, and the body the schema: 400 validation_failed, nothing written', async () => {
  const bad: Array<[unknown, string]> = [
    [{ ...ACME, primary_color: 'red' }, '/primary_color'],
    [{ ...ACME, primary_color: '#12345' }, '/primary_color'],
    [{ ...ACME, secondary_color: '#ggg' }, '/secondary_color'],
    [{ ...ACME, secondary_color: '#1234567' }, '/secondary_color'],
    [{ ...ACME, app_name: '' }, '/app_name'],
    [{ ...ACME, logo_url: 'http://cdn.acme.example/logo.png' }, '/logo_url'],
    [{ ...ACME, logo_url: 'data:image/gif;base64,R0lGODlh' }, '/logo_url'],
    [{ ...ACME, favicon: 'javascript:alert(1)' }, '/favicon'],
    [{ ...ACME, tagline: 'extra' }, '/tagline'],
  ];
  for (const [body, pointer] of bad) {
    const res = await put(admin, tenantB, body as Change);
    assert.deepEqual([res.status, problemCode(res)], [400, 'validation_failed'], pointer);
    const paths = ((res.body as { errors?: Array<{ path: string }> }).errors ?? []).map(
      (e) => e.path,
    );
    assert.ok(paths.includes(pointer), `${pointer} in ${JSON.stringify(paths)}`);
  }
  await assertNothingWritten(tenantB, 'invalid bodies');
});

test('issue 15 a logo over 200 KiB decoded is 422 invalid_branding at /logo_url; nothing written; 200 KiB exactly is accepted', async () => {
  const res = await put(admin, tenantB, { ...ACME, logo_url: png(MAX_IMAGE_BYTES + 1) });
  assert.deepEqual([res.status, problemCode(res)], [422, 'invalid_branding']);
  assert.deepEqual((res.body as { errors?: unknown }).errors, [
    {
      path: '/logo_url',
      message: `The image is ${MAX_IMAGE_BYTES + 1} bytes; at most 204800 allowed`,
    },
  ]);
  const favicon = await put(admin, tenantB, { ...ACME, favicon: png(MAX_IMAGE_BYTES + 1) });
  assert.deepEqual([favicon.status, problemCode(favicon)], [422, 'invalid_branding']);
  await assertNothingWritten(tenantB, 'oversized logo');

  const tenantC = await createTenant(db.pools.app, 'brand-c');
  const limit = await put(admin, tenantC, { ...ACME, logo_url: png(MAX_IMAGE_BYTES) });
  assert.equal(limit.status, 200);
  assert.equal((await storedBranding(tenantC)).length, 1);
});

test('issue 15 a data URL whose bytes are not its declared type is 422 invalid_branding', async () => {
  const cases = [
    dataUrl('png', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>')),
    dataUrl('jpeg', PNG_SIGNATURE),
    svg('<html><body>not a picture</body></html>'),
    dataUrl('svg+xml', Buffer.from('\ufeff<svg><script>alert(1)</script></svg>', 'utf16le')),
  ];
  for (const logo_url of cases) {
    const res = await put(admin, tenantB, { ...ACME, logo_url });
    assert.deepEqual([res.status, problemCode(res)], [422, 'invalid_branding'], logo_url);
  }
  await assertNothingWritten(tenantB, 'mistyped images');
});

const SVG = '<svg xmlns="http://www.w3.org/2000/svg"';

/** Every way an SVG logo could run script or reach out, and words of the rule that refuses it. */
const SVG_VECTORS: Record<string, [markup: string, rule: string]> = {
  script: [`${SVG}><script>alert(1)</script></svg>`, '<script>'],
  'prefixed script': [
    `${SVG} xmlns:s="http://www.w3.org/2000/svg"><s:script>alert(1)</s:script></svg>`,
    '<script>',
  ],
  'uppercase script': [`${SVG}><SCRIPT>alert(1)</SCRIPT></svg>`, '<script>'],
  'onload attribute': [`${SVG} onload="alert(1)"/>`, 'event handler'],
  'onclick after a slash': [`${SVG}><rect/onclick="alert(1)"/></svg>`, 'event handler'],
  'onbegin on animate': [
    `${SVG}><animate onbegin = "alert(1)" attributeName="x"/></svg>`,
    'event handler',
  ],
  'javascript: href': [`${SVG}><a href="javascript:alert(1)"><rect/></a></svg>`, 'javascript:'],
  'javascript: hidden by character references': [
    `${SVG}><a href="&#x6A;ava&#9;script&#58;alert(1)"><rect/></a></svg>`,
    'javascript:',
  ],
  'javascript: set by animation': [
    `${SVG}><a><set attributeName="href" to="javascript:alert(1)"/></a></svg>`,
    'javascript:',
  ],
  foreignObject: [
    `${SVG}><foreignObject><div>x</div></foreignObject></svg>`,
    'embed other content',
  ],
  iframe: [`${SVG}><iframe src="https://evil.example/"/></svg>`, 'embed other content'],
  'HTML namespace': [
    `${SVG}><h:img xmlns:h="http://www.w3.org/1999/xhtml" src="x"/></svg>`,
    'HTML elements',
  ],
  'external href': [`${SVG}><image href="https://evil.example/track.png"/></svg>`, 'through href'],
  'external xlink:href': [
    `${SVG} xmlns:xlink="http://www.w3.org/1999/xlink"><use xlink:href='http://evil.example/s.svg#a'/></svg>`,
    'through href',
  ],
  'external css url': [
    `${SVG}><rect style="fill: url( 'https://evil.example/p')"/></svg>`,
    'from elsewhere',
  ],
  '@import': [
    `${SVG}><style>@import "https://evil.example/s.css";</style></svg>`,
    'from elsewhere',
  ],
  'entity declaration': [
    `<!DOCTYPE svg [<!ENTITY s "&#60;script&#62;alert(1)&#60;/script&#62;">]>${SVG}>&s;</svg>`,
    'declare entities',
  ],
  'encoding other than UTF-8': [`<?xml version="1.0" encoding="UTF-16"?>${SVG}/>`, 'UTF-8 text'],
};

test('issue 15 an SVG logo carrying script or outside references is 422 invalid_branding at /logo_url, each vector, nothing written', async () => {
  for (const [name, [markup, rule]] of Object.entries(SVG_VECTORS)) {
    const res = await put(admin, tenantB, { ...ACME, logo_url: svg(markup) });
    assert.deepEqual([res.status, problemCode(res)], [422, 'invalid_branding'], name);
    const errors = (res.body as { errors?: Array<{ path: string; message: string }> }).errors ?? [];
    assert.ok(
      errors.length > 0 && errors.every((e) => e.path === '/logo_url'),
      `${name}: ${JSON.stringify(errors)}`,
    );
    assert.ok(
      errors.some((e) => e.message.includes(rule)),
      `${name} is refused by its own rule (${rule}): ${JSON.stringify(errors)}`,
    );
  }
  const favicon = await put(admin, tenantB, {
    ...ACME,
    favicon: svg(`${SVG}><script>alert(1)</script></svg>`),
  });
  assert.deepEqual([favicon.status, problemCode(favicon)], [422, 'invalid_branding']);
  assert.deepEqual(
    ((favicon.body as { errors?: Array<{ path: string }> }).errors ?? []).map((e) => e.path),
    ['/favicon'],
  );
  await assertNothingWritten(tenantB, 'script-bearing SVGs');
});

test('issue 13 a tenant that does not exist is 404 tenant_not_found', async () => {
  const missing = '00000000-0000-4000-8000-000000000000';
  const calls = [
    await analyst.mssp.getBranding({ params: { tenant_id: missing } }),
    await put(admin, missing, ACME),
  ];
  for (const res of calls)
    assert.deepEqual([res.status, problemCode(res)], [404, 'tenant_not_found']);
});

test("§5.2 an impersonation token for A changes A's branding with acting_as, and never touches B's", async () => {
  const asA = await impersonating(api, admin, tenantA, 'branding fix');
  const own = await put(asA, tenantA, { ...ACME, app_name: 'Acme by impersonation' });
  assert.equal(own.status, 200);
  assert.equal((await brandingAudits(tenantA)).at(-1)?.acting_as, tenantA);
  const other = await put(asA, tenantB, ACME);
  assert.deepEqual([other.status, problemCode(other)], [403, 'outside_impersonated_tenant']);
  const read = await asA.mssp.getBranding({ params: { tenant_id: tenantB } });
  assert.deepEqual([read.status, problemCode(read)], [403, 'outside_impersonated_tenant']);
  await assertNothingWritten(tenantB, 'impersonation for A');
});

test('issue 15 tenant creation applies the same logo rules: a script-bearing SVG is refused at /branding/logo_url', async () => {
  const config = {
    slug: 'brand-new',
    display_name: 'Brand new',
    branding: { ...ACME, logo_url: svg(`${SVG}><script>alert(1)</script></svg>`) },
  };
  await assert.rejects(
    validateTenantConfig(config, tenantB, { outbound: STRICT_OUTBOUND }),
    (error: unknown) =>
      error instanceof ConfigInvalidError &&
      error.errors.some((e) => e.path === '/branding/logo_url' && e.message.includes('<script>')),
  );
  await validateTenantConfig({ ...config, branding: ACME }, tenantB, { outbound: STRICT_OUTBOUND });
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { V1Container, V1Deployment } from '@kubernetes/client-node';
import { Compile } from 'typebox/compile';
import { parse, parseAllDocuments } from 'yaml';
import {
  NO_TENANT_SCHEDULING,
  TENANT_WORKLOADS,
  type TenantScheduling,
} from '../../contracts/scheduling.ts';
import { SystemValues } from '../../contracts/system-values.ts';
import { TenantValues } from '../../contracts/tenant-values.ts';
import { readOrchestrator } from '../../src/config/orchestrator.ts';
import { type RenderInput, renderTenantValues } from '../../src/orchestrator/render.ts';
import { mergeValues, renderSystemChart, sampleValues } from '../../testcluster/system-chart.ts';
import { sampleTenantValues } from '../fixtures/tenant-values.ts';

// Tenant placement (issue 31): the system chart's tenants.scheduling → SVC_TENANT_SCHEDULING →
// renderTenantValues → the tenant chart's scheduling and global.scheduling → every tenant pod's
// nodeSelector and tolerations, the workload's own entry replacing both defaults.

const chart = fileURLToPath(new URL('../../charts/svc-tenant', import.meta.url));
const NAMESPACE = 'tenant-acme';
const checkValues = Compile(TenantValues);
const checkSystem = Compile(SystemValues);
const scratch = await mkdtemp(join(tmpdir(), 'svc-tenant-scheduling-'));
after(() => rm(scratch, { recursive: true, force: true }));

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked loosely, like kubectl does
type Manifest = any;

let files = 0;
/** `helm template` of the tenant chart; values go as a file so types stay exact. */
async function template(
  values: unknown,
): Promise<{ code: number; stdout: string; stderr: string }> {
  files += 1;
  const file = join(scratch, `values-${files}.json`);
  await writeFile(file, JSON.stringify(values));
  return new Promise((resolve) => {
    execFile(
      'helm',
      ['template', 'svc-tenant', chart, '--namespace', NAMESPACE, '-f', file],
      { maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Each workload's pod spec by its Deployment/StatefulSet name. */
async function podSpecs(values: unknown): Promise<Map<string, Manifest>> {
  const run = await template(values);
  assert.equal(run.code, 0, run.stderr);
  const objects = parseAllDocuments(run.stdout)
    .map((doc) => doc.toJS())
    .filter((o) => o?.kind === 'Deployment' || o?.kind === 'StatefulSet');
  return new Map(objects.map((o) => [o.metadata.name, o.spec.template.spec]));
}

/** The sample tenant with `scheduling` and its global copy set to the same placement. */
function placed(scheduling: TenantScheduling): TenantValues {
  const values = sampleTenantValues();
  values.scheduling = structuredClone(scheduling);
  values.global.scheduling = structuredClone(scheduling);
  return values;
}

const REAL_NODE = { 'kubernetes.io/hostname': 'real-abc123' };
const REAL_TOLERATION = {
  key: 'svc.test/real-node',
  operator: 'Equal' as const,
  value: 'true',
  effect: 'NoSchedule' as const,
};
const POOL: TenantScheduling = {
  nodeSelector: { 'svc.example.com/pool': 'tenants' },
  tolerations: [
    { key: 'svc.example.com/pool', operator: 'Equal', value: 'tenants', effect: 'NoSchedule' },
  ],
  workloads: {},
};

// helm is the slow part: independent renders start together.
const [plain, pooled, overridden] = await Promise.all([
  podSpecs(sampleTenantValues()),
  podSpecs(placed(POOL)),
  podSpecs(
    placed({
      ...POOL,
      workloads: {
        'svc-adapter': { nodeSelector: REAL_NODE, tolerations: [REAL_TOLERATION] },
        'monitor-indexer': { nodeSelector: REAL_NODE, tolerations: [REAL_TOLERATION] },
        // An entry with nothing in it replaces the defaults with nothing: anywhere.
        cases: { nodeSelector: {}, tolerations: [] },
      },
    }),
  ),
]);

test('issue 31 every workload of the tenant package is one scheduling.workloads names, and nothing else is', () => {
  assert.deepEqual([...plain.keys()].sort(), [...TENANT_WORKLOADS].sort());
});

test('issue 31 no scheduling: no pod of the tenant package renders a nodeSelector or tolerations', () => {
  for (const [name, spec] of plain) {
    assert.equal(spec.nodeSelector, undefined, name);
    assert.equal(spec.tolerations, undefined, name);
    assert.equal(spec.affinity, undefined, name);
  }
});

test('issue 31 scheduling.nodeSelector and tolerations reach every pod of the parent chart and of each subchart', () => {
  for (const [name, spec] of pooled) {
    assert.deepEqual(spec.nodeSelector, POOL.nodeSelector, name);
    assert.deepEqual(spec.tolerations, POOL.tolerations, name);
  }
});

test('issue 31 a workload’s own entry replaces both defaults for it alone; the others keep them', () => {
  for (const [name, spec] of overridden) {
    if (name === 'svc-adapter' || name === 'monitor-indexer') {
      assert.deepEqual(spec.nodeSelector, REAL_NODE, name);
      assert.deepEqual(spec.tolerations, [REAL_TOLERATION], name);
    } else if (name === 'cases') {
      assert.equal(spec.nodeSelector, undefined, name);
      assert.equal(spec.tolerations, undefined, name);
    } else {
      assert.deepEqual(spec.nodeSelector, POOL.nodeSelector, name);
      assert.deepEqual(spec.tolerations, POOL.tolerations, name);
    }
  }
});

test('issue 31 guard: a global.scheduling that differs from scheduling is refused, though the schema accepts it', async () => {
  const drifted = [
    (v: TenantValues) => {
      v.global.scheduling.nodeSelector = { pool: 'other' };
    },
    (v: TenantValues) => {
      v.global.scheduling.workloads = { 'monitor-indexer': { nodeSelector: {}, tolerations: [] } };
    },
  ].map((edit) => {
    const values = placed(POOL);
    edit(values);
    return values;
  });
  const runs = await Promise.all(drifted.map(template));
  drifted.forEach((values, i) => {
    assert.equal(checkValues.Check(values), true, 'TypeBox alone accepts it');
    assert.notEqual(runs[i]?.code, 0);
    assert.match(runs[i]?.stderr ?? '', /global\.scheduling must equal scheduling/);
  });
});

test('issue 31 schema: an unknown workload name or a malformed toleration is refused by helm and by the TypeBox contract', async () => {
  const bad: Array<[string, Manifest, RegExp]> = [
    [
      'unknown workload',
      { 'monitor-indexr': { nodeSelector: {}, tolerations: [] } },
      /monitor-indexr/,
    ],
    ['workload entry incomplete', { cases: { nodeSelector: {} } }, /tolerations/],
  ];
  const values = bad.map(([, workloads]) => placed({ ...POOL, workloads }));
  const wrongOperator = placed({
    ...POOL,
    tolerations: [{ key: 'pool', operator: 'Maybe' as never }],
  });
  const runs = await Promise.all([...values, wrongOperator].map(template));
  bad.forEach(([what, , message], i) => {
    assert.equal(checkValues.Check(values[i]), false, what);
    assert.notEqual(runs[i]?.code, 0, what);
    assert.match(runs[i]?.stderr ?? '', message, what);
  });
  assert.equal(checkValues.Check(wrongOperator), false);
  assert.match(runs[2]?.stderr ?? '', /\/scheduling\/tolerations\/0\/operator/);
});

const chartDefaults = parse(await readFile(join(chart, 'values.yaml'), 'utf8'));
const TENANT_ID = '3f1c2a9e-7b4d-4e21-9a0c-5d8e6f7a1b2c';
const renderInput = (scheduling?: TenantScheduling): RenderInput => ({
  tenant: { id: TENANT_ID, slug: 'acme', displayName: 'Acme' },
  config: { slug: 'acme', display_name: 'Acme' } as never,
  install: {
    msspId: '0f9e8d7c-6b5a-4c3d-8e1f-0a9b8c7d6e5f',
    installId: '0f9e8d7c-6b5a-4c3d-8e1f-0a9b8c7d6e5f',
    namespace: 'svc-system',
    serviceAccount: 'svc',
  },
  settings: {
    adapterImage: { repository: 'registry.test/svc', tag: '0.1.0', digest: '' },
    apiUrl: 'http://svc-api.svc-system.svc:8080',
    storageClassName: '',
    ...(scheduling ? { scheduling } : {}),
    defaultLlm: { provider: '', baseUrl: '', model: '' },
  },
  chartDefaults,
  hasLlmKey: false,
});

test('issue 31 renderTenantValues: the placement goes into scheduling and its global copy; none when svc has none', () => {
  const none = renderTenantValues(renderInput());
  assert.deepEqual(none.scheduling, NO_TENANT_SCHEDULING);
  assert.deepEqual(none.global.scheduling, NO_TENANT_SCHEDULING);
  const chosen = {
    ...POOL,
    workloads: { 'svc-adapter': { nodeSelector: REAL_NODE, tolerations: [] } },
  };
  const values = renderTenantValues(renderInput(chosen));
  assert.deepEqual(values.scheduling, chosen);
  assert.deepEqual(values.global.scheduling, chosen);
});

test('issue 31 end to end: the system chart’s tenants.scheduling, read back by svc from the orchestrator’s environment, places the tenant chart’s pods', async () => {
  const scheduling = {
    workloads: {
      'svc-adapter': { nodeSelector: REAL_NODE, tolerations: [REAL_TOLERATION] },
      'monitor-indexer': { nodeSelector: REAL_NODE, tolerations: [REAL_TOLERATION] },
    },
  };
  const systemValues = mergeValues(sampleValues('svc-system'), { tenants: { scheduling } });
  const [objects, defaults] = await Promise.all([
    renderSystemChart('helm', 'svc-system', systemValues),
    renderSystemChart('helm', 'svc-system', sampleValues('svc-system')),
  ]);
  const environment = (rendered: typeof objects) => {
    const orchestrator = rendered.find(
      (o) => o.kind === 'Deployment' && o.metadata?.name === 'svc-orchestrator',
    ) as V1Deployment | undefined;
    const container = orchestrator?.spec?.template.spec?.containers[0] as V1Container;
    return Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
  };
  const read = readOrchestrator(environment(objects)).tenantScheduling;
  // values.yaml alone: svc runs as with no variable at all.
  assert.deepEqual(
    readOrchestrator(environment(defaults)).tenantScheduling,
    readOrchestrator({}).tenantScheduling,
  );
  const specs = await podSpecs(renderTenantValues(renderInput(read)));
  for (const [name, spec] of specs) {
    if (name === 'svc-adapter' || name === 'monitor-indexer') {
      assert.deepEqual(spec.nodeSelector, REAL_NODE, name);
      assert.deepEqual(spec.tolerations, [REAL_TOLERATION], name);
    } else {
      // The rest stays off the tainted real node (kwok in the test cluster).
      assert.equal(spec.nodeSelector, undefined, name);
      assert.equal(spec.tolerations, undefined, name);
    }
  }
});

test('issue 31 the system chart refuses an unknown tenant workload name before svc ever reads it', async () => {
  const values = mergeValues(sampleValues('svc-system'), {
    tenants: { scheduling: { workloads: { 'monitor-indexr': { nodeSelector: REAL_NODE } } } },
  });
  await assert.rejects(
    renderSystemChart('helm', 'svc-system', values),
    /tenants\/scheduling\/workloads.*monitor-indexr/,
  );
  const chartValues = mergeValues(
    parse(
      await readFile(
        fileURLToPath(new URL('../../charts/svc-system/values.yaml', import.meta.url)),
        'utf8',
      ),
    ),
    values,
  );
  assert.equal(checkSystem.Check(chartValues), false);
});

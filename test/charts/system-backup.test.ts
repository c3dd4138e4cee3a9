import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type {
  KubernetesObject,
  V1Container,
  V1CronJob,
  V1Deployment,
  V1NetworkPolicy,
  V1NetworkPolicyPeer,
  V1PersistentVolumeClaim,
} from '@kubernetes/client-node';
import { Compile } from 'typebox/compile';
import { parse } from 'yaml';
import { SystemValues } from '../../contracts/system-values.ts';
import {
  helmWithValues,
  mergeValues,
  renderSystemChart,
  sampleValues,
  systemChart,
  type Values,
} from '../policies/system-chart.ts';
import { getTestCluster } from '../support/cluster.ts';

/**
 * The backup CronJob of the system chart (docs/charts-system.md "Backup and restore"): rendered
 * only when asked for and only for the in-chart database, hardened like svc's other pods, one
 * run at a time, pruning to backup.retention, and able to reach the database and nothing else.
 */
const cluster = getTestCluster();
const helm = join(cluster.binDir, 'helm');
const ns = 'svc-system';
const render = (overrides: Values = {}) =>
  renderSystemChart(helm, ns, mergeValues(sampleValues(ns), overrides));
const checkValues = Compile(SystemValues);
const chartValues = parse(await readFile(join(systemChart, 'values.yaml'), 'utf8')) as Values;

function find<T extends KubernetesObject>(objects: KubernetesObject[], kind: string, name: string) {
  const found = objects.find((o) => o.kind === kind && o.metadata?.name === name);
  assert.ok(found, `rendered ${kind} ${name}`);
  return found as T;
}

const backupObjects = (objects: KubernetesObject[]) =>
  objects.filter(
    (o) =>
      o.metadata?.labels?.['app.kubernetes.io/component'] === 'backup' ||
      ['svc-backup', 'svc-postgres-backup', 'svc-backups'].includes(o.metadata?.name ?? ''),
  );

test('backup is off by default: no CronJob, no volume, no policy', async () => {
  const objects = await render();
  assert.deepEqual(
    backupObjects(objects).map((o) => `${o.kind}/${o.metadata?.name}`),
    [],
  );
});

test('backup.enabled renders a CronJob running `svc db backup --dir --keep` into its PVC, one run at a time', async () => {
  const objects = await render({ backup: { enabled: true } });
  const cron = find<V1CronJob>(objects, 'CronJob', 'svc-backup');
  assert.equal(cron.spec?.schedule, '17 3 * * *');
  assert.equal(cron.spec?.timeZone, 'Etc/UTC');
  assert.equal(cron.spec?.concurrencyPolicy, 'Forbid');
  const job = cron.spec?.jobTemplate.spec;
  assert.ok(job?.activeDeadlineSeconds, 'a hung backup is stopped');
  const pod = job?.template.spec;
  assert.equal(pod?.restartPolicy, 'Never');
  assert.equal(pod?.automountServiceAccountToken, false, 'no Kubernetes API token');
  const backup = pod?.containers[0] as V1Container;
  assert.deepEqual(backup.command, [
    'svc',
    'db',
    'backup',
    '--dir',
    '/var/backups/svc',
    '--keep',
    '7',
  ]);
  assert.deepEqual(backup.resources, {
    requests: { cpu: '100m', memory: '256Mi' },
    limits: { cpu: '1', memory: '1Gi' },
  });
  assert.equal(backup.livenessProbe, undefined, 'a Job runs to completion: no probes');

  // The API's image, environment, hardening and volumes (the superuser URL comes from svc.env).
  const api = find<V1Deployment>(objects, 'Deployment', 'svc-api');
  const apiPod = api.spec?.template.spec;
  const apiContainer = apiPod?.containers[0] as V1Container;
  assert.equal(backup.image, apiContainer.image);
  // The API's, plus fsGroupChangePolicy: earlier archives stay 0600 (templates/backup.yaml).
  assert.deepEqual(pod?.securityContext, {
    ...apiPod?.securityContext,
    fsGroupChangePolicy: 'OnRootMismatch',
  });
  assert.equal(pod?.securityContext?.runAsNonRoot, true);
  assert.equal(pod?.securityContext?.fsGroup, 10001, 'the volume is writable by svc');
  assert.deepEqual(backup.securityContext, apiContainer.securityContext);
  assert.equal(backup.securityContext?.readOnlyRootFilesystem, true);
  assert.equal(backup.securityContext?.allowPrivilegeEscalation, false);
  assert.deepEqual(backup.securityContext?.capabilities?.drop, ['ALL']);
  const envNames = (c: V1Container) => (c.env ?? []).map((e) => e.name).sort();
  assert.ok(envNames(backup).includes('SVC_DATABASE_BOOTSTRAP_URL'));
  assert.deepEqual(
    envNames(backup).filter((n) => n !== 'SVC_SERVICE_ACCOUNT'),
    envNames(apiContainer).filter(
      (n) => !['SVC_ORCHESTRATOR', 'SVC_WORKER', 'SVC_SERVICE_ACCOUNT'].includes(n),
    ),
  );
  // Writable paths: the backups volume and emptyDirs (tmp, data) only.
  const volumes = new Map((pod?.volumes ?? []).map((v) => [v.name, v]));
  for (const mount of backup.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    assert.ok(volume, `volume ${mount.name}`);
    const writable = !mount.readOnly && !volume.secret && !volume.configMap;
    if (writable) {
      assert.ok(
        volume.emptyDir || volume.persistentVolumeClaim?.claimName === 'svc-backups',
        `${mount.mountPath} is writable only as an emptyDir or the backups volume`,
      );
    }
  }
  assert.ok(volumes.get('tmp')?.emptyDir, '/tmp is an emptyDir on the read-only root');
  assert.ok((backup.volumeMounts ?? []).some((m) => m.mountPath === '/tmp' && m.name === 'tmp'));
  assert.ok(
    (backup.volumeMounts ?? []).some(
      (m) => m.mountPath === '/var/backups/svc' && volumes.get(m.name)?.persistentVolumeClaim,
    ),
  );

  const claim = find<V1PersistentVolumeClaim>(objects, 'PersistentVolumeClaim', 'svc-backups');
  assert.equal(claim.spec?.resources?.requests?.storage, '20Gi');
  assert.equal(claim.spec?.storageClassName, undefined, 'empty: the cluster default');
  assert.equal(claim.metadata?.annotations?.['helm.sh/resource-policy'], 'keep');
});

test('backup.schedule, .retention, .storage and .resources are honoured', async () => {
  const objects = await render({
    backup: {
      enabled: true,
      schedule: '@hourly',
      retention: 48,
      storage: { size: '100Gi', storageClassName: 'replicated' },
      resources: {
        requests: { cpu: '200m', memory: '512Mi' },
        limits: { cpu: '2', memory: '2Gi' },
      },
    },
  });
  const cron = find<V1CronJob>(objects, 'CronJob', 'svc-backup');
  assert.equal(cron.spec?.schedule, '@hourly');
  const backup = cron.spec?.jobTemplate.spec?.template.spec?.containers[0];
  assert.deepEqual(backup?.command?.slice(-2), ['--keep', '48']);
  assert.equal(backup?.resources?.limits?.memory, '2Gi');
  const claim = find<V1PersistentVolumeClaim>(objects, 'PersistentVolumeClaim', 'svc-backups');
  assert.equal(claim.spec?.resources?.requests?.storage, '100Gi');
  assert.equal(claim.spec?.storageClassName, 'replicated');
});

test('the backup pod reaches the database and DNS only, and the database admits it', async () => {
  const objects = await render({ backup: { enabled: true } });
  const own = find<V1NetworkPolicy>(objects, 'NetworkPolicy', 'svc-backup');
  assert.deepEqual(own.spec?.policyTypes, ['Ingress', 'Egress']);
  assert.deepEqual(own.spec?.ingress, []);
  const egress = own.spec?.egress ?? [];
  assert.equal(egress.length, 2);
  assert.deepEqual(
    egress[1]?.to?.[0]?.podSelector?.matchLabels?.['app.kubernetes.io/component'],
    'database',
  );
  assert.deepEqual(egress[1]?.ports, [{ protocol: 'TCP', port: 5432 }]);
  const db = find<V1NetworkPolicy>(objects, 'NetworkPolicy', 'svc-postgres-backup');
  assert.equal(db.spec?.podSelector?.matchLabels?.['app.kubernetes.io/component'], 'database');
  // Rendered YAML says `from` (the client's classes call it `_from`).
  const rule = db.spec?.ingress?.[0] as { from?: V1NetworkPolicyPeer[] } | undefined;
  assert.equal(
    rule?.from?.[0]?.podSelector?.matchLabels?.['app.kubernetes.io/component'],
    'backup',
  );
  const cron = find<V1CronJob>(objects, 'CronJob', 'svc-backup');
  assert.equal(
    cron.spec?.jobTemplate.spec?.template.metadata?.labels?.['app.kubernetes.io/component'],
    'backup',
  );
  const open = await render({ backup: { enabled: true }, networkPolicies: { enabled: false } });
  assert.equal(open.filter((o) => o.kind === 'NetworkPolicy').length, 0);
  assert.ok(open.some((o) => o.kind === 'CronJob'));
});

test('backup.enabled with an external database fails the render with a clear message', async () => {
  const external = {
    backup: { enabled: true },
    database: {
      enabled: false,
      external: { host: 'db.example.internal', existingSecret: 'svc-db' },
    },
  };
  await assert.rejects(
    render(external),
    /backup\.enabled backs up the in-chart database \(database\.enabled=true\)/,
  );
});

test('the values schema rejects a bad schedule, retention below 1 and unknown backup keys (helm and TypeBox)', async () => {
  for (const backup of [
    { schedule: 'every day' },
    { schedule: '* * *' },
    { retention: 0 },
    { retention: 'seven' },
    { storage: { size: 'lots' } },
    { keep: 3 },
  ]) {
    const values = mergeValues(sampleValues(ns), { backup: { enabled: true, ...backup } });
    await assert.rejects(
      helmWithValues(helm, ['template', 'svc', systemChart, '--namespace', ns], values),
      /values don't meet the specifications of the schema|schema/,
      JSON.stringify(backup),
    );
    assert.equal(
      checkValues.Check(mergeValues(chartValues, values)),
      false,
      JSON.stringify(backup),
    );
  }
  const good = mergeValues(
    chartValues,
    mergeValues(sampleValues(ns), { backup: { enabled: true } }),
  );
  assert.equal(checkValues.Check(good), true, 'the defaults with backup on are valid');
});

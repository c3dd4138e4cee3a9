import Type from 'typebox';
import { type Env, settingReader } from './env.ts';

/** Spec §2.9 install.*: written into the organization row; generated once when absent. */
export interface InstallConfig {
  msspId: string | undefined;
  msspName: string;
  installId: string | undefined;
  installLabel: string;
}

export const INSTALL_SETTINGS = {
  SVC_INSTALL_NAMESPACE: {
    schema: Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$' }),
    expected: 'a Kubernetes namespace name',
  },
  SVC_SERVICE_ACCOUNT: {
    schema: Type.String({ pattern: '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$' }),
    expected: 'a ServiceAccount name (serviceAccount.name)',
  },
  SVC_MSSP_ID: { schema: Type.String({ format: 'uuid' }), expected: 'a uuid (install.msspId)' },
  SVC_MSSP_NAME: {
    schema: Type.String({ minLength: 1, maxLength: 200 }),
    expected: 'the MSSP name (install.msspName), 1-200 characters',
  },
  SVC_INSTALL_ID: {
    schema: Type.String({ format: 'uuid' }),
    expected: 'a uuid (install.installId), stable across upgrades',
  },
  SVC_INSTALL_LABEL: {
    schema: Type.String({ minLength: 1, maxLength: 200 }),
    expected: 'a human-readable install label, 1-200 characters',
  },
} as const;

const read = settingReader(INSTALL_SETTINGS);

export function readInstall(env: Env): InstallConfig {
  return {
    msspId: read(env, 'SVC_MSSP_ID'),
    msspName: read(env, 'SVC_MSSP_NAME') ?? 'MSSP',
    installId: read(env, 'SVC_INSTALL_ID'),
    installLabel: read(env, 'SVC_INSTALL_LABEL') ?? 'svc',
  };
}

/** The install namespace (spec §1 item 1) and svc's own ServiceAccount in it. */
export function readPlacement(env: Env): { installNamespace: string; serviceAccount: string } {
  return {
    installNamespace: read(env, 'SVC_INSTALL_NAMESPACE') ?? 'svc-system',
    serviceAccount: read(env, 'SVC_SERVICE_ACCOUNT') ?? 'svc',
  };
}

import type { Static } from 'typebox';
import type { EnrollmentView } from '../../../contracts/mssp.ts';
import { checkRef, resolve } from './lookup.ts';
import { print, progress, table } from './output.ts';
import { expectStatus, withSession } from './session.ts';

/**
 * `svc tenants enrollment <id|slug> [--rotate]` (docs/enrollment.md): what an agent install
 * needs, through the same audited reveal as the console; with --rotate the password is replaced
 * first and the answer is the new one.
 */

type View = Static<typeof EnrollmentView>;

function text(v: View): string {
  const m = v.manager;
  const where =
    m.status === 'ready'
      ? `${m.addresses.join(', ')} (${m.mode}; events ${m.ports.events}, enrollment ${m.ports.enrollment})`
      : `pending: ${m.pending_reason} (${m.mode}; events ${m.ports.events}, enrollment ${m.ports.enrollment})`;
  const lines = [
    table([
      ['tenant', `${v.slug} (${v.tenant_id})`],
      ['manager', where],
      ['password', v.password],
      ['secret version', String(v.secret_version)],
      ['agent version', v.agent_version],
    ]),
    '',
    'CA certificate (WAZUH_REGISTRATION_CA):',
    v.ca_pem.trimEnd(),
  ];
  if (v.commands === null) {
    lines.push('', 'No install commands until the manager has an address.');
  } else {
    lines.push(
      '',
      '# Debian, Ubuntu (deb)',
      v.commands.deb,
      '',
      '# RHEL, Rocky, Amazon Linux, SUSE (rpm)',
      v.commands.rpm,
      '',
      '# Windows (msi)',
      v.commands.msi,
    );
  }
  return lines.join('\n');
}

export async function enrollment(
  ref: string,
  opts: { rotate: boolean; json: boolean },
): Promise<void> {
  checkRef(ref);
  await withSession(async (s) => {
    const id = await resolve(s, ref);
    const params = { tenant_id: id };
    if (opts.rotate) {
      const rotated = expectStatus(await s.svc.mssp.rotateEnrollment({ params }), 202);
      progress(
        rotated.manager_rollout === 'started'
          ? `rotated: secret version ${rotated.secret_version}; the manager restarts and refuses the old password`
          : `rotated: secret version ${rotated.secret_version}; no manager is installed yet`,
      );
    }
    const view = expectStatus(await s.svc.mssp.getEnrollment({ params }), 200);
    print(opts.json ? view : text(view));
  });
}

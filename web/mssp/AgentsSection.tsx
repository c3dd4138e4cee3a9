import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useRef, useState } from 'react';
import { msspContract } from '../../contracts/index.ts';
import { ok, svc } from '../shared/api.ts';
import { useIdentity } from '../shared/auth.tsx';
import { ErrorState, Loading } from '../shared/states.tsx';
import { Modal } from './Modal.tsx';
import { msspKeys } from './query-keys.ts';
import { mayCall } from './roles.ts';
import type { Tenant } from './tenant-states.ts';

/**
 * "Agents" on the tenant page (docs/enrollment.md): what an agent install needs to join this
 * tenant's manager. The reveal is an audited secret read, so it happens only after a
 * confirmation, is never refetched on its own (no focus or interval refetch) and is dropped when
 * the page goes (gcTime 0). Rotation, also confirmed, reads the answer again: the new password.
 */
export function AgentsSection({ tenant }: { tenant: Tenant }) {
  const identity = useIdentity();
  const [revealed, setRevealed] = useState(false);
  const [asking, setAsking] = useState<'reveal' | 'rotate' | null>(null);
  const queries = useQueryClient();
  const key = msspKeys.enrollment(tenant.id);
  const params = { tenant_id: tenant.id };
  const enrollment = useQuery({
    queryKey: key,
    queryFn: () => ok(svc.mssp.getEnrollment({ params })),
    enabled: revealed,
    staleTime: Number.POSITIVE_INFINITY,
    gcTime: 0,
    retry: false,
    refetchOnWindowFocus: false,
  });
  const rotation = useMutation({
    mutationFn: () => ok(svc.mssp.rotateEnrollment({ params })),
    onSuccess: () => {
      setRevealed(true);
      void queries.invalidateQueries({ queryKey: key });
    },
  });
  if (!mayCall(identity.role, msspContract.getEnrollment) || tenant.state !== 'active') return null;
  const close = () => setAsking(null);
  const v = enrollment.data;
  return (
    <section aria-labelledby="agents-title">
      <h2 id="agents-title">Agents</h2>
      <p>
        Agents enroll with this tenant's manager using its enrollment password and check the
        manager's certificate against the tenant's CA.
      </p>
      <div className="action">
        {!revealed && (
          <button type="button" onClick={() => setAsking('reveal')}>
            Reveal enrollment details
          </button>
        )}
        {mayCall(identity.role, msspContract.rotateEnrollment) && (
          <button type="button" onClick={() => setAsking('rotate')}>
            Rotate enrollment password
          </button>
        )}
      </div>
      {rotation.data && (
        <p className="notice" role="status">
          Rotated: secret version {rotation.data.secret_version}.{' '}
          {rotation.data.manager_rollout === 'started'
            ? 'The manager restarts and refuses the old password; enrolled agents keep working.'
            : 'No manager is installed yet.'}
        </p>
      )}
      {rotation.isError && <ErrorState error={rotation.error} />}
      {revealed && enrollment.isPending && <Loading />}
      {enrollment.isError && <ErrorState error={enrollment.error} />}
      {v && (
        <div className="enrollment">
          <dl className="facts">
            <dt>Manager</dt>
            <dd>
              {v.manager.status === 'ready'
                ? v.manager.addresses.join(', ')
                : `pending: ${v.manager.pending_reason}`}{' '}
              ({v.manager.mode}; events port {v.manager.ports.events}, enrollment port{' '}
              {v.manager.ports.enrollment})
            </dd>
            <dt>Agent version</dt>
            <dd>{v.agent_version}</dd>
            <dt>Secret version</dt>
            <dd>{v.secret_version}</dd>
          </dl>
          <CopyText label="Enrollment password" text={v.password} />
          <CopyText label="CA certificate (PEM)" text={v.ca_pem} multiline />
          {v.commands ? (
            <>
              <CopyText label="Install on Debian or Ubuntu (deb)" text={v.commands.deb} multiline />
              <CopyText
                label="Install on RHEL, Rocky or SUSE (rpm)"
                text={v.commands.rpm}
                multiline
              />
              <CopyText
                label="Install on Windows (msi, PowerShell)"
                text={v.commands.msi}
                multiline
              />
            </>
          ) : (
            <p className="notice">No install commands until the manager has an address.</p>
          )}
        </div>
      )}
      <Modal
        open={asking === 'reveal'}
        title={`Reveal ${tenant.display_name}'s enrollment password?`}
        onClose={close}
      >
        <p>
          Anyone holding it can enroll agents into this tenant. The reveal is recorded in the audit
          log under your name.
        </p>
        <div className="modal-actions">
          <button type="button" onClick={close}>
            Cancel
          </button>
          <button
            type="button"
            onClick={() => {
              setRevealed(true);
              close();
            }}
          >
            Reveal
          </button>
        </div>
      </Modal>
      <Modal
        open={asking === 'rotate'}
        title={`Rotate ${tenant.display_name}'s enrollment password?`}
        onClose={close}
      >
        <p>
          The manager restarts with a new password and refuses the old one: install commands handed
          out before stop working. Agents already enrolled keep their keys.
        </p>
        <div className="modal-actions">
          <button type="button" onClick={close}>
            Cancel
          </button>
          <button
            type="button"
            className="danger"
            aria-busy={rotation.isPending}
            onClick={() => rotation.mutate(undefined, { onSettled: close })}
          >
            Rotate {tenant.slug}
          </button>
        </div>
      </Modal>
    </section>
  );
}

/** A read-only value with a Copy button; without clipboard access the text is selected instead. */
function CopyText({
  label,
  text,
  multiline = false,
}: {
  label: string;
  text: string;
  multiline?: boolean;
}) {
  const id = useId();
  const field = useRef<HTMLInputElement & HTMLTextAreaElement>(null);
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  async function copy() {
    field.current?.select();
    try {
      await navigator.clipboard.writeText(text);
      setCopied('yes');
    } catch {
      setCopied('no');
    }
  }
  const common = {
    ref: field,
    id,
    readOnly: true,
    value: text,
    spellCheck: false,
    autoComplete: 'off',
  } as const;
  return (
    <div className="copy-block">
      <label htmlFor={id}>{label}</label>
      <div className="copy-field">
        {multiline ? (
          <textarea {...common} rows={Math.min(12, text.split('\n').length)} />
        ) : (
          <input {...common} />
        )}
        <button type="button" aria-label={`Copy ${label}`} onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p className="field-hint" role="status">
        {copied === 'yes' && 'Copied.'}
        {copied === 'no' && 'Selected: copy it with your keyboard or menu.'}
      </p>
    </div>
  );
}

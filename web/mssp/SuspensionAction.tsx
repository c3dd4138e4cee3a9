import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ok, svc } from '../shared/api.ts';
import { ErrorState } from '../shared/states.tsx';
import { Field } from './Field.tsx';
import { Modal } from './Modal.tsx';
import { msspKeys } from './query-keys.ts';
import type { Tenant } from './tenant-states.ts';

const TEXT = {
  suspend: {
    button: 'Suspend',
    title: (name: string) => `Suspend ${name}?`,
    explain:
      "Its workloads scale to zero (data is kept), its adapter's deliveries and its customers' sign-ins are refused, and its customers are signed out. Your team keeps reading its data.",
  },
  resume: {
    button: 'Resume',
    title: (name: string) => `Resume ${name}?`,
    explain:
      'Its workloads get their replicas back, its adapter and customers are let in again, and triage continues where it stopped.',
  },
} as const;

/** Suspend (active tenant) or resume (suspended one), after a confirmation with an optional reason. */
export function SuspensionAction({ tenant }: { tenant: Tenant }) {
  const action = tenant.state === 'suspended' ? 'resume' : 'suspend';
  const text = TEXT[action];
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const queries = useQueryClient();
  const mutation = useMutation({
    mutationFn: () => {
      const request = {
        params: { tenant_id: tenant.id },
        body: reason.trim() ? { reason: reason.trim() } : {},
      };
      return ok(action === 'suspend' ? svc.mssp.suspend(request) : svc.mssp.resume(request));
    },
    onSettled: () => {
      for (const queryKey of msspKeys.tenantChanged(tenant.id))
        void queries.invalidateQueries({ queryKey });
    },
  });
  const close = () => {
    setOpen(false);
    setReason('');
  };
  const confirm = (event: FormEvent) => {
    event.preventDefault();
    mutation.mutate(undefined, { onSuccess: close });
  };
  return (
    <div className="action">
      <button type="button" onClick={() => setOpen(true)}>
        {text.button}
      </button>
      <Modal open={open} title={text.title(tenant.display_name)} onClose={close}>
        <form onSubmit={confirm} noValidate>
          <p>{text.explain}</p>
          <Field
            id={`${action}-reason`}
            label="Reason (optional, kept in the audit log)"
            autoComplete="off"
            value={reason}
            onValue={setReason}
          />
          {mutation.isError && <ErrorState error={mutation.error} />}
          <div className="modal-actions">
            <button type="button" onClick={close}>
              Cancel
            </button>
            <button type="submit" aria-busy={mutation.isPending}>
              {text.button} {tenant.slug}
            </button>
          </div>
        </form>
      </Modal>
    </div>
  );
}

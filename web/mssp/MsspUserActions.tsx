import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { ok, svc } from '../shared/api.ts';
import { ErrorState } from '../shared/states.tsx';
import { ROLE_LABELS } from '../shared/texts.ts';
import { Modal } from './Modal.tsx';
import { msspKeys } from './query-keys.ts';
import type { User } from './UsersPage.tsx';

type MsspRole = 'platform_admin' | 'mssp_admin' | 'analyst';
const MSSP_ROLES: MsspRole[] = ['analyst', 'mssp_admin', 'platform_admin'];

/**
 * Disable / enable and the role of an MSSP user (docs/operations.md "MSSP users"). Offered to a
 * platform_admin for anyone but themselves: spec §5.8 gives MSSP-side user management to that role
 * alone, and the API refuses one's own account (409 cannot_disable_self / cannot_change_own_role).
 */
export function MsspUserActions({ user }: { user: User }) {
  return (
    <>
      <RoleSelect user={user} />
      {user.disabled_at ? <Enable user={user} /> : <Disable user={user} />}
    </>
  );
}

function useRefresh() {
  const queries = useQueryClient();
  return () => void queries.invalidateQueries({ queryKey: msspKeys.users() });
}

function RoleSelect({ user }: { user: User }) {
  const id = useId();
  const refresh = useRefresh();
  const change = useMutation({
    mutationFn: (role: MsspRole) =>
      ok(svc.mssp.changeUserRole({ params: { id: user.id }, body: { role } })),
    onSuccess: refresh,
  });
  return (
    <div>
      <label htmlFor={`${id}-role`}>Role (their sessions end when it changes)</label>
      <select
        id={`${id}-role`}
        value={user.role}
        aria-busy={change.isPending}
        onChange={(e) => change.mutate(e.target.value as MsspRole)}
      >
        {MSSP_ROLES.map((r) => (
          <option key={r} value={r}>
            {ROLE_LABELS[r]}
          </option>
        ))}
      </select>
      {change.isError && <ErrorState error={change.error} />}
    </div>
  );
}

function Disable({ user }: { user: User }) {
  const [open, setOpen] = useState(false);
  const refresh = useRefresh();
  const disable = useMutation({
    mutationFn: () => ok(svc.mssp.disableUser({ params: { id: user.id } })),
    onSuccess: () => {
      setOpen(false);
      refresh();
    },
  });
  return (
    <>
      <button type="button" className="danger" onClick={() => setOpen(true)}>
        Disable
      </button>
      <Modal open={open} title={`Disable ${user.email}?`} onClose={() => setOpen(false)}>
        <p>They can no longer sign in, and all of their sessions end. You can enable them again.</p>
        {disable.isError && <ErrorState error={disable.error} />}
        <div className="modal-actions">
          <button type="button" onClick={() => setOpen(false)}>
            Cancel
          </button>
          <button
            type="button"
            className="danger"
            aria-busy={disable.isPending}
            onClick={() => disable.mutate()}
          >
            Disable
          </button>
        </div>
      </Modal>
    </>
  );
}

function Enable({ user }: { user: User }) {
  const refresh = useRefresh();
  const enable = useMutation({
    mutationFn: () => ok(svc.mssp.enableUser({ params: { id: user.id } })),
    onSuccess: refresh,
  });
  return (
    <>
      <button type="button" aria-busy={enable.isPending} onClick={() => enable.mutate()}>
        Enable
      </button>
      {enable.isError && <ErrorState error={enable.error} />}
    </>
  );
}

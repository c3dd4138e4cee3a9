import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useParams, useSearchParams } from 'react-router-dom';
import { ok, svc } from '../shared/api.ts';
import { useIdentity } from '../shared/auth.tsx';
import type { Role } from '../shared/routing.ts';
import { Empty, ErrorState, QueryView } from '../shared/states.tsx';
import { ROLE_LABELS } from '../shared/texts.ts';
import { Modal } from './Modal.tsx';
import { MsspUserActions } from './MsspUserActions.tsx';
import { OneTimePassword } from './OneTimePassword.tsx';
import { msspKeys } from './query-keys.ts';
import { isAdmin } from './roles.ts';
import type { User } from './UsersPage.tsx';

/**
 * Who the reset button is offered to (spec §5.9 item 6, contracts/mssp.ts resetPassword):
 * platform_admin for any other user, mssp_admin for customer users; nobody for themselves
 * (409 cannot_reset_self).
 */
export function mayReset(role: Role, selfId: string, user: User): boolean {
  if (user.id === selfId) return false;
  if (role === 'platform_admin') return true;
  return role === 'mssp_admin' && user.role === 'customer_viewer';
}

/**
 * One user. There is no single-user read in the API, so the page finds the user in the list
 * it belongs to: the MSSP users, or the customer users of `?tenant=`.
 */
export function UserPage() {
  const { userId = '' } = useParams();
  const [params] = useSearchParams();
  const tenantId = params.get('tenant') ?? undefined;
  const users = useQuery({
    queryKey: tenantId ? msspKeys.tenantUsers(tenantId) : msspKeys.users(),
    queryFn: () =>
      tenantId
        ? ok(svc.mssp.listTenantUsers({ params: { tenant_id: tenantId } }))
        : ok(svc.mssp.listUsers()),
  });
  return (
    <QueryView query={users}>
      {(d) => {
        const user = d.items.find((u) => u.id === userId);
        if (!user) {
          return (
            <section>
              <h1>User</h1>
              <Empty title="There is no such user." />
            </section>
          );
        }
        return <UserDetail user={user} tenantId={tenantId} />;
      }}
    </QueryView>
  );
}

function UserDetail({ user, tenantId }: { user: User; tenantId: string | undefined }) {
  const identity = useIdentity();
  return (
    <section>
      <h1>{user.display_name ?? user.email}</h1>
      <dl className="facts">
        <dt>Email</dt>
        <dd>{user.email}</dd>
        <dt>Role</dt>
        <dd>{ROLE_LABELS[user.role]}</dd>
        <dt>Status</dt>
        <dd>
          {user.disabled_at
            ? `deactivated ${new Date(user.disabled_at).toLocaleString()}`
            : 'active'}
        </dd>
        <dt>Created</dt>
        <dd>{new Date(user.created_at).toLocaleString()}</dd>
      </dl>
      <div className="actions">
        {mayReset(identity.role, identity.user_id, user) && <ResetPassword user={user} />}
        {tenantId && isAdmin(identity.role) && !user.disabled_at && (
          <Deactivate user={user} tenantId={tenantId} />
        )}
        {!tenantId && identity.role === 'platform_admin' && user.id !== identity.user_id && (
          <MsspUserActions user={user} />
        )}
      </div>
    </section>
  );
}

/**
 * The admin reset (spec §5.9 item 6): a confirmation modal; on confirm the generated password
 * appears once in a copy field, held only in this component's state; closing the modal drops
 * it, and nothing else (query or mutation cache) ever held it.
 */
function ResetPassword({ user }: { user: User }) {
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState<string | null>(null);
  const [revoked, setRevoked] = useState(0);
  const reset = useMutation({
    mutationFn: async () => {
      const body = await ok(svc.mssp.resetPassword({ params: { id: user.id } }));
      setPassword(body.password);
      setRevoked(body.revoked_sessions);
    },
  });
  const close = () => {
    setOpen(false);
    setPassword(null);
    reset.reset();
  };
  return (
    <>
      <button type="button" className="danger" onClick={() => setOpen(true)}>
        Reset password
      </button>
      <Modal
        open={open}
        title={password ? 'New password' : `Reset the password of ${user.email}?`}
        onClose={close}
      >
        {password ? (
          <>
            <p role="status">
              The password of {user.email} was reset; {revoked} session{revoked === 1 ? '' : 's'}{' '}
              ended. They must choose a new password at their next sign-in.
            </p>
            <OneTimePassword label="Generated password" password={password} />
            <div className="modal-actions">
              <button type="button" className="primary" onClick={close}>
                Close
              </button>
            </div>
          </>
        ) : (
          <>
            <p>
              A new password is generated and shown once. All of their sessions end, and they must
              choose their own password at their next sign-in.
            </p>
            {reset.isError && <ErrorState error={reset.error} />}
            <div className="modal-actions">
              <button type="button" onClick={close}>
                Cancel
              </button>
              <button
                type="button"
                className="danger"
                aria-busy={reset.isPending}
                onClick={() => reset.mutate()}
              >
                Reset password
              </button>
            </div>
          </>
        )}
      </Modal>
    </>
  );
}

function Deactivate({ user, tenantId }: { user: User; tenantId: string }) {
  const [open, setOpen] = useState(false);
  const queries = useQueryClient();
  const deactivate = useMutation({
    mutationFn: () =>
      ok(svc.mssp.deactivateTenantUser({ params: { tenant_id: tenantId, user_id: user.id } })),
    onSuccess: () => {
      setOpen(false);
      void queries.invalidateQueries({ queryKey: msspKeys.tenantUsers(tenantId) });
    },
  });
  return (
    <>
      <button type="button" onClick={() => setOpen(true)}>
        Deactivate
      </button>
      <Modal open={open} title={`Deactivate ${user.email}?`} onClose={() => setOpen(false)}>
        <p>They can no longer sign in, and all of their sessions end.</p>
        {deactivate.isError && <ErrorState error={deactivate.error} />}
        <div className="modal-actions">
          <button type="button" onClick={() => setOpen(false)}>
            Cancel
          </button>
          <button
            type="button"
            className="danger"
            aria-busy={deactivate.isPending}
            onClick={() => deactivate.mutate()}
          >
            Deactivate
          </button>
        </div>
      </Modal>
    </>
  );
}

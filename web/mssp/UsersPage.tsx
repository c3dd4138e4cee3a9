import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { Link } from 'react-router-dom';
import type { Static } from 'typebox';
import type { msspContract } from '../../contracts/index.ts';
import { ok, svc } from '../shared/api.ts';
import { useIdentity } from '../shared/auth.tsx';
import type { Role } from '../shared/routing.ts';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, QueryView } from '../shared/states.tsx';
import { ROLE_LABELS } from '../shared/texts.ts';
import { Field } from './Field.tsx';
import { formProblem } from './field-errors.ts';
import { OneTimePassword } from './OneTimePassword.tsx';
import { msspKeys } from './query-keys.ts';
import { isAdmin } from './roles.ts';
import { TenantPicker, useTenantParam } from './TenantPicker.tsx';

export type User = Static<(typeof msspContract.listUsers.responses)[200]>['items'][number];
type MsspRole = 'platform_admin' | 'mssp_admin' | 'analyst';

/** The MSSP roles a creator may hand out (contracts/mssp.ts createUser: mssp_admin invites analysts). */
function grantable(role: Role): MsspRole[] {
  if (role === 'platform_admin') return ['analyst', 'mssp_admin', 'platform_admin'];
  if (role === 'mssp_admin') return ['analyst'];
  return [];
}

/** MSSP staff, and (for admins) the customer users of a chosen tenant. */
export function UsersPage() {
  const identity = useIdentity();
  const users = useQuery({
    queryKey: msspKeys.users(),
    queryFn: () => ok(svc.mssp.listUsers()),
  });
  return (
    <section>
      <h1>Users</h1>
      <h2>MSSP users</h2>
      <QueryView
        query={users}
        isEmpty={(d) => d.items.length === 0}
        empty={<Empty title="No MSSP users." />}
      >
        {(d) => <UserTable users={d.items} caption="MSSP users" />}
      </QueryView>
      {grantable(identity.role).length > 0 && <CreateMsspUser roles={grantable(identity.role)} />}
      {isAdmin(identity.role) && <TenantUsers />}
    </section>
  );
}

export function UserTable({
  users,
  caption,
  tenantId,
}: {
  users: User[];
  caption: string;
  tenantId?: string;
}) {
  return (
    <ScrollTable label={caption}>
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Email</th>
          <th scope="col">Name</th>
          <th scope="col">Role</th>
          <th scope="col">Status</th>
        </tr>
      </thead>
      <tbody>
        {users.map((u) => (
          <tr key={u.id}>
            <td>
              <Link to={tenantId ? `/users/${u.id}?tenant=${tenantId}` : `/users/${u.id}`}>
                {u.email}
              </Link>
            </td>
            <td>{u.display_name ?? '—'}</td>
            <td>{ROLE_LABELS[u.role]}</td>
            <td>{u.disabled_at ? 'deactivated' : 'active'}</td>
          </tr>
        ))}
      </tbody>
    </ScrollTable>
  );
}

/** A created user's initial password, shown once; "Done" drops it from memory. */
function Created({
  email,
  password,
  onDone,
}: {
  email: string;
  password: string | null;
  onDone: () => void;
}) {
  return (
    <div className="notice" role="status">
      <p>Created {email}. They choose their own password at first sign-in.</p>
      {password && <OneTimePassword label={`Initial password of ${email}`} password={password} />}
      <button type="button" onClick={onDone}>
        Done
      </button>
    </div>
  );
}

function useCreated() {
  const [created, setCreated] = useState<{ email: string; password: string | null } | null>(null);
  return [created, setCreated] as const;
}

function CreateMsspUser({ roles }: { roles: MsspRole[] }) {
  const id = useId();
  const queries = useQueryClient();
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<MsspRole>(roles[0] ?? 'analyst');
  const [created, setCreated] = useCreated();
  // The password goes to component state only, never into the mutation's cached result.
  const create = useMutation({
    mutationFn: async () => {
      const body = await ok(
        svc.mssp.createUser({
          body: { email: email.trim(), role, ...(name.trim() && { display_name: name.trim() }) },
        }),
      );
      setCreated({ email: body.user.email, password: body.initial_password });
    },
    onSuccess: () => {
      setEmail('');
      setName('');
      void queries.invalidateQueries({ queryKey: msspKeys.users() });
    },
  });
  const problem = formProblem(create.error, ['/email', '/display_name', '/role']);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <section aria-labelledby={`${id}-title`} className="narrow">
      <h3 id={`${id}-title`}>Add an MSSP user</h3>
      {created && <Created {...created} onDone={() => setCreated(null)} />}
      {problem.summary && (
        <p className="error" role="alert">
          {problem.summary}
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <Field
          id={`${id}-email`}
          label="Email"
          type="email"
          autoComplete="off"
          value={email}
          onValue={setEmail}
          error={problem.fields['/email']}
        />
        <Field
          id={`${id}-name`}
          label="Name (optional)"
          autoComplete="off"
          value={name}
          onValue={setName}
          error={problem.fields['/display_name']}
        />
        <label htmlFor={`${id}-role`}>Role</label>
        <select
          id={`${id}-role`}
          value={role}
          onChange={(e) => setRole(e.target.value as MsspRole)}
        >
          {roles.map((r) => (
            <option key={r} value={r}>
              {ROLE_LABELS[r]}
            </option>
          ))}
        </select>
        <button type="submit" className="primary" aria-busy={create.isPending}>
          Add user
        </button>
      </form>
    </section>
  );
}

function TenantUsers() {
  const [tenantId, choose] = useTenantParam();
  return (
    <>
      <h2>Customer users</h2>
      <TenantPicker value={tenantId} onChange={choose} />
      {tenantId ? (
        <TenantUserList tenantId={tenantId} />
      ) : (
        <Empty title="Choose a tenant to see its customer users." />
      )}
    </>
  );
}

function TenantUserList({ tenantId }: { tenantId: string }) {
  const users = useQuery({
    queryKey: msspKeys.tenantUsers(tenantId),
    queryFn: () => ok(svc.mssp.listTenantUsers({ params: { tenant_id: tenantId } })),
  });
  return (
    <>
      <QueryView
        query={users}
        isEmpty={(d) => d.items.length === 0}
        empty={<Empty title="This tenant has no customer users yet." />}
      >
        {(d) => <UserTable users={d.items} caption="Customer users" tenantId={tenantId} />}
      </QueryView>
      <CreateTenantUser tenantId={tenantId} />
    </>
  );
}

function CreateTenantUser({ tenantId }: { tenantId: string }) {
  const id = useId();
  const queries = useQueryClient();
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [created, setCreated] = useCreated();
  const create = useMutation({
    mutationFn: async () => {
      const body = await ok(
        svc.mssp.createTenantUser({
          params: { tenant_id: tenantId },
          body: { email: email.trim(), ...(name.trim() && { display_name: name.trim() }) },
        }),
      );
      setCreated({ email: body.user.email, password: body.initial_password });
    },
    onSuccess: () => {
      setEmail('');
      setName('');
      void queries.invalidateQueries({ queryKey: msspKeys.tenantUsers(tenantId) });
    },
  });
  const problem = formProblem(create.error, ['/email', '/display_name']);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <section aria-labelledby={`${id}-title`} className="narrow">
      <h3 id={`${id}-title`}>Add a customer viewer</h3>
      {created && <Created {...created} onDone={() => setCreated(null)} />}
      {problem.summary && (
        <p className="error" role="alert">
          {problem.summary}
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <Field
          id={`${id}-email`}
          label="Email"
          type="email"
          autoComplete="off"
          value={email}
          onValue={setEmail}
          error={problem.fields['/email']}
        />
        <Field
          id={`${id}-name`}
          label="Name (optional)"
          autoComplete="off"
          value={name}
          onValue={setName}
          error={problem.fields['/display_name']}
        />
        <button type="submit" className="primary" aria-busy={create.isPending}>
          Add customer viewer
        </button>
      </form>
    </section>
  );
}

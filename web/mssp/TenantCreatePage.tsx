import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import type { TenantConfig } from '../../contracts/tenant-config.ts';
import { ok, svc } from '../shared/api.ts';
import { Field } from './Field.tsx';
import { formProblem } from './field-errors.ts';
import { msspKeys } from './query-keys.ts';

/** The body pointers this form has a field for (problem `errors[].path`, docs/errors.md). */
const FIELDS = [
  '/slug',
  '/display_name',
  '/branding',
  '/branding/app_name',
  '/branding/primary_color',
  '/branding/secondary_color',
  '/branding/logo_url',
  '/llm',
  '/llm/provider',
  '/llm/base_url',
  '/llm/model',
  '/llm/api_key',
  '/integrations/external_analyzer_url',
] as const;

interface Draft {
  slug: string;
  display_name: string;
  branded: boolean;
  app_name: string;
  primary_color: string;
  secondary_color: string;
  logo_url: string;
  withLlm: boolean;
  provider: string;
  base_url: string;
  model: string;
  api_key: string;
  external_analyzer_url: string;
}

const EMPTY: Draft = {
  slug: '',
  display_name: '',
  branded: false,
  app_name: '',
  primary_color: '#0b5394',
  secondary_color: '#f1c232',
  logo_url: '',
  withLlm: false,
  provider: '',
  base_url: '',
  model: '',
  api_key: '',
  external_analyzer_url: '',
};

/** The TenantConfig the form describes: optional parts only when the reader filled them in. */
function configOf(d: Draft): TenantConfig {
  return {
    slug: d.slug.trim(),
    display_name: d.display_name.trim(),
    ...(d.branded && {
      branding: {
        app_name: d.app_name.trim(),
        primary_color: d.primary_color,
        secondary_color: d.secondary_color,
        ...(d.logo_url.trim() && { logo_url: d.logo_url.trim() }),
      },
    }),
    ...(d.withLlm && {
      llm: {
        provider: d.provider.trim(),
        base_url: d.base_url.trim(),
        model: d.model.trim(),
        ...(d.api_key && { api_key: d.api_key }),
      },
    }),
    ...(d.external_analyzer_url.trim() && {
      integrations: { external_analyzer_url: d.external_analyzer_url.trim() },
    }),
  };
}

/** Create a tenant (spec §9.4): on 201 the tenant page follows its provisioning live. */
export function TenantCreatePage() {
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const navigate = useNavigate();
  const queries = useQueryClient();
  const create = useMutation({
    mutationFn: (config: TenantConfig) => ok(svc.mssp.createTenant({ body: config })),
    onSuccess: ({ tenant }) => {
      void queries.invalidateQueries({ queryKey: msspKeys.tenants() });
      void queries.invalidateQueries({ queryKey: msspKeys.fleet() });
      navigate(`/tenants/${tenant.id}`);
    },
  });
  const problem = formProblem(create.error, FIELDS);
  const set =
    <K extends keyof Draft>(key: K) =>
    (value: Draft[K]) =>
      setDraft((d) => ({ ...d, [key]: value }));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate(configOf(draft));
  };
  const err = (pointer: (typeof FIELDS)[number]) => problem.fields[pointer];

  return (
    <section className="narrow">
      <h1>Create tenant</h1>
      {problem.summary && (
        <p className="error" role="alert">
          {problem.summary}
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <Field
          id="tenant-slug"
          label="Slug"
          hint="Lowercase letters, digits and hyphens; the portal's address and namespace."
          required
          autoComplete="off"
          value={draft.slug}
          onValue={set('slug')}
          error={err('/slug')}
        />
        <Field
          id="tenant-name"
          label="Display name"
          required
          autoComplete="off"
          value={draft.display_name}
          onValue={set('display_name')}
          error={err('/display_name')}
        />
        <fieldset>
          <legend>Branding</legend>
          <label className="check">
            <input
              type="checkbox"
              checked={draft.branded}
              onChange={(e) => set('branded')(e.target.checked)}
            />
            Give the portal its own look
          </label>
          {err('/branding') && <p className="field-error">{err('/branding')}</p>}
          {draft.branded && (
            <>
              <Field
                id="tenant-app-name"
                label="App name"
                value={draft.app_name}
                onValue={set('app_name')}
                error={err('/branding/app_name')}
              />
              <Field
                id="tenant-primary"
                label="Primary colour"
                type="color"
                value={draft.primary_color}
                onValue={set('primary_color')}
                error={err('/branding/primary_color')}
              />
              <Field
                id="tenant-secondary"
                label="Secondary colour"
                type="color"
                value={draft.secondary_color}
                onValue={set('secondary_color')}
                error={err('/branding/secondary_color')}
              />
              <Field
                id="tenant-logo"
                label="Logo URL (optional)"
                hint="An https:// address."
                type="url"
                value={draft.logo_url}
                onValue={set('logo_url')}
                error={err('/branding/logo_url')}
              />
            </>
          )}
        </fieldset>
        <fieldset>
          <legend>LLM</legend>
          <label className="check">
            <input
              type="checkbox"
              checked={draft.withLlm}
              onChange={(e) => set('withLlm')(e.target.checked)}
            />
            Use a model of the tenant's own
          </label>
          {err('/llm') && <p className="field-error">{err('/llm')}</p>}
          {draft.withLlm && (
            <>
              <Field
                id="tenant-llm-provider"
                label="Provider"
                value={draft.provider}
                onValue={set('provider')}
                error={err('/llm/provider')}
              />
              <Field
                id="tenant-llm-url"
                label="Base URL"
                type="url"
                value={draft.base_url}
                onValue={set('base_url')}
                error={err('/llm/base_url')}
              />
              <Field
                id="tenant-llm-model"
                label="Model"
                value={draft.model}
                onValue={set('model')}
                error={err('/llm/model')}
              />
              <Field
                id="tenant-llm-key"
                label="API key (optional)"
                type="password"
                autoComplete="off"
                hint="Written to a cluster Secret; never shown again."
                value={draft.api_key}
                onValue={set('api_key')}
                error={err('/llm/api_key')}
              />
            </>
          )}
        </fieldset>
        <fieldset>
          <legend>Integrations</legend>
          <Field
            id="tenant-analyzer"
            label="External analyzer URL (optional)"
            type="url"
            value={draft.external_analyzer_url}
            onValue={set('external_analyzer_url')}
            error={err('/integrations/external_analyzer_url')}
          />
        </fieldset>
        <button className="primary" type="submit" aria-busy={create.isPending}>
          Create tenant
        </button>
      </form>
    </section>
  );
}

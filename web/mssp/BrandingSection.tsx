import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type ChangeEvent, type CSSProperties, type FormEvent, useState } from 'react';
import type { Static } from 'typebox';
import type { msspContract } from '../../contracts/index.ts';
import { ok, svc } from '../shared/api.ts';
import { useIdentity } from '../shared/auth.tsx';
import { readableOn } from '../shared/branding.ts';
import { QueryView } from '../shared/states.tsx';
import { Field } from './Field.tsx';
import { formProblem } from './field-errors.ts';
import { msspKeys } from './query-keys.ts';
import { isAdmin } from './roles.ts';

type BrandingView = Static<(typeof msspContract.getBranding.responses)[200]>;
type BrandingChange = Static<NonNullable<typeof msspContract.putBranding.body>>;

/** Body pointers the form has a field for (400 validation_failed, 422 invalid_branding). */
const FIELDS = [
  '/app_name',
  '/primary_color',
  '/secondary_color',
  '/logo_url',
  '/favicon',
] as const;

/** The API's limit (docs/errors.md `invalid_branding`), checked here before a file is read. */
const MAX_IMAGE_BYTES = 200 * 1024;
const HEX = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i;

interface Draft {
  app_name: string;
  primary_color: string;
  secondary_color: string;
  logo_url: string;
  favicon: string;
}

const draftOf = (b: BrandingView): Draft => ({
  app_name: b.app_name,
  primary_color: b.primary_color,
  secondary_color: b.secondary_color,
  logo_url: b.logo_url ?? '',
  favicon: b.favicon,
});

/** PUT replaces the whole branding: an empty logo or favicon removes it. */
function changeOf(d: Draft): BrandingChange {
  return {
    app_name: d.app_name.trim(),
    primary_color: d.primary_color.trim(),
    secondary_color: d.secondary_color.trim(),
    ...(d.logo_url.trim() && { logo_url: d.logo_url.trim() }),
    favicon: d.favicon.trim(),
  };
}

/**
 * A tenant's portal branding (docs/web.md "Branding"): admins edit it with a live preview, other
 * MSSP roles see it. The portal shows a saved change on its next page load.
 */
export function BrandingSection({ tenantId }: { tenantId: string }) {
  const branding = useQuery({
    queryKey: msspKeys.branding(tenantId),
    queryFn: () => ok(svc.mssp.getBranding({ params: { tenant_id: tenantId } })),
  });
  const { role } = useIdentity();
  return (
    <section aria-labelledby="branding-title">
      <h2 id="branding-title">Branding</h2>
      <QueryView query={branding}>
        {(view) =>
          isAdmin(role) ? (
            <BrandingForm tenantId={tenantId} view={view} />
          ) : (
            <BrandingFacts view={view} />
          )
        }
      </QueryView>
    </section>
  );
}

function BrandingFacts({ view }: { view: BrandingView }) {
  return (
    <>
      {view.is_default && <p className="hint">This tenant uses the install branding.</p>}
      <dl className="facts">
        <dt>App name</dt>
        <dd>{view.app_name}</dd>
        <dt>Primary colour</dt>
        <dd>{view.primary_color}</dd>
        <dt>Secondary colour</dt>
        <dd>{view.secondary_color}</dd>
        <dt>Logo</dt>
        <dd>{view.logo_url ? describeImage(view.logo_url) : 'none'}</dd>
      </dl>
      <Preview draft={draftOf(view)} fallback={view} />
    </>
  );
}

function BrandingForm({ tenantId, view }: { tenantId: string; view: BrandingView }) {
  const [draft, setDraft] = useState<Draft>(() => draftOf(view));
  const [fileError, setFileError] = useState<string | null>(null);
  const queries = useQueryClient();
  const save = useMutation({
    mutationFn: (body: BrandingChange) =>
      ok(svc.mssp.putBranding({ params: { tenant_id: tenantId }, body })),
    onSuccess: (saved) => queries.setQueryData(msspKeys.branding(tenantId), saved),
  });
  const problem = formProblem(save.error, FIELDS);
  const set = (key: keyof Draft) => (value: string) => setDraft((d) => ({ ...d, [key]: value }));
  const upload = (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.target.files?.[0];
    setFileError(null);
    if (!file) return;
    if (file.size > MAX_IMAGE_BYTES) {
      setFileError(`The image is ${file.size} bytes; at most ${MAX_IMAGE_BYTES} allowed`);
      return;
    }
    const reader = new FileReader();
    reader.onload = () => set('logo_url')(String(reader.result));
    reader.readAsDataURL(file);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(changeOf(draft));
  };
  const uploaded = draft.logo_url.startsWith('data:');
  const logoError = fileError ?? problem.fields['/logo_url'];
  return (
    <div className="branding-editor">
      <form onSubmit={submit} noValidate className="narrow">
        {view.is_default && <p className="hint">This tenant uses the install branding.</p>}
        {problem.summary && (
          <p className="error" role="alert">
            {problem.summary}
          </p>
        )}
        {save.isSuccess && (
          <p className="notice" role="status">
            Branding saved. The portal shows it on its next page load.
          </p>
        )}
        <Field
          id="branding-app-name"
          label="App name"
          maxLength={100}
          value={draft.app_name}
          onValue={set('app_name')}
          error={problem.fields['/app_name']}
        />
        <Field
          id="branding-primary"
          label="Primary colour"
          hint="#rgb or #rrggbb"
          autoComplete="off"
          value={draft.primary_color}
          onValue={set('primary_color')}
          error={problem.fields['/primary_color']}
        />
        <Field
          id="branding-secondary"
          label="Secondary colour"
          hint="#rgb or #rrggbb"
          autoComplete="off"
          value={draft.secondary_color}
          onValue={set('secondary_color')}
          error={problem.fields['/secondary_color']}
        />
        {uploaded ? (
          <div>
            <p id="branding-logo-current">Logo: {describeImage(draft.logo_url)}</p>
            <button type="button" onClick={() => set('logo_url')('')}>
              Remove logo
            </button>
          </div>
        ) : (
          <Field
            id="branding-logo-url"
            label="Logo URL"
            hint="https://…, or upload a file below."
            type="url"
            autoComplete="off"
            value={draft.logo_url}
            onValue={set('logo_url')}
          />
        )}
        <label htmlFor="branding-logo-file">Upload logo</label>
        <input
          id="branding-logo-file"
          type="file"
          accept="image/png,image/jpeg,image/svg+xml"
          onChange={upload}
          aria-invalid={logoError ? true : undefined}
          aria-describedby={`branding-logo-file-hint${logoError ? ' branding-logo-error' : ''}`}
        />
        <p id="branding-logo-file-hint" className="field-hint">
          PNG, JPEG or SVG, at most 200 KB. SVGs with scripts or outside references are refused.
        </p>
        {logoError && (
          <p id="branding-logo-error" className="field-error">
            {logoError}
          </p>
        )}
        <Field
          id="branding-favicon"
          label="Favicon URL"
          hint="Empty for none."
          type="url"
          autoComplete="off"
          value={draft.favicon}
          onValue={set('favicon')}
          error={problem.fields['/favicon']}
        />
        <button type="submit" className="primary" aria-busy={save.isPending}>
          Save branding
        </button>
      </form>
      <Preview draft={draft} fallback={view} />
    </div>
  );
}

/** A data URL named by its type and size (its text would fill the page); a URL as itself. */
function describeImage(url: string): string {
  const data = /^data:image\/([a-z+]+);base64,(.*)$/s.exec(url);
  if (!data) return url;
  const bytes = Math.floor(((data[2] ?? '').replace(/=+$/, '').length * 3) / 4);
  return `uploaded ${(data[1] ?? '').replace('+xml', '')} image, ${(bytes / 1024).toFixed(1)} KB`;
}

/**
 * The portal's header and primary action in the draft's colours, as the reader types. A
 * colour that is not (yet) valid hex shows the saved one, so the preview never goes blank.
 */
function Preview({ draft, fallback }: { draft: Draft; fallback: BrandingView }) {
  const primary = HEX.test(draft.primary_color.trim())
    ? draft.primary_color.trim()
    : fallback.primary_color;
  const secondary = HEX.test(draft.secondary_color.trim())
    ? draft.secondary_color.trim()
    : fallback.secondary_color;
  const header: CSSProperties = { borderBottomColor: primary };
  const action: CSSProperties = { background: primary, color: readableOn(primary) };
  return (
    <figure className="branding-preview" aria-labelledby="branding-preview-caption">
      <figcaption id="branding-preview-caption">Preview of the portal</figcaption>
      <div className="branding-preview-header" style={header}>
        {draft.logo_url.trim() && <img className="brand-logo" src={draft.logo_url.trim()} alt="" />}
        <span className="branding-preview-name">{draft.app_name.trim() || fallback.app_name}</span>
      </div>
      <div className="branding-preview-body" style={{ borderLeftColor: secondary }}>
        <span className="branding-preview-action" style={action}>
          Primary action
        </span>
      </div>
    </figure>
  );
}

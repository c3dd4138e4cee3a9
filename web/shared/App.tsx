import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Route, Routes } from 'react-router-dom';
import { ApiError } from './api.ts';
import { AppContext, AuthProvider, RequireSession, useIdentity } from './auth.tsx';
import { BrandingContext, useBrandingLook, useDocumentTitle } from './branding.ts';
import { Layout } from './Layout.tsx';
import { LoginPage } from './LoginPage.tsx';
import { PasswordPage } from './PasswordPage.tsx';
import type { AppDefinition, PageRoute } from './routing.ts';
import { Empty } from './states.tsx';
import { NOT_ALLOWED, NOT_FOUND } from './texts.ts';
import './styles.css';

/** A problem is the answer: retrying a 4xx cannot change it; a 5xx or no answer may. */
function retry(failures: number, error: unknown): boolean {
  if (error instanceof ApiError && error.status < 500) return false;
  return failures < 2;
}

/** A page of the route list: its title, and the role check (spec: what a role may not do is not offered). */
function Page({ route }: { route: PageRoute }) {
  const identity = useIdentity();
  useDocumentTitle(route.title);
  if (!route.roles.includes(identity.role)) return <Empty title={NOT_ALLOWED} />;
  return route.element;
}

function NotFound() {
  useDocumentTitle('Not found');
  return <Empty title={NOT_FOUND} />;
}

function Shell({ app }: { app: AppDefinition }) {
  return <AuthProvider>{(auth) => <Branded app={app} identity={auth.identity} />}</AuthProvider>;
}

function Branded({
  app,
  identity,
}: {
  app: AppDefinition;
  identity: Parameters<typeof useBrandingLook>[1];
}) {
  const { look, settled } = useBrandingLook(app.kind, identity);
  // The sign-in page shows the host's branding from its first paint (spec §5.9 item 1).
  if (!settled) return null;
  return (
    <BrandingContext value={look}>
      <Routes>
        <Route path="/login" element={<LoginPage />} />
        <Route
          element={
            <RequireSession>
              <Layout />
            </RequireSession>
          }
        >
          <Route path="/account/password" element={<PasswordPage />} />
          {app.routes.map((r) => (
            <Route key={r.path} path={r.path} element={<Page route={r} />} />
          ))}
          <Route path="*" element={<NotFound />} />
        </Route>
      </Routes>
    </BrandingContext>
  );
}

/** Mounts an app (web/mssp/main.tsx, web/portal/main.tsx) on #root. */
export function startApp(app: AppDefinition): void {
  const element = document.getElementById('root');
  if (!element) throw new Error('index.html has no #root');
  const queries = new QueryClient({ defaultOptions: { queries: { retry, staleTime: 10_000 } } });
  createRoot(element).render(
    <StrictMode>
      <QueryClientProvider client={queries}>
        <BrowserRouter>
          <AppContext value={app}>
            <Shell app={app} />
          </AppContext>
        </BrowserRouter>
      </QueryClientProvider>
    </StrictMode>,
  );
}

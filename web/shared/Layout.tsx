import { Suspense } from 'react';
import { NavLink, Outlet } from 'react-router-dom';
import { AccountMenu } from './AccountMenu.tsx';
import { useApp, useIdentity } from './auth.tsx';
import { useLook } from './branding.ts';
import { Loading } from './states.tsx';
import { MUST_CHANGE_BANNER, SKIP_TO_CONTENT, WRONG_APP_MSSP, WRONG_APP_TENANT } from './texts.ts';

/**
 * The frame of every signed-in page: skip link, header (brand, the navigation the role may
 * use, account menu), the must-change banner, and the page in <main>. Pages may be lazy
 * (React.lazy): the Suspense boundary shows Loading while their code arrives.
 */
export function Layout() {
  const app = useApp();
  const identity = useIdentity();
  const look = useLook();
  const wrongApp = identity.user_type !== app.userType;
  const nav = identity.must_change || wrongApp ? [] : app.routes.filter((r) => r.nav);
  const Banner = wrongApp ? undefined : app.banner;
  return (
    <>
      <a className="skip-link" href="#main">
        {SKIP_TO_CONTENT}
      </a>
      <header className="app-header">
        <div className="brand">
          {look.logo_url && <img className="brand-logo" src={look.logo_url} alt="" />}
          <span className="brand-name">{look.app_name}</span>
        </div>
        {nav.length > 0 && (
          <nav aria-label="Main">
            <ul>
              {nav
                .filter((r) => r.roles.includes(identity.role))
                .map((r) => (
                  <li key={r.path}>
                    <NavLink to={r.path} end={r.path === '/'}>
                      {r.title}
                    </NavLink>
                  </li>
                ))}
            </ul>
          </nav>
        )}
        <AccountMenu />
      </header>
      {Banner && <Banner />}
      {identity.must_change && (
        <p className="banner" role="status">
          {MUST_CHANGE_BANNER}
        </p>
      )}
      <main id="main" tabIndex={-1}>
        {wrongApp ? (
          <p className="notice">
            {identity.user_type === 'mssp' ? WRONG_APP_MSSP : WRONG_APP_TENANT}
          </p>
        ) : (
          <Suspense fallback={<Loading />}>
            <Outlet />
          </Suspense>
        )}
      </main>
    </>
  );
}

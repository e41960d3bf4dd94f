import { lazy, Suspense } from 'react';
import RunsPage from './pages/runs.js';
import { href, useRoute } from './router.js';
import { useSession } from './session.js';

// The runs page is the landing page: bundled in, so opening the console waits for no second request.
const pages = {
  runs: RunsPage,
  deployments: lazy(() => import('./pages/deployments.js')),
  threads: lazy(() => import('./pages/threads.js')),
  tables: lazy(() => import('./pages/tables.js')),
  webhooks: lazy(() => import('./pages/webhooks.js')),
  'incoming-webhooks': lazy(() => import('./pages/incoming-webhooks.js')),
  crons: lazy(() => import('./pages/crons.js')),
  usage: lazy(() => import('./pages/usage.js')),
  'api-keys': lazy(() => import('./pages/api-keys.js')),
  organizations: lazy(() => import('./pages/organizations.js')),
};
type PageName = keyof typeof pages;

const NAV: { page: PageName; label: string; admin: boolean }[] = [
  { page: 'runs', label: 'Runs', admin: false },
  { page: 'deployments', label: 'Deployments', admin: true },
  { page: 'threads', label: 'Threads', admin: false },
  { page: 'tables', label: 'Tables', admin: false },
  { page: 'crons', label: 'Crons', admin: false },
  { page: 'usage', label: 'Usage', admin: false },
  { page: 'webhooks', label: 'Webhooks', admin: true },
  { page: 'incoming-webhooks', label: 'Incoming webhooks', admin: true },
  { page: 'api-keys', label: 'API keys', admin: true },
  { page: 'organizations', label: 'Organizations', admin: true },
];

export function Layout() {
  const { role, signOut } = useSession();
  const [first = 'runs', ...rest] = useRoute();
  const allowed = NAV.filter((item) => role === 'admin' || !item.admin);
  const current = allowed.find((item) => item.page === first) ?? allowed[0]!;
  const Page = pages[current.page];
  return (
    <div className="shell">
      <header>
        <a className="brand" href={href('runs')}>
          crewd
        </a>
        <nav aria-label="Console">
          <ul>
            {allowed.map((item) => (
              <li key={item.page}>
                <a href={href(item.page)} aria-current={item.page === current.page ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <span className="who">{role === 'admin' ? 'Admin key' : 'Member key'}</span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>
        <Suspense fallback={<p>Loading…</p>}>
          <Page params={rest} />
        </Suspense>
      </main>
    </div>
  );
}

import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { Layout } from './layout.js';
import { SessionProvider } from './session.js';
import { SignIn } from './sign-in.js';
import './styles.css';

const queries = new QueryClient({
  defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false }, mutations: { retry: false } },
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queries}>
      <SessionProvider signedOut={(done) => <SignIn onSignedIn={done} />}>
        <Layout />
      </SessionProvider>
    </QueryClientProvider>
  </StrictMode>,
);

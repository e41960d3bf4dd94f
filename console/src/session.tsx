import { createContext, type ReactNode, useContext, useMemo, useState } from 'react';
import { ApiError, type CrewdClient, createCrewdClient, unwrap } from '../../src/client/index.js';

export type Role = 'admin' | 'member';

export interface Session {
  key: string;
  role: Role;
}

interface SessionValue extends Session {
  client: CrewdClient;
  signOut(): void;
}

const STORAGE = 'crewd.console.session';
const SessionContext = createContext<SessionValue | null>(null);

function stored(): Session | null {
  try {
    const text = sessionStorage.getItem(STORAGE);
    return text ? (JSON.parse(text) as Session) : null;
  } catch {
    return null;
  }
}

/** Checks a key against the API and learns its role: any key lists runs, only admin keys list API keys. */
export async function signIn(key: string): Promise<Session> {
  const client = createCrewdClient({ baseUrl: window.location.origin, apiKey: key });
  await unwrap(client.GET('/v1/runs', { params: { query: { limit: 1 } } }));
  const keys = await client.GET('/v1/api-keys');
  if (keys.response.status !== 200 && keys.response.status !== 403) {
    throw new ApiError(`Could not check the key’s role (${keys.response.status})`, keys.response.status);
  }
  return { key, role: keys.response.status === 200 ? 'admin' : 'member' };
}

/** The signed-in key lives in this tab's session storage only, never in a cookie. */
export function SessionProvider({
  signedOut,
  children,
}: {
  signedOut: (done: (session: Session) => void) => ReactNode;
  children: ReactNode;
}) {
  const [session, setSession] = useState<Session | null>(stored);
  const value = useMemo<SessionValue | null>(() => {
    if (!session) return null;
    return {
      ...session,
      client: createCrewdClient({ baseUrl: window.location.origin, apiKey: session.key }),
      signOut() {
        sessionStorage.removeItem(STORAGE);
        setSession(null);
      },
    };
  }, [session]);
  if (!value) {
    return signedOut((next) => {
      sessionStorage.setItem(STORAGE, JSON.stringify(next));
      setSession(next);
    });
  }
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionValue {
  const value = useContext(SessionContext);
  if (!value) throw new Error('useSession outside a signed-in session');
  return value;
}

import { useEffect, useState } from 'react';

/** Hash routes (`#/runs/run_…`): the service serves one page at /console/ and needs no rewrites. */
export function useRoute(): string[] {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const update = () => setHash(window.location.hash);
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  const path = hash.replace(/^#\/?/, '').split('?')[0] ?? '';
  return path.split('/').filter(Boolean).map(decodeURIComponent);
}

/** The query of the hash route (`#/runs?limit=1000`). */
export function hashQuery(): URLSearchParams {
  return new URLSearchParams(window.location.hash.split('?')[1] ?? '');
}

export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join('/')}`;
}

export function navigate(...parts: string[]): void {
  window.location.hash = href(...parts);
}

import { useQuery } from '@tanstack/react-query';

/** Whether this server serves a route (from its /openapi.json), so pages for newer features show when they land. */
export function useRouteAvailable(path: string): boolean | undefined {
  const document = useQuery({
    queryKey: ['openapi'],
    queryFn: async () => (await (await fetch('/openapi.json')).json()) as { paths: Record<string, unknown> },
    staleTime: Number.POSITIVE_INFINITY,
  });
  return document.data ? path in document.data.paths : undefined;
}

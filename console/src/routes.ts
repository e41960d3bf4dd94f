import { useQuery } from '@tanstack/react-query';

/** `/v1/deployments/{id}/versions/{version_id}` → `/v1/deployments/{}/versions/{}`: parameter names may differ. */
const shape = (path: string) => path.replace(/\{[^}]*\}/g, '{}');

/** Whether this server serves a route (from its /openapi.json), so pages for newer features show when they land. */
export function useRouteAvailable(path: string): boolean | undefined {
  const document = useQuery({
    queryKey: ['openapi'],
    queryFn: async () => (await (await fetch('/openapi.json')).json()) as { paths: Record<string, unknown> },
    staleTime: Number.POSITIVE_INFINITY,
  });
  if (!document.data) return undefined;
  const wanted = shape(path);
  return Object.keys(document.data.paths).some((served) => shape(served) === wanted);
}

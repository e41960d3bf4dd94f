import type { ReactNode } from 'react';
import { href } from '../router.js';
import { ErrorText } from './ui.js';

/** The top of a record's page: the way back to its list, its title, and why it could not be loaded. */
export function DetailHeader({
  back,
  title,
  error,
}: {
  back: { page: string; label: string };
  title: ReactNode;
  error?: unknown;
}) {
  return (
    <>
      <p>
        <a href={href(back.page)}>← {back.label}</a>
      </p>
      <h1>{title}</h1>
      <ErrorText error={error} />
    </>
  );
}

/** A record's facts, each a `Fact`; one column on a phone. */
export function Facts({ label, children }: { label?: string; children: ReactNode }) {
  return (
    <dl className="facts" aria-label={label}>
      {children}
    </dl>
  );
}

export function Fact({ name, children }: { name: string; children: ReactNode }) {
  return (
    <div>
      <dt>{name}</dt>
      <dd>{children}</dd>
    </div>
  );
}

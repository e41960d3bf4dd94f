import { type ReactNode, useId, useState } from 'react';

/**
 * What a mutation created that the API shows only once (a key, a signing secret, a URL): shown with a copy button
 * until Done forgets it; meanwhile and afterwards, `children` (the way to create another).
 */
export function ShownOnce<T>({
  created,
  secret,
  children,
}: {
  created: { data: T | undefined; reset(): void };
  secret(data: T): { label: string; value: string };
  children: ReactNode;
}) {
  if (created.data === undefined) return <>{children}</>;
  const { label, value } = secret(created.data);
  return <SecretOnce label={label} value={value} onDone={() => created.reset()} />;
}

function SecretOnce({ label, value, onDone }: { label: string; value: string; onDone(): void }) {
  const id = useId();
  const [copied, setCopied] = useState(false);
  async function copy() {
    try {
      await navigator.clipboard.writeText(value);
    } catch {
      const input = document.getElementById(id) as HTMLInputElement | null;
      input?.select();
      document.execCommand('copy');
    }
    setCopied(true);
  }
  return (
    <section className="secret" aria-label={`${label} (shown once)`}>
      <label htmlFor={id}>{label}</label>
      <div className="row">
        <input id={id} readOnly value={value} onFocus={(event) => event.currentTarget.select()} />
        <button type="button" onClick={copy}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      <p>This is shown only once: copy it now.</p>
      <button type="button" onClick={onDone}>
        Done
      </button>
    </section>
  );
}

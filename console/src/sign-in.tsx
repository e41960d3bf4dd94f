import { type FormEvent, useState } from 'react';
import { ErrorText, Field } from './components/ui.js';
import { type Session, signIn } from './session.js';

export function SignIn({ onSignedIn }: { onSignedIn(session: Session): void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await signIn(key.trim()));
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }
  return (
    <main className="sign-in">
      <h1>crewd console</h1>
      <form onSubmit={submit}>
        <Field label="API key" hint="Kept in this tab only; closing the tab signs you out.">
          {(id) => (
            <input
              id={id}
              type="password"
              autoComplete="off"
              required
              value={key}
              onChange={(event) => setKey(event.target.value)}
            />
          )}
        </Field>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <ErrorText error={error} />
      </form>
    </main>
  );
}

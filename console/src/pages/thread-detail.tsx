import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { type Schemas, unwrap } from '../../../src/client/index.js';
import { DetailHeader, Fact, Facts } from '../components/detail-header.js';
import { DeploymentName, threadLabel } from '../components/names.js';
import { ErrorText, Field, Json, parseJson, Status, When } from '../components/ui.js';
import { href, navigate } from '../router.js';
import { useSession } from '../session.js';

type Thread = Schemas['Thread'];

export function ThreadDetail({ id }: { id: string }) {
  const { client } = useSession();
  const thread = useQuery({
    queryKey: ['thread', id],
    queryFn: () => unwrap(client.GET('/v1/threads/{id}', { params: { path: { id } } })),
    refetchInterval: (query) => (query.state.data?.status === 'busy' ? 1500 : false),
  });
  const history = useQuery({
    queryKey: ['thread-history', id],
    queryFn: () => unwrap(client.GET('/v1/threads/{id}/history', { params: { path: { id }, query: { limit: 20 } } })),
  });
  const data = thread.data;
  return (
    <>
      <DetailHeader
        back={{ page: 'threads', label: 'Threads' }}
        title={data ? `Thread ${threadLabel(data)}` : `Thread ${id}`}
        error={thread.error}
      />
      {data ? (
        <>
          <Facts>
            <Fact name="Status">
              <Status value={data.status} />
            </Fact>
            <Fact name="Deployment">
              {data.deployment_id ? <DeploymentName id={data.deployment_id} withId /> : '—'}
            </Fact>
            <Fact name="Updated">
              <When at={data.updated_at} />
            </Fact>
          </Facts>
          {data.interrupts.length > 0 ? <Interrupts interrupts={data.interrupts} /> : null}
          <StartThreadRun thread={data} />
          <Json label="Values" value={data.values} />
          <Json label="Metadata" value={data.metadata} />
        </>
      ) : null}
      <h2>History</h2>
      <ErrorText error={history.error} />
      <ol className="history" aria-label="Checkpoints">
        {history.data?.checkpoints.map((checkpoint) => (
          <li key={checkpoint.checkpoint_id}>
            <When at={checkpoint.created_at} />{' '}
            {checkpoint.run_id ? <a href={href('runs', checkpoint.run_id)}>{checkpoint.run_id}</a> : 'values set'}
            <Json label={`Values at ${checkpoint.checkpoint_id}`} value={checkpoint.values} />
          </li>
        ))}
      </ol>
    </>
  );
}

function Interrupts({ interrupts }: { interrupts: Thread['interrupts'] }) {
  return (
    <section className="panel interrupts" aria-label="Interrupts">
      <h2>Waiting for input</h2>
      <ul>
        {interrupts.map((interrupt, index) => (
          <li key={interrupt.id ?? index}>
            <Json label={`Interrupt ${interrupt.id ?? index + 1}`} value={interrupt.value} />
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Starts a run in the thread; on an interrupted thread, the run resumes it with `command.resume`. */
function StartThreadRun({ thread }: { thread: Thread }) {
  const { client } = useSession();
  const queries = useQueryClient();
  const interrupted = thread.status === 'interrupted';
  const [input, setInput] = useState('{}');
  const [resume, setResume] = useState('');
  const start = useMutation({
    mutationFn: async () => {
      // A resume sends only `command.resume` (CONTRACTS §9): the graph goes on from its checkpoint, not from an input.
      const body = interrupted
        ? { command: { resume: jsonOrText(resume) } }
        : { input: (parseJson(input, 'Input') ?? {}) as Record<string, unknown> };
      return unwrap(client.POST('/v1/threads/{id}/runs', { params: { path: { id: thread.thread_id } }, body }));
    },
    onSuccess: (created) => {
      void queries.invalidateQueries({ queryKey: ['thread', thread.thread_id] });
      navigate('runs', created.run_id);
    },
  });
  return (
    <form
      className="panel"
      aria-label={interrupted ? 'Resume the thread' : 'Start a run in the thread'}
      onSubmit={(event: FormEvent) => {
        event.preventDefault();
        start.mutate();
      }}
    >
      <h2>{interrupted ? 'Resume' : 'Start a run'}</h2>
      {interrupted ? (
        <Field label="Answer (JSON or text)" hint="Sent as the resume value; the thread goes on from where it stopped">
          {(id) => <textarea id={id} rows={2} value={resume} onChange={(e) => setResume(e.target.value)} />}
        </Field>
      ) : (
        <Field label="Input (JSON)">
          {(id) => <textarea id={id} rows={3} value={input} onChange={(e) => setInput(e.target.value)} />}
        </Field>
      )}
      <button type="submit" disabled={start.isPending || thread.status === 'busy'}>
        {interrupted ? 'Resume thread' : 'Start run in thread'}
      </button>
      <ErrorText error={start.error} />
    </form>
  );
}

/** The answer as JSON when it is JSON (`true`, `{"ok": 1}`), else as the text typed. */
function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

import { useStream } from '@langchain/langgraph-sdk/react';
import { useState } from 'react';
import { createRoot } from 'react-dom/client';

/**
 * A chat page as a LangGraph app writes it with `useStream`, pointed at crewd's LangGraph API on this page's own
 * origin. The key and the thread ride in the URL (`?key=…&thread=…`), so that a reload rejoins the same thread.
 */
function Chat() {
  const params = new URLSearchParams(location.search);
  const [threadId, setThreadId] = useState(params.get('thread'));
  const [failure, setFailure] = useState(null);
  const stream = useStream({
    apiUrl: `${location.origin}/langgraph`,
    apiKey: params.get('key') ?? undefined,
    assistantId: 'chat',
    threadId,
    reconnectOnMount: true,
    onThreadId: (id) => {
      setThreadId(id);
      params.set('thread', id);
      history.replaceState(null, '', `?${params}`);
    },
    onError: (error) => setFailure(String(error)),
  });
  const ask = (tokens, extra = {}) =>
    stream.submit(
      { messages: [{ type: 'human', content: 'hi' }], tokens, pause: 0.1, ...extra },
      { streamResumable: true },
    );
  const question = stream.interrupt?.value?.question;
  return (
    <main>
      <button type="button" onClick={() => ask(20)}>
        Ask
      </button>
      <button type="button" onClick={() => ask(30)}>
        Ask long
      </button>
      <button type="button" onClick={() => ask(2, { ask: true })}>
        Ask with review
      </button>
      <ol aria-label="Messages">
        {stream.messages.map((message, index) => (
          <li key={message.id ?? index} data-type={message.type}>
            {typeof message.content === 'string' ? message.content : JSON.stringify(message.content)}
          </li>
        ))}
      </ol>
      {question ? (
        <section aria-label="Review">
          <p>{question}</p>
          <button type="button" onClick={() => stream.submit(undefined, { command: { resume: 'yes' } })}>
            Approve
          </button>
        </section>
      ) : null}
      <output aria-label="Approved">{String(stream.values?.approved ?? '')}</output>
      <output aria-label="Status">{stream.isLoading ? 'loading' : 'idle'}</output>
      <output aria-label="Error">{failure ?? ''}</output>
    </main>
  );
}

createRoot(document.getElementById('root')).render(<Chat />);

// A human-in-the-loop crew, as a LangGraph graph would speak the protocol: it reports what it got on
// standard input, then with input.ask stops at an interrupt (run.interrupted), with a command resumes
// from its checkpoint, and otherwise completes a step. Every end hands back a checkpoint of its own.
// input.bad ("interrupts" | "values" | "interrupt_id") prints a malformed run.interrupted.
let text = '';
process.stdin.on('data', (chunk) => {
  text += chunk;
});
process.stdin.on('end', () => {
  const received = JSON.parse(text);
  const { input, thread, command } = received;
  const out = (type, data) => process.stdout.write(`${JSON.stringify({ type, data })}\n`);
  out('stdin', received);
  const previous = thread?.checkpoint ?? null;
  const step = (previous?.step ?? 0) + 1;
  const values = thread?.values ?? {};
  if (input.bad) {
    const bad = {
      interrupts: { interrupts: 'not a list' },
      values: { interrupts: [{ value: 1 }], values: [1, 2] },
      interrupt_id: { interrupts: [{ id: 7, value: 1 }] },
    };
    out('run.interrupted', bad[input.bad]);
    return;
  }
  if (command) {
    out('run.completed', {
      output: { resumed: command.resume ?? null, from: previous },
      values: { ...values, ...(command.update ?? {}), answer: command.resume ?? null },
      checkpoint: { step, resumed: true },
    });
    return;
  }
  if (input.ask) {
    out('run.interrupted', {
      interrupts: [{ id: `ask-${step}`, value: { question: input.ask } }],
      values: { ...values, asked: input.ask },
      checkpoint: { step, waiting: input.ask },
    });
    return;
  }
  out('run.completed', { output: { step }, values, checkpoint: { step } });
});

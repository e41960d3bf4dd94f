#!/usr/bin/env node
// A small research crew speaking the crewd runner protocol (docs/runner-protocol.md).
// Two agents, two tasks, one tool call, logs, an artifact and an output built from the input.
// Deterministic: the same input gives the same events and output. `input.step_delay_ms`
// (default 200) only spaces the steps out so they can be watched arriving live.

const readInput = () =>
  new Promise((resolve) => {
    let text = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk) => {
      text += chunk;
    });
    process.stdin.on('end', () => resolve(JSON.parse(text)));
  });

const emit = (type, data) => process.stdout.write(`${JSON.stringify({ type, data })}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A stand-in search tool: derives "findings" from the words of the query, always the same. */
function searchTool(query) {
  const words = query
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 2);
  const unique = [...new Set(words)].slice(0, 3);
  return unique.map((word, index) => ({
    title: `Notes on ${word}`,
    url: `https://example.org/${encodeURIComponent(word)}`,
    snippet: `${word} appears in ${word.length * (index + 2)} recent sources.`,
  }));
}

async function main() {
  const { run_id: runId, input, thread } = await readInput();
  const topic = typeof input.topic === 'string' && input.topic.trim() !== '' ? input.topic.trim() : 'agent frameworks';
  const delay = Number.isFinite(input.step_delay_ms) ? input.step_delay_ms : 200;
  const researcher = 'Senior Researcher';
  const writer = 'Report Writer';

  emit('log', { message: `Crew kicked off for topic "${topic}"`, run_id: runId });
  await sleep(delay);

  emit('task.started', { task: 'research', agent: researcher });
  emit('agent.action', { agent: researcher, action: 'plan', thought: `Search the web for "${topic}"` });
  await sleep(delay);
  const query = `${topic} latest developments`;
  const results = searchTool(query);
  emit('tool_use', { agent: researcher, tool: 'web_search', input: { query }, output: { results } });
  await sleep(delay);
  emit('task.completed', { task: 'research', agent: researcher, output: `${results.length} findings` });

  emit('task.started', { task: 'write_report', agent: writer });
  emit('agent.action', { agent: writer, action: 'draft', thought: 'Turn the findings into a short report' });
  await sleep(delay);
  const lines = results.map((result) => `- ${result.title}: ${result.snippet} (${result.url})`);
  const previous = Array.isArray(thread?.values?.topics) ? thread.values.topics : [];
  const report = [
    `# ${topic}`,
    '',
    ...lines,
    ...(previous.length > 0 ? ['', `Earlier topics in this conversation: ${previous.join(', ')}`] : []),
  ].join('\n');
  emit('artifact', { name: 'report.md', mime_type: 'text/markdown', content: report });
  emit('task.completed', { task: 'write_report', agent: writer, output: 'report.md' });
  emit('log', { message: 'Crew finished' });

  const summary = `${results.length} findings on ${topic}`;
  emit('run.completed', {
    output: { topic, summary, sources: results.map((result) => result.url), report },
    ...(thread ? { values: { ...thread.values, topics: [...previous, topic], last_summary: summary } } : {}),
  });
}

main().catch((error) => {
  emit('run.failed', { error: error instanceof Error ? error.message : String(error) });
});

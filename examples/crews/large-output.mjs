// Tests the limits. input.mode: "long_line" (a 2 MiB line), "many_events" (input.count events),
// "big_events" (input.count events of input.size bytes, after input.delay_ms), "big_result" (a result line over 1 MiB),
// "bad_output" (output not an object), "nul" (U+0000 and halves of surrogate pairs in an event and the output), "deep" (an event and then a
// result nested input.depth levels deep), "refused" (an event the test's database trigger refuses).
let text = '';
process.stdin.on('data', (chunk) => {
  text += chunk;
});
process.stdin.on('end', async () => {
  const { input } = JSON.parse(text);
  const write = (line) =>
    new Promise((resolve) => {
      if (process.stdout.write(`${line}\n`)) resolve();
      else process.stdout.once('drain', resolve);
    });
  const event = (type, data) => write(JSON.stringify({ type, data }));
  if (input.mode === 'long_line') {
    await write('x'.repeat(2 * 1024 * 1024));
    await event('run.completed', { output: { after: 'long line' } });
  } else if (input.mode === 'many_events') {
    for (let i = 1; i <= input.count; i++) await event('log', { message: `event ${i}` });
    await event('run.completed', { output: { written: input.count } });
  } else if (input.mode === 'big_events') {
    await new Promise((resolve) => setTimeout(resolve, input.delay_ms ?? 0));
    const blob = 'z'.repeat(input.size ?? 512 * 1024);
    for (let i = 1; i <= input.count; i++) await event('log', { message: `big ${i}`, blob });
    await event('run.completed', { output: { written: input.count } });
  } else if (input.mode === 'big_result') {
    await event('run.completed', { output: { blob: 'y'.repeat(1100 * 1024) } });
  } else if (input.mode === 'nul') {
    await event('log', {
      message: 'a\u0000b',
      'k\u0000': ['\u0000'],
      literal: '\\u0000',
      half: '\ud800x\udc00',
      pair: '\ud83d\ude00',
    });
    await write('raw\u0000line');
    process.stderr.write('err\u0000line\n');
    await event('run.completed', { output: { text: 'c\u0000d', half: '\udfff' } });
  } else if (input.mode === 'deep') {
    // Written as text: JSON.stringify itself would overflow the stack this deep.
    const tree = `${'['.repeat(input.depth)}${']'.repeat(input.depth)}`;
    await write(`{"type":"step","data":{"tree":${tree}}}`);
    await event('after', { ok: true });
    await write(`{"type":"run.completed","data":{"output":{"tree":${tree}}}}`);
  } else if (input.mode === 'refused') {
    await event('refused.by.the.database', { n: 1 });
    await event('run.completed', { output: { ok: true } });
  } else if (input.mode === 'bad_output') {
    await event('run.completed', { output: 'a string' });
  }
});

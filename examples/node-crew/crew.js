// A two-step "research crew" without any library: it reads the run request on standard input
// and writes one JSON event a line on standard output (crewd's runner protocol).
import { readFileSync } from 'node:fs';

const emit = (type, data) => process.stdout.write(`${JSON.stringify({ type, data })}\n`);

const request = JSON.parse(readFileSync(0, 'utf8'));
const topic = String(request.input?.topic ?? 'self-hosting');
const tone = process.env.CREW_TONE ?? 'plain';

emit('task.started', { task: 'research', agent: 'researcher' });
const findings = [`${topic} needs a server`, `${topic} keeps data at home`];
emit('agent.action', { agent: 'researcher', action: 'summarise', count: findings.length });
emit('task.completed', { task: 'research', agent: 'researcher', output: findings });

emit('task.started', { task: 'write', agent: 'writer' });
const report = `${tone === 'excited' ? 'Great news! ' : ''}${findings.join('; ')}.`;
emit('task.completed', { task: 'write', agent: 'writer', output: report });

emit('run.completed', { output: { topic, report, findings } });

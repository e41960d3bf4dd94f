import { afterAll } from 'vitest';
import { stopServersLeftRunning } from './server-process.js';

// Registered before each file's own hooks, so it runs after them: only what the file left running is stopped.
afterAll(stopServersLeftRunning);

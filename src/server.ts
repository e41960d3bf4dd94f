// The service's entry point (`npm start`; `crewd serve` starts the same): see src/service/serve.ts.
import { serveOrExit } from './service/serve.js';

serveOrExit();

// The production entry. undici's HTTP parser is compiled before the app's modules load, so that
// V8's compile memory never comes on top of theirs (docs/performance.md#memory).
import { compileHttpParser } from './process/memory.js';

await compileHttpParser();
await import('./process/serve.js');

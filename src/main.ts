// The production entry. Nothing may run before the app's modules load: on Node 20 to 24, a stream
// read before them (such as a loopback request to compile undici's parser) slows every
// process.nextTick for the life of the process (docs/performance.md#what-was-tried).
import './process/serve.js';

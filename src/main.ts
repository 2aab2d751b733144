// The production entry. Nothing may run before the app's modules load: on Node 20 to 24, a stream
// read before them (undici's parser compiled by a loopback request was one) leaves every
// process.nextTick about ten times slower for the life of the process, about 20 µs of CPU a
// request (docs/performance.md#what-was-tried).
import './process/serve.js';

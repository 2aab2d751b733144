// Belt and braces: no log line is built from headers, but if one ever is, these never show.
// Exact paths only: wildcard paths make redaction walk every logged object on every request.
export const REDACT = [
  'authorization',
  'cookie',
  'token',
  'apiKey',
  'headers.authorization',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
];

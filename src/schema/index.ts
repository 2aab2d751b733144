// Importing a domain file registers its types and root fields on the builder.
import { builder } from './builder.js';
import './root.js';
import './repositories.js';
import './repository-connection.js';
import './domains.js';
import './dns-check.js';
import './dev-servers.js';

/** The contract plus `_service { sdl }`, which alone carries the federation directives. */
export const schema = builder.toSubGraphSchema({
  // v2.9: the first with @cost and @listSize, the newest Hive accepts (docs/federation.md).
  linkUrl: 'https://specs.apollo.dev/federation/v2.9',
  federationDirectives: ['@key', '@shareable', '@cost', '@listSize'],
});

// Importing a domain file registers its types and root fields on the builder.
import { builder } from './builder.js';
import './root.js';
import './repositories.js';
import './repository-connection.js';
import './domains.js';
import './dns-check.js';
import './dev-servers.js';

/**
 * What the facade serves: the contract plus Apollo Federation 2's `_service { sdl }`, so a gateway
 * can compose it as a subgraph. `_service.sdl` carries the `@key`s; introspection does not.
 */
export const schema = builder.toSubGraphSchema({
  // The newest version that @apollo/composition (held at 2.14, docs/federation.md) composes.
  linkUrl: 'https://specs.apollo.dev/federation/v2.14',
  federationDirectives: ['@key', '@shareable'],
});

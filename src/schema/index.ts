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
  // v2.9: the first version with the IBM cost directives (@cost, @listSize) that routers' demand
  // control reads, and the newest that @theguild/federation-composition (Hive's registry and
  // gateway) accepts; Apollo's and Cosmo's composers take it too. A newer version buys nothing the
  // subgraph uses and locks out Hive (test/app/composition.test.ts composes with all three).
  linkUrl: 'https://specs.apollo.dev/federation/v2.9',
  federationDirectives: ['@key', '@shareable', '@cost', '@listSize'],
});

// Importing a domain file registers its types and root fields on the builder.
import { builder } from './builder.js';
import './root.js';
import './repositories.js';
import './domains.js';
import './dns-check.js';
import './dev-servers.js';

export const schema = builder.toSchema();

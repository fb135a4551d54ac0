// The page imports `./field-rules.js`, which the service serves from the field domain
// (plugin.ts SHARED_MODULES): this gives the page's typecheck that file's types.
export * from '../domain/field/field-rules.js';

/** Where GraphQL is served: queries, mutations and graphql-ws upgrades; and its SSE subscriptions. */
export const GRAPHQL_ENDPOINT = '/graphql';
/** graphql-sse clients in single connection mode (distinct connections use GRAPHQL_ENDPOINT). */
export const GRAPHQL_SSE_ENDPOINT = '/graphql/stream';

/** The agent memory API from TypeScript: `new MemoryClient(url, { token })`, then `client.routes.<route>()`. */

export { MemoryApiError, MemoryClientError, MemoryConnectionError, retryableStatus } from './base.js';
export { MemoryClient, errorFromResponse, type MemoryClientOptions } from './client.js';
export * from './gen/errors.js';
export { API_PREFIX, READ_ONLY_TOOLS, ROUTES, Routes, type CallOptions, type Export, type RouteInfo, type RouteName } from './gen/routes.js';
export type * as Schemas from './gen/schemas.js';

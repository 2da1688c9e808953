/**
 * The Anthropic TypeScript SDK's memory tool over this service:
 *
 *   import Anthropic from '@anthropic-ai/sdk';
 *   import { MemoryClient } from '@agent-memory/client';
 *   import { memoryTool } from '@agent-memory/client/anthropic';
 *
 *   const memory = memoryTool(new MemoryClient(url, { token }), execution.public_id);
 *   const runner = new Anthropic().beta.messages.toolRunner({ model, max_tokens, tools: [memory], messages });
 *
 * `memoryToolHandlers` gives the six handlers alone, for `betaMemoryTool` or a loop of your own.
 */

import { betaMemoryTool, type MemoryToolHandlers } from '@anthropic-ai/sdk/helpers/beta/memory';

import type { MemoryClient } from './client.js';
import { MemoryCommands } from './memory-commands.js';

export { MemoryCommands, MemoryToolError } from './memory-commands.js';

/** The six command handlers the SDK's `betaMemoryTool` takes, each run against one execution's files. */
export function memoryToolHandlers(client: MemoryClient, executionPublicId: string): MemoryToolHandlers {
  const commands = new MemoryCommands(client, executionPublicId);
  return {
    view: (c) => commands.view(c.path, c.view_range),
    create: (c) => commands.create(c.path, c.file_text),
    str_replace: (c) => commands.strReplace(c.path, c.old_str, c.new_str),
    insert: (c) => commands.insert(c.path, c.insert_line, c.insert_text),
    delete: (c) => commands.delete(c.path),
    rename: (c) => commands.rename(c.old_path, c.new_path),
  };
}

/** The SDK's runnable memory tool (`memory_20250818`), for `toolRunner`'s `tools`. */
export function memoryTool(client: MemoryClient, executionPublicId: string, extraProps?: Parameters<typeof betaMemoryTool>[1]) {
  return betaMemoryTool(memoryToolHandlers(client, executionPublicId), extraProps);
}

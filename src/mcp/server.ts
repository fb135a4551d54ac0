/**
 * One MCP server (the SDK's low-level `Server`) answering tools/list and tools/call for one
 * authenticated request context. Built per HTTP request (the transport is stateless), so a tool
 * runs with exactly that request's key and team, as a REST handler does.
 *
 * The low-level server rather than `McpServer`: arguments are checked here with the tool's own
 * schema so that a bad argument is the API's `Request.Invalid` with every issue listed, as on
 * REST and GraphQL, and every failure is an `isError` result carrying the API's error
 * `{ name, description, context }`.
 */

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, type CallToolResult, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { parseInput } from '../domain/validation.ts';
import { answerableError } from '../shared/errors.ts';
import { normalizeError } from '../shared/normalize-error.ts';
import { MCP_TOOLS, type McpTool } from './tools.ts';

export const MCP_SERVER_INFO = { name: 'envelope-service', version: '1.0.0' };

const INSTRUCTIONS =
  'Tools of an e-signature envelope service, acting as one team (the API key’s). A typical flow: list_templates → ' +
  'create_envelope_from_template (dryRun first to check) → send_envelope → get_envelope or list_envelopes to follow progress → ' +
  'download_links once finalized. A failed call answers isError with the API’s error: `name` (Resource.Reason, stable), `description` and `context`.';

/** Tools as listed to clients: their arguments as JSON Schema (the input shape a call is checked against). */
function listed(tool: McpTool): Tool {
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: inputSchema as Tool['inputSchema'],
    annotations: { title: tool.title, ...tool.annotations },
  };
}

const LISTED_TOOLS = MCP_TOOLS.map(listed);
const TOOLS_BY_NAME = new Map(MCP_TOOLS.map((tool) => [tool.name, tool]));

/** A tool's answer as MCP content: the data as JSON text, and the same as structured content. */
function answered(data: Record<string, unknown>): CallToolResult {
  // Through JSON once: dates become the ISO strings REST shows.
  const structured = JSON.parse(JSON.stringify(data)) as Record<string, unknown>;
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

/** The API's error, as REST's body names it, in an isError result. */
function failed(error: unknown, context: RequestContext): CallToolResult {
  const shown = answerableError(normalizeError(error, context.log), { requestId: context.metadata.requestId });
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: shown }) }], structuredContent: { error: shown } };
}

/** Runs one tool call as the request's caller: arguments checked, the domain called, any failure answered by name. */
export async function callTool(context: RequestContext, name: string, args: unknown): Promise<CallToolResult> {
  const tool = TOOLS_BY_NAME.get(name);
  // Not a failure of the API: the client asked for something this server never listed.
  if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
  const given = (args ?? {}) as Record<string, unknown>;
  try {
    parseInput(tool.input, given);
    // The arguments as given (the operation's body unchanged: the domain parses it itself), once they are known to be well formed.
    return answered(await tool.run(context, given));
  } catch (error) {
    return failed(error, context);
  }
}

/** The MCP server of one request. */
export function createMcpServer(context: RequestContext): Server {
  const server = new Server(MCP_SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: LISTED_TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, (request) => callTool(context, request.params.name, request.params.arguments));
  return server;
}

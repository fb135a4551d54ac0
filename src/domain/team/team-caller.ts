/**
 * Who calls through an API key: the team it belongs to (the tenant every read and write is
 * filtered by), its workspace, and the key itself (the actor the audit trail names). A leaf:
 * it imports nothing, so the service context, the key cache and every service can name it.
 */
export type TeamCaller = {
  teamId: string;
  workspaceId: string;
  apiKeyId: string;
};

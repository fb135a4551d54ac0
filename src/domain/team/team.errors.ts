import { DomainError } from '../../shared/errors.ts';

/** `Team.NotFound`: the team id does not exist (CLI, and references to teams in teamScope). */
export class TeamNotFoundError extends DomainError {
  constructor(teamId: string) {
    super('Team.NotFound', 'No team has this id.', { teamId });
  }
}

/** `Workspace.NotFound`: the workspace id does not exist. */
export class WorkspaceNotFoundError extends DomainError {
  constructor(workspaceId: string) {
    super('Workspace.NotFound', 'No workspace has this id.', { workspaceId });
  }
}

/** `ApiKey.NotFound`: the key id does not exist. */
export class ApiKeyNotFoundError extends DomainError {
  constructor(keyId: string) {
    super('ApiKey.NotFound', 'No API key has this id.', { keyId });
  }
}

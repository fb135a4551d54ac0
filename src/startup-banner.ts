/**
 * What a person starting the service reads. The first start on an empty database shows the default
 * team's key (the only time it is ever shown), where to click and a command to try; later starts
 * show where to click. Logs are JSON lines on stdout, so later starts print this only to a terminal
 * (the `listening` log line carries the same addresses for machines).
 */
export function startupBanner({ publicUrl, defaultTeam }: { publicUrl: string; defaultTeam?: { apiKey: string; teamId: string; workspaceId: string } }): string {
  const addresses = [`  GraphiQL:       ${publicUrl}/graphql`, `  API reference:  ${publicUrl}/api/v1/key/docs`];
  if (!defaultTeam) return ['', 'Envelope service is running.', ...addresses, ''].join('\n');
  return [
    '',
    'Envelope service is running. Created the default team; its API key (shown only now, keep it safe):',
    '',
    `    ${defaultTeam.apiKey}`,
    '',
    ...addresses,
    `  Try it:         curl -H "X-Service-Api-Key: ${defaultTeam.apiKey}" ${publicUrl}/api/v1/key/me`,
    '',
    `  teamId=${defaultTeam.teamId} workspaceId=${defaultTeam.workspaceId}`,
    `  More keys: npm run cli -- key create --team ${defaultTeam.teamId}`,
    '',
  ].join('\n');
}

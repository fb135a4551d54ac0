import { describe, expect, it } from 'vitest';
import { startupBanner } from '../src/startup-banner.ts';

describe('the start-up banner', () => {
  const team = { apiKey: 'esk_example', teamId: 'team-1', workspaceId: 'workspace-1' };

  it('on the first start shows the key, where to click and a command to try', () => {
    const banner = startupBanner({ publicUrl: 'http://localhost:4000', defaultTeam: team });
    expect(banner).toContain('    esk_example');
    expect(banner).toContain('GraphiQL:       http://localhost:4000/graphql');
    expect(banner).toContain('API reference:  http://localhost:4000/api/v1/key/docs');
    expect(banner).toContain('curl -H "X-Service-Api-Key: esk_example" http://localhost:4000/api/v1/key/me');
    expect(banner).toContain('npm run cli -- key create --team team-1');
  });

  it('on later starts shows the addresses and never a key', () => {
    const banner = startupBanner({ publicUrl: 'https://sign.example.com' });
    expect(banner).toContain('GraphiQL:       https://sign.example.com/graphql');
    expect(banner).toContain('API reference:  https://sign.example.com/api/v1/key/docs');
    expect(banner).not.toContain('esk_');
  });
});

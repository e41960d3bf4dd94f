import type { Command } from 'commander';
import { CliError } from './api.js';
import type { Io } from './output.js';

export function adminKeyCommand(program: Command, env: NodeJS.ProcessEnv, io: Io) {
  program
    .command('admin-key')
    .description("Create a new admin API key in the service's own database (run it where the service runs)")
    .option('--organization <name|id>', 'the organization', 'default')
    .option('--name <name>', "the key's name", `admin-${new Date().toISOString().slice(0, 10)}`)
    .action(async (options: { organization: string; name: string }) => {
      // Loaded only by this command: the database's modules would slow every other command's start.
      const [{ openServiceDatabase }, { createAdminKey, OrganizationNotFound }] = await Promise.all([
        import('./service-database.js'),
        import('../access/admin-key.js'),
      ]);
      const { database, close } = await openServiceDatabase(env);
      try {
        const { orgId, key } = await createAdminKey(database.db, options.organization, options.name);
        io.err(`A new admin key "${options.name}" for organization ${orgId} (shown only now):`);
        io.out(key);
      } catch (error) {
        if (error instanceof OrganizationNotFound) throw new CliError(error.message, 2);
        throw error;
      } finally {
        await close();
      }
    });
}

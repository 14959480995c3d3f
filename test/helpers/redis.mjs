// A real Redis for the queue tests: Debian's redis-server, on 127.0.0.1 at a free port,
// in a private folder, stopped at the end.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REDIS_SERVER = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';

export function haveRedis() {
  return spawnSync(REDIS_SERVER, ['--version'], { encoding: 'utf8' }).status === 0;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, child) {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    const ok = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts redis-server; `persist`: append-only file, fsync'd at every write, so a restart keeps the queue. */
export async function startRedis({ persist = false, port, dir } = {}) {
  const where = dir ?? mkdtempSync(join(tmpdir(), 'vmaf-redis-'));
  const at = port ?? (await freePort());
  const args = ['--port', String(at), '--bind', '127.0.0.1', '--dir', where, '--save', ''];
  args.push(...(persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
  const child = spawn(REDIS_SERVER, args, { stdio: 'ignore' });
  await waitForPort(at, child);
  return {
    port: at,
    dir: where,
    url: `redis://127.0.0.1:${at}`,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM'); // redis-server saves nothing more (--save ''), flushes its AOF, exits
      await exited;
    },
  };
}

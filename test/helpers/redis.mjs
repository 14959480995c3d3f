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

/** The process id of the Redis answering at `port` (its INFO), or undefined where none answers yet. */
function redisPid(port) {
  return new Promise((resolve) => {
    let text = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write('INFO server\r\n'));
    socket.setEncoding('utf8');
    socket.on('data', (d) => {
      text += d;
      const m = /process_id:(\d+)/.exec(text);
      if (m) {
        socket.destroy();
        resolve(Number(m[1]));
      }
    });
    socket.once('error', () => resolve(undefined));
    socket.once('close', () => resolve(undefined));
  });
}

/**
 * Whether `child` came up at `port`: false where it exited first (the port was taken meanwhile,
 * by another test file's server when files run in parallel) or another server answers there.
 */
async function cameUp(port, child) {
  for (;;) {
    if (child.exitCode !== null) return false;
    const pid = await redisPid(port);
    if (pid !== undefined) return pid === child.pid;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts redis-server; `persist`: append-only file, fsync'd at every write, so a restart keeps the queue. */
export async function startRedis({ persist = false, port, dir } = {}) {
  const where = dir ?? mkdtempSync(join(tmpdir(), 'vmaf-redis-'));
  let at;
  let child;
  // A free port may be taken before the server binds it: another port then (a given port: no retry).
  for (let attempt = 1; ; attempt++) {
    at = port ?? (await freePort());
    const args = ['--port', String(at), '--bind', '127.0.0.1', '--dir', where, '--save', ''];
    args.push(...(persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
    child = spawn(REDIS_SERVER, args, { stdio: 'ignore' });
    if (await cameUp(at, child)) break;
    child.kill('SIGKILL');
    if (port !== undefined || attempt === 5) throw new Error(`redis-server did not come up on port ${at} (exit ${child.exitCode})`);
  }
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

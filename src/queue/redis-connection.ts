/**
 * A queue's address: a Redis URL in ioredis's forms (`redis://[:password@]host:port[/db]`,
 * `rediss://` for TLS, `redis://user:password@host`). BullMQ needs
 * maxRetriesPerRequest: null on its connections so blocking commands wait out a Redis restart
 * instead of failing; each user of the queue gets its own connection.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { UsageError } from '../errors.js';

export function checkQueueUrl(url: string): string {
  if (!/^rediss?:\/\//i.test(url)) throw new UsageError(`--queue: expected a Redis URL (redis://HOST:PORT or rediss://...), got "${url}"`);
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--queue: not a valid URL: "${url}"`);
  }
  return url;
}

export function connectRedis(url: string, options: RedisOptions = {}): Redis {
  const redis = new Redis(checkQueueUrl(url), { maxRetriesPerRequest: null, ...options });
  // Connection errors are retried by ioredis; callers watch for the outage themselves.
  redis.on('error', () => undefined);
  return redis;
}

/** The URL with any password hidden, for messages. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

// A tiny HTTP server around a real Node.js rate limiter, started by package
// limtest (limtest.Express, limtest.Flexible) for the test suite. It reads
// its whole configuration from the JSON in the LIMTEST_CONFIG environment
// variable, listens on 127.0.0.1 at the given port (0: one the kernel picks)
// and prints "LISTENING <port>" on stdout once it accepts connections.
//
// Every route answers 200 "ok\n" unless the limiter refuses the request.
'use strict';

const http = require('node:http');

const cfg = JSON.parse(process.env.LIMTEST_CONFIG || '{}');

function fail(err) {
  process.stderr.write(`limtest server: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
}
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
// the Go harness ends the process with SIGTERM
process.on('SIGTERM', () => process.exit(0));

// redisClient connects the client the configuration names ("ioredis", the
// default, or "redis" for node-redis) to cfg.redisUrl.
async function redisClient() {
  if (cfg.redisClient === 'redis') {
    const { createClient } = require('redis');
    const client = createClient({ url: cfg.redisUrl });
    client.on('error', (err) => process.stderr.write(`redis: ${err}\n`));
    await client.connect();
    return { kind: 'redis', client };
  }
  const Redis = require('ioredis');
  const opts = { lazyConnect: true, maxRetriesPerRequest: 1 };
  if (cfg.redisCommandTimeoutMs > 0) opts.commandTimeout = cfg.redisCommandTimeoutMs;
  const client = new Redis(cfg.redisUrl, opts);
  client.on('error', (err) => process.stderr.write(`ioredis: ${err}\n`));
  await client.connect();
  return { kind: 'ioredis', client };
}

// clientKey is the request's identity: the configured header when the
// request carries it, else the peer address.
function clientKey(req, fallback) {
  if (cfg.keyHeader) {
    const v = req.headers[cfg.keyHeader.toLowerCase()];
    if (typeof v === 'string' && v !== '') return v;
  }
  return fallback;
}

async function express() {
  const expressLib = require('express');
  const { rateLimit, ipKeyGenerator } = require('express-rate-limit');
  const options = {
    windowMs: cfg.windowMs,
    limit: cfg.limit,
    legacyHeaders: !!cfg.legacyHeaders,
    // false, true (draft-6), 'draft-6', 'draft-7' or 'draft-8'
    standardHeaders: cfg.standardHeaders === 'true' ? true : (cfg.standardHeaders || false),
    keyGenerator: (req) => clientKey(req, ipKeyGenerator(req.ip)),
  };
  if (cfg.statusCode) options.statusCode = cfg.statusCode;
  if (cfg.passOnStoreError) options.passOnStoreError = true;
  if (cfg.redisUrl) {
    const { RedisStore } = require('rate-limit-redis');
    const { kind, client } = await redisClient();
    const sendCommand = kind === 'redis'
      ? (...args) => client.sendCommand(args)
      : (command, ...args) => client.call(command, ...args);
    options.store = new RedisStore({ sendCommand, prefix: cfg.prefix || 'rl:' });
  }
  const app = expressLib();
  app.use(rateLimit(options));
  app.use((req, res) => res.type('text/plain').send('ok\n'));
  return http.createServer(app);
}

// slowdown is express-slow-down: express-rate-limit's counting (a fixed
// window from a key's first hit, MemoryStore) with every request over
// delayAfter held (used - delayAfter) x stepMs, at most maxDelayMs.
async function slowdown() {
  const expressLib = require('express');
  const esd = require('express-slow-down');
  const slowDown = esd.slowDown || esd.default || esd;
  const { ipKeyGenerator } = require('express-rate-limit');
  const options = {
    windowMs: cfg.windowMs,
    delayAfter: cfg.limit,
    // the documented form of a delay growing by step per request
    delayMs: (used, req) => (used - req.slowDown.limit) * cfg.stepMs,
    keyGenerator: (req) => clientKey(req, ipKeyGenerator(req.ip)),
  };
  if (cfg.maxDelayMs > 0) options.maxDelayMs = cfg.maxDelayMs;
  const app = expressLib();
  app.use(slowDown(options));
  app.use((req, res) => res.type('text/plain').send('ok\n'));
  return http.createServer(app);
}

async function flexible() {
  const flex = require('rate-limiter-flexible');
  const opts = {
    points: cfg.points,
    duration: cfg.durationSec,
    keyPrefix: cfg.prefix || 'rlflx',
  };
  if (cfg.blockDurationSec > 0) opts.blockDuration = cfg.blockDurationSec;
  let limiter;
  if (cfg.redisUrl) {
    const { kind, client } = await redisClient();
    opts.storeClient = client;
    if (kind === 'redis') opts.useRedisPackage = true;
    limiter = new flex.RateLimiterRedis(opts);
  } else {
    limiter = new flex.RateLimiterMemory(opts);
  }
  // The headers are those of the library's README ("You may want to set
  // HTTP headers for the response"): X-RateLimit-* on every answer and, on
  // a refusal, Retry-After as msBeforeNext / 1000, a fraction of seconds
  // unless integerRetryAfter asks for Math.ceil.
  const limitHeaders = (res) => ({
    'X-RateLimit-Limit': String(cfg.points),
    'X-RateLimit-Remaining': String(res.remainingPoints),
    'X-RateLimit-Reset': String(Math.ceil((Date.now() + res.msBeforeNext) / 1000)),
  });
  return http.createServer((req, res) => {
    const key = clientKey(req, req.socket.remoteAddress);
    limiter.consume(key)
      .then((rl) => {
        res.writeHead(200, { 'Content-Type': 'text/plain', ...limitHeaders(rl) });
        res.end('ok\n');
      })
      .catch((rl) => {
        if (!(rl instanceof flex.RateLimiterRes)) {
          // a store error, not a refusal
          process.stderr.write(`store error: ${rl}\n`);
          if (cfg.failOpen) {
            res.writeHead(200, { 'Content-Type': 'text/plain' });
            res.end('ok\n');
            return;
          }
          res.writeHead(500, { 'Content-Type': 'text/plain' });
          res.end('store error\n');
          return;
        }
        const retryAfter = cfg.integerRetryAfter
          ? Math.ceil(rl.msBeforeNext / 1000)
          : rl.msBeforeNext / 1000;
        res.writeHead(cfg.statusCode || 429, {
          'Content-Type': 'text/plain',
          'Retry-After': String(retryAfter),
          ...limitHeaders(rl),
        });
        res.end('Too Many Requests\n');
      });
  });
}

async function main() {
  let server;
  switch (cfg.kind) {
    case 'express': server = await express(); break;
    case 'flexible': server = await flexible(); break;
    case 'slowdown': server = await slowdown(); break;
    default: throw new Error(`unknown kind ${JSON.stringify(cfg.kind)}`);
  }
  server.keepAliveTimeout = 30000;
  server.listen(cfg.port || 0, '127.0.0.1', () => {
    process.stdout.write(`LISTENING ${server.address().port}\n`);
  });
}

main().catch(fail);

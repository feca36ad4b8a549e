// difysandbox: Node.js's way out of a run with network. The run's network namespace holds only lo and the
// egress proxy (src/egress/relay.c) at the address of HTTP_PROXY / HTTPS_PROXY. Node itself ignores
// those variables, so this file makes the usual clients use them:
//   - http.request/get:  through http.globalAgent, which sends the request in absolute form to the proxy;
//   - https.request/get: through https.globalAgent, which opens a CONNECT tunnel and runs TLS over it;
//   - fetch():           a small implementation over the two above (method, headers, body as string,
//                        Buffer, typed array, ArrayBuffer, URLSearchParams, Blob or FormData, redirects,
//                        AbortSignal; the body is buffered, not streamed), returning a global Response.
// NO_PROXY (or no_proxy) names hosts reached directly: "host", ".domain" or "domain" (the name and every
// name below it), "*" for all. A client that passes its own `agent` or `dispatcher` is left alone. Without
// HTTP_PROXY and HTTPS_PROXY this file changes nothing. No dependencies: Node's own modules only.
//
// The run's bootstrap (NODEJS_PROXY_HOOK in src/runtime/nodejs.c) loads this file only when the code first
// reaches http, https or fetch: loading it at every start cost 1-1.5 ms of a 24 ms node run, and most code
// never uses the network. It calls the function exported here once, with Node's own fetch, and gets
//   - patch(request, exports): patches http or https the first time it is handed out (by require(),
//     process.getBuiltinModule(), or import() after the bootstrap's require) and returns how many modules
//     are left to patch, so that the bootstrap's hooks step aside at 0;
//   - fetch: what the global fetch() calls.
// Loading http, https (with tls) and zlib costs about 13 ms of CPU, a fifth of a bare node's start: each
// is loaded when the code first asks for it, not here.
'use strict';

module.exports = (originalFetch) => {
  const env = process.env;
  const httpProxy = env.HTTP_PROXY || env.http_proxy || '';
  const httpsProxy = env.HTTPS_PROXY || env.https_proxy || '';
  if (!httpProxy && !httpsProxy) {
    return { patch: () => 0, fetch: originalFetch };
  }

  const net = require('net'); // the bootstrap loads it anyway, for the stdout and stderr streams

  const HEAD_MAX = 16384;
  const REDIRECTS_MAX = 20;

  function parseProxy(text) {
    if (!text) {
      return null;
    }
    try {
      const u = new URL(text.includes('://') ? text : `http://${text}`);
      if (u.protocol !== 'http:') {
        return null; // only HTTP proxies are spoken here; the egress proxy is one
      }
      const user = decodeURIComponent(u.username);
      const password = decodeURIComponent(u.password);
      return {
        host: u.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: Number(u.port) || 80,
        auth: user || password ? `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` : null,
      };
    } catch {
      return null;
    }
  }

  const noProxy = (env.NO_PROXY || env.no_proxy || '')
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((e) => e.toLowerCase().replace(/^\*?\./, ''));

  function bypass(host) {
    const h = String(host || '').toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
    return noProxy.some((e) => e === '*' || h === e || h.endsWith(`.${e}`));
  }

  function authority(host, port) {
    const h = String(host).replace(/^\[(.*)\]$/, '$1');
    return `${net.isIPv6(h) ? `[${h}]` : h}:${port}`;
  }

  // http: the request goes to the proxy with its absolute URL ("GET http://host:port/path HTTP/1.1").
  function proxyHttp(http) {
    class ProxyHttpAgent extends http.Agent {
      constructor(proxy) {
        super({ keepAlive: false });
        this.proxy = proxy;
      }

      addRequest(req, options) {
        const host = options.host || options.hostname || 'localhost';
        const port = Number(options.port) || 80;
        if (bypass(host) || /^[a-z]+:\/\//i.test(req.path)) {
          // A client that already speaks to a proxy (absolute path) is left as it is.
          return super.addRequest(req, options);
        }
        const hostPart = authority(host, port).replace(/:80$/, '');
        req.path = `http://${hostPart}${req.path}`;
        if (req._header) {
          // The head is already rendered (an Expect header, or headers given as an array): fix its first line.
          req._header = req._header.replace(/^(\S+) \S+ /, (_, method) => `${method} ${req.path} `);
        } else if (this.proxy.auth && !req.getHeader('proxy-authorization')) {
          req.setHeader('Proxy-Authorization', this.proxy.auth);
        }
        return super.addRequest(req, { ...options, host: this.proxy.host, hostname: this.proxy.host,
                                       port: this.proxy.port, path: null });
      }
    }

    agents['http:'] = new ProxyHttpAgent(proxies['http:']);
    http.globalAgent = agents['http:'];
  }

  // Reads the proxy's answer to CONNECT: calls done(null, statusLine) on 2xx, else done(error) with the
  // status line and the proxy's text (the egress proxy says why it refused).
  function readConnectAnswer(socket, target, done) {
    let buffer = Buffer.alloc(0);
    let head = null;
    let finished = false;

    function finish(err, line) {
      if (finished) {
        return;
      }
      finished = true;
      socket.removeListener('readable', onReadable);
      socket.removeListener('end', onEnd);
      socket.removeListener('error', onError);
      done(err, line);
    }
    function refuse() {
      const body = buffer.subarray(head.end).toString('utf8').trim();
      const err = new Error(`proxy refused CONNECT ${target}: ${head.line}${body ? `: ${body}` : ''}`);
      err.code = 'ERR_PROXY_CONNECT';
      err.statusCode = head.status;
      socket.destroy();
      finish(err);
    }
    function onReadable() {
      let chunk;
      while ((chunk = socket.read()) !== null) {
        buffer = Buffer.concat([buffer, chunk]);
      }
      if (!head) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) {
          if (buffer.length > HEAD_MAX) {
            socket.destroy();
            finish(new Error(`proxy sent an oversized answer to CONNECT ${target}`));
          }
          return;
        }
        const text = buffer.subarray(0, end).toString('latin1');
        const line = text.split('\r\n')[0];
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(text);
        head = { line, status: Number(line.split(' ')[1]), end: end + 4, length: length ? Number(length[1]) : -1 };
        if (head.status >= 200 && head.status < 300) {
          finish(null, line);
          return;
        }
      }
      if (head.length >= 0 && buffer.length - head.end >= head.length) {
        refuse();
      }
    }
    function onEnd() {
      if (head) {
        refuse();
      } else {
        finish(new Error(`proxy closed the connection before answering CONNECT ${target}`));
      }
    }
    function onError(err) {
      finish(err);
    }
    socket.on('readable', onReadable);
    socket.on('end', onEnd);
    socket.on('error', onError);
  }

  // https: a CONNECT tunnel through the proxy, then TLS over it, verified against the destination.
  function proxyHttps(https) {
    const tls = require('tls');
    class ProxyHttpsAgent extends https.Agent {
      constructor(proxy) {
        super({ keepAlive: false });
        this.proxy = proxy;
      }

      createConnection(options, callback) {
        const host = options.host || options.hostname || 'localhost';
        const port = Number(options.port) || 443;
        if (bypass(host)) {
          return super.createConnection(options, callback);
        }
        const target = authority(host, port);
        const socket = net.connect({ host: this.proxy.host, port: this.proxy.port });
        readConnectAnswer(socket, target, (err) => {
          if (err) {
            callback(err);
            return;
          }
          const { host: _h, port: _p, path: _q, ...rest } = options;
          const servername = options.servername || (net.isIP(host) ? undefined : host);
          callback(null, tls.connect({ ...rest, socket, servername, host }));
        });
        const auth = this.proxy.auth ? `Proxy-Authorization: ${this.proxy.auth}\r\n` : '';
        socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth}\r\n`);
        return undefined; // the callback gets the socket once the tunnel is up
      }
    }

    agents['https:'] = new ProxyHttpsAgent(proxies['https:']);
    https.globalAgent = agents['https:'];
  }

  const proxies = { 'http:': parseProxy(httpProxy), 'https:': parseProxy(httpsProxy) };
  const agents = {};
  const patches = new Map();
  if (proxies['http:']) {
    patches.set('http', proxyHttp);
  }
  if (proxies['https:']) {
    patches.set('https', proxyHttps);
  }

  // Patches a module the first time it is handed out; deleted first, so that a patch's own require()
  // does not patch again. Returns how many are left to patch.
  function patch(request, exports) {
    const name = typeof request === 'string' && request.startsWith('node:') ? request.slice(5) : request;
    const patchOf = patches.get(name);
    if (patchOf) {
      patches.delete(name);
      patchOf(exports);
    }
    return patches.size;
  }

  // The proxying agent for a URL's protocol, loading (so patching) its module first; null without one.
  function agentFor(protocol) {
    if (!proxies[protocol]) {
      return null;
    }
    require(protocol === 'https:' ? 'https' : 'http');
    return agents[protocol];
  }

  // Reading fetch is free; reading Response (or Headers, Request) loads Node's fetch implementation, about
  // 75 ms of CPU at every start: the globals are touched only when fetch() is called. Node has them all
  // whenever it has fetch (--no-experimental-fetch removes them together).
  if (typeof originalFetch !== 'function') {
    return { patch, fetch: originalFetch };
  }

  const NULL_BODY = new Set([101, 204, 205, 304]);
  const REDIRECT = new Set([301, 302, 303, 307, 308]);

  function decode(buffer, encoding) {
    const zlib = require('zlib');
    switch ((encoding || '').trim().toLowerCase()) {
      case 'gzip':
      case 'x-gzip':
        return zlib.gunzipSync(buffer);
      case 'deflate':
        return zlib.inflateSync(buffer);
      case 'br':
        return zlib.brotliDecompressSync(buffer);
      default:
        return buffer;
    }
  }

  // One request, whole body buffered: { status, statusText, headers: [[name, value]...], body }.
  function send(url, method, headers, body, signal) {
    return new Promise((resolve, reject) => {
      const agent = agentFor(url.protocol);
      const mod = require(url.protocol === 'https:' ? 'https' : 'http');
      const req = mod.request(url, { method, headers, agent }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const pairs = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2) {
            pairs.push([res.rawHeaders[i], res.rawHeaders[i + 1]]);
          }
          resolve({ status: res.statusCode, statusText: res.statusMessage || '', headers: pairs,
                    body: Buffer.concat(chunks) });
        });
      });
      req.on('error', reject);
      if (signal) {
        if (signal.aborted) {
          req.destroy(signal.reason);
          return;
        }
        signal.addEventListener('abort', () => req.destroy(signal.reason), { once: true });
      }
      req.end(body);
    });
  }

  // fetch() through the proxy: what the WHATWG fetch does for the common cases, kept small.
  async function proxiedFetch(input, init = {}) {
    const request = input instanceof Request ? input : null;
    let url = new URL(request ? request.url : input instanceof URL ? input.href : String(input));
    if (!proxies[url.protocol] || bypass(url.hostname)) {
      return originalFetch(input, init);
    }

    let method = String(init.method || (request && request.method) || 'GET').toUpperCase();
    const headers = new Headers(init.headers || (request && request.headers) || undefined);
    const signal = init.signal || (request && request.signal) || undefined;
    const redirect = init.redirect || (request && request.redirect) || 'follow';
    let body;
    const bodyInit = init.body !== undefined ? init.body : request && request.body ? await request.arrayBuffer() : null;
    if (bodyInit !== null && bodyInit !== undefined) {
      // Response knows every BodyInit (string, URLSearchParams, FormData, Blob, buffers, streams).
      const carrier = new Response(bodyInit);
      const type = carrier.headers.get('content-type');
      if (type && !headers.has('content-type')) {
        headers.set('content-type', type);
      }
      body = Buffer.from(await carrier.arrayBuffer());
    }

    for (let redirects = 0; ; redirects++) {
      let answer;
      try {
        answer = await send(url, method, Object.fromEntries(headers), body, signal);
      } catch (err) {
        if (err && err.name === 'AbortError') {
          throw err;
        }
        throw new TypeError('fetch failed', { cause: err });
      }
      const location = answer.headers.find(([n]) => n.toLowerCase() === 'location');
      if (REDIRECT.has(answer.status) && location && redirect !== 'manual') {
        if (redirect === 'error' || redirects >= REDIRECTS_MAX) {
          throw new TypeError('fetch failed', { cause: new Error(`redirect to ${location[1]}`) });
        }
        url = new URL(location[1], url);
        if (answer.status === 303 || ((answer.status === 301 || answer.status === 302) && method === 'POST')) {
          method = method === 'HEAD' ? 'HEAD' : 'GET';
          body = undefined;
          headers.delete('content-type');
          headers.delete('content-length');
        }
        if (!proxies[url.protocol] || bypass(url.hostname)) {
          return originalFetch(url, { method, headers, body, signal, redirect });
        }
        continue;
      }
      const encoding = answer.headers.find(([n]) => n.toLowerCase() === 'content-encoding');
      const responseHeaders = new Headers();
      for (const [n, v] of answer.headers) {
        if (!encoding || !['content-encoding', 'content-length'].includes(n.toLowerCase())) {
          responseHeaders.append(n, v);
        }
      }
      const data = NULL_BODY.has(answer.status) || method === 'HEAD'
        ? null
        : decode(answer.body, encoding && encoding[1]);
      const response = new Response(data, { status: answer.status, statusText: answer.statusText,
                                            headers: responseHeaders });
      Object.defineProperty(response, 'url', { value: url.href });
      Object.defineProperty(response, 'redirected', { value: redirects > 0 });
      return response;
    }
  }

  return { patch, fetch: proxiedFetch };
};

/* nodejs: how a Node.js run starts and what it needs beyond the common syscall rows.
 * Measured on Node.js 20 (nodesource build on Debian 12): ../shared/reference/syscalls.md §3. */

#include <stddef.h>

#include "common/config.h"
#include "runtime.h"
#include "sandbox/seccomp-policy.h"

/* Every run's exit, once the code has ended normally: after every 'exit' listener (those of the code
 * too, whenever it added them), a run whose exit code is still 0 and that met no uncaught exception
 * leaves through process.reallyExit(), as process.exit() does, without tearing down Node's environment
 * and V8's heap (about 0.6 ms of a 24 ms node run, 2 %: docs/performance.md), as python's runs skip the
 * interpreter's teardown (src/runtime/python3.c). By then the event loop has run dry, so every write to
 * stdout and stderr has been made. Anything else keeps Node's own way out: an exit code a listener set,
 * an uncaught exception (its stack trace is printed after the 'exit' event; the monitor only notes it,
 * and changes nothing about its handling), an 'exit' the code emits itself (process._exiting is not set
 * then). */
#define NODEJS_FAST_EXIT                                                                  \
        "{let u=0;const E=process.emit;process.on('uncaughtExceptionMonitor',()=>{u=1});" \
        "process.emit=function emit(...a){const r=E.apply(this,a);"                       \
        "if(a[0]==='exit'&&this===process&&process._exiting&&!u&&!process.exitCode)"      \
        "process.reallyExit(0);return r}}"

/* The bootstrap reads the code from fd 3, which exists only once the enter library has installed the
 * final seccomp stage (src/enter/enter.c); eval() runs it with require() in scope, as upstream does.
 *
 * Before that it adds the dependency generation's node_modules/ to the lookup paths of the code's
 * require(), after the (absent) node_modules directories of /tmp and /: where NODE_PATH would put it, but
 * without a variable in process.env, which holds only what a run needs (tests/escape/nodejs/environ.js).
 * Packages found there resolve their own dependencies from their own location, as npm lays them out.
 * Without a generation the directory does not exist and nothing changes. A prepared run of the warm
 * pool then requires the modules of pool_preload.nodejs (runtime.h), which stay in require's cache.
 * Requiring net loads what the stdout and stderr streams of a pipe are made of while the run waits,
 * not after its code has come: 3.4 ms of a prepared run's `console.log(1)`, 13.5 ms in all before
 * (Node.js 20, on the host). It does not build the streams: that would make fds 1 and 2 non-blocking
 * before the code runs, and a code's fs.writeSync(1, ...) would then fail with EAGAIN on a full pipe
 * (tests/escape/nodejs/output_flood.js).
 *
 * Once the code has come, process.uptime() and the global performance's now() and timeOrigin count from
 * its arrival: Node's own count from the interpreter's start, which for a prepared run of the warm pool
 * would tell how long it waited, that is when another tenant was last served (docs/security.md). The
 * global performance is loaded only when the code asks for it (perf_hooks: 6 ms), and patched then. Its
 * names live in a function's scope, which the code's eval() does not see.
 *
 * With network, http and https are patched when require() first loads them (NODEJS_PROXY_HOOK below); an
 * import() of them would bypass that, so code that mentions import gets both loaded (and patched) before
 * it runs. */
#define NODEJS_BOOTSTRAP                                                                                 \
        NODEJS_FAST_EXIT                                                                                 \
        "module.paths.push('" RUNTIME_PACKAGES_MOUNT "/node_modules');"                                  \
        "for(const m of (process.env." RUNTIME_PRELOAD_VARIABLE                                          \
        "||'').split(','))if(m)try{require(m)}catch{}"                                                   \
        ";delete process.env." RUNTIME_PRELOAD_VARIABLE ";"                                              \
        "require('net');"                                                                                \
        "try{require('fs').closeSync(" RUNTIME_READY_FD_STR ")}catch{}"                                  \
        "eval((()=>{"                                                                                    \
        "const c=require('fs').readFileSync(3,'utf8'),h=process.hrtime.bigint(),o=Date.now(),"           \
        "s=()=>Number(process.hrtime.bigint()-h),"                                                       \
        "v=x=>({value:x,configurable:true,enumerable:true,writable:true}),"                              \
        "f=p=>(Object.defineProperties(p,{now:v(function now(){return s()/1e6}),"                        \
        "timeOrigin:v(o)}),p),"                                                                          \
        "d=Object.getOwnPropertyDescriptor(globalThis,'performance');"                                   \
        "process.uptime=function uptime(){return s()/1e9};"                                              \
        "if(d&&d.get)Object.defineProperty(globalThis,'performance',{configurable:true,enumerable:true," \
        "get(){const p=f(d.get.call(globalThis));"                                                       \
        "Object.defineProperty(globalThis,'performance',v(p));return p},"                                \
        "set(x){Object.defineProperty(globalThis,'performance',v(x))}});"                                \
        "else if(d)f(d.value);"                                                                          \
        "if(process.env.HTTP_PROXY&&/\\bimport\\b/.test(c))require('http'),require('https');"            \
        "return c})())"

static const char *const nodejs_argv_tail[] = {
        "-e",
        NODEJS_BOOTSTRAP,
        NULL,
};

/* Node.js ignores the proxy variables: the shim (src/runtime/nodejs-proxy.js, in the run's
 * /usr/lib/difysandbox) routes http, https and fetch through the egress proxy. It is loaded when the code
 * first reaches one of them, not at every start (1-1.5 ms of a 24 ms node run, issue 25): until then a
 * hook on require() (Module._load, named so that a stack shows it) and on process.getBuiltinModule()
 * watches for http and https, and the global fetch is a stand-in. The shim patches each module when it is
 * first handed out; once both are, the hooks step aside. The stand-in keeps calling the shim's fetch, so
 * that a reference the code took before is proxied too. It runs before the pool's preloads, which may
 * load http themselves. */
#define NODEJS_PROXY_SHIM "/usr/lib/difysandbox/nodejs-proxy.js"
#define NODEJS_PROXY_HOOK                                                                                \
        "{const M=require('module'),L=M._load,G=process.getBuiltinModule,F=globalThis.fetch;let s;"      \
        "const S=()=>s||=require('" NODEJS_PROXY_SHIM "')(F),"                                           \
        "p=(r,e)=>{if(typeof r=='string'&&/^(node:)?https?$/.test(r)&&!S().patch(r,e)){"                 \
        "if(M._load===l)M._load=L;if(process.getBuiltinModule===g)process.getBuiltinModule=G}return e}," \
        "l=function difysandboxProxyHook(r,...a){return p(r,L.call(this,r,...a))},"                      \
        "g=function getBuiltinModule(r){return p(r,G.call(this,r))};"                                    \
        "M._load=l;if(G)process.getBuiltinModule=g;"                                                     \
        "if(F)globalThis.fetch=function fetch(...a){return S().fetch.apply(this,a)}}"

static const char *const nodejs_network_argv_tail[] = {
        "-e",
        NODEJS_PROXY_HOOK NODEJS_BOOTSTRAP,
        NULL,
};

static const char *const nodejs_environment[] = {
        "HOME=/tmp",
        "LANG=C.UTF-8",
        NULL,
};

/* clang-format off */
/* A row may leave out its last field, arch: RULE_ARCH_ALL is 0 (seccomp-policy.h). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const SyscallRule nodejs_rules[] = {
        /* name             action              reason */
        { "bind",           RULE_ALLOW,         "sockets with network; without, only netlink (os.networkInterfaces()) is there to bind" },
        { "capget",         RULE_ALLOW,         "Node reads its capabilities at start-up (all empty here)" },
        { "connect",        RULE_NETWORK,       "TCP and resolver connects" },
        { "epoll_pwait",    RULE_ALLOW,         "libuv event loop" },
        { "epoll_wait",     RULE_ALLOW,         "libuv event loop of Debian's Node.js 18 (20 uses epoll_pwait)", RULE_ARCH_X86_64 },
        { "getpeername",    RULE_NETWORK,       "socket.remoteAddress" },
        { "getsockname",    RULE_ALLOW,         "socket.localAddress; the netlink socket of os.networkInterfaces() without network" },
        { "getsockopt",     RULE_NETWORK,       "SO_ERROR after a non-blocking connect" },
        { "pkey_alloc",     RULE_ALLOW,         "V8 protects JIT and WebAssembly memory with protection keys" },
        { "pkey_free",      RULE_ALLOW,         "Node.js 18's V8 frees the key it allocated; only its own keys" },
        { "pkey_mprotect",  RULE_ALLOW,         "V8 protects JIT and WebAssembly memory with protection keys" },
        { "recvfrom",       RULE_NETWORK,       "TCP/UDP receive" },
        { "recvmsg",        RULE_ALLOW,         "netlink answers: getaddrinfo(AI_ADDRCONFIG), os.networkInterfaces() (the run's own netns)" },
        { "sendmmsg",       RULE_NETWORK,       "glibc resolver sends A and AAAA queries together" },
        { "sendto",         RULE_ALLOW,         "netlink requests (the run's own netns, also without network); TCP/UDP send with network" },
        { "setsockopt",     RULE_NETWORK,       "TCP_NODELAY, keep-alive options, IP_RECVERR" },
        { "shutdown",       RULE_NETWORK,       "half-closing sockets" },
        { "socket",         RULE_SOCKET_NETLINK, "TCP/UDP and NETLINK_ROUTE (AI_ADDRCONFIG) with network; EACCES otherwise" },
};
#pragma GCC diagnostic pop
/* clang-format on */

static const char *const nodejs_install_args[] = {
        "install",    "--no-audit",      "--no-fund",     "--no-update-notifier",
        "--omit=dev", "--loglevel=http", "--color=false", NULL,
};

static const Runtime nodejs = {
        .language = LANGUAGE_NODEJS,
        .name = "nodejs",
        .argv_tail = nodejs_argv_tail,
        .network_argv_tail = nodejs_network_argv_tail,
        .environment = nodejs_environment,
        .rules = nodejs_rules,
        .n_rules = sizeof(nodejs_rules) / sizeof(nodejs_rules[0]),
        .interpreter_key = "nodejs_path",
        .interpreter_offset = offsetof(Config, nodejs_path),
        .pool_size_offset = offsetof(Config, pool_nodejs),
        .preload_offset = offsetof(Config, preload_nodejs),
        .package_tool = PACKAGE_TOOL_NPM,
        .package_tool_name = "npm",
        .install_args = nodejs_install_args,
        .packages_subdir = "node_modules", /* NODEJS_BOOTSTRAP above; npm --prefix makes it */
        .requirements = REQUIREMENTS_NPM,
        .tree_builder = "difysandbox-prepare-runtime nodejs",
};

const Runtime *nodejs_runtime(void) {
        return &nodejs;
}

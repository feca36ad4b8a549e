/* python3: how a Python 3 run starts and what it needs beyond the common syscall rows.
 * Measured on Debian 12's python3.11 (../shared/reference/syscalls.md §2) and Debian 13's python3.13
 * (docs/syscalls-trixie.md; its rows are common to both languages, in src/sandbox/seccomp-policy.c). */

#include <stddef.h>

#include "common/config.h"
#include "runtime.h"
#include "sandbox/seccomp-policy.h"

/* -I: isolated (no PYTHON* variables, no user site, no script directory on sys.path); -B: the root is
 * read-only, so never try to write .pyc files. The bootstrap reads the code from fd 3, which exists only
 * once the enter library has installed the final seccomp stage (src/enter/enter.c), and runs it in
 * __main__ so that `if __name__ == "__main__"` works as in a script.
 *
 * Before that it makes the dependency generation's python/ (pip --target) importable, as a site directory
 * (so the .pth files pip put there work too) placed before the first dist-/site-packages entry: a version
 * installed there wins over Debian's, the standard library still wins over both. -I ignores PYTHONPATH,
 * and doing it here rather than in a .pth file of the runtime tree keeps the path next to its mount point
 * (RUNTIME_PACKAGES_MOUNT) and the order explicit. Without a generation the directory does not exist and
 * nothing changes. One line, so that tracebacks still show the bootstrap as line 1; its names are deleted
 * before the code runs in the same globals.
 *
 * A prepared run of the warm pool then imports the modules of pool_preload.python3 (runtime.h) while it
 * waits: they are in sys.modules when the code's own import asks for them. gc.freeze() then moves what
 * the interpreter's start-up and the preloads made out of the collector's reach: the exit below no longer
 * walks pandas' and numpy's objects, which took 100 ms of every run (the code's own objects are collected
 * as ever). */
#define PYTHON3_PACKAGES RUNTIME_PACKAGES_MOUNT "/python" /* .packages_subdir below */
/* Every run's exit, once the code has returned normally: after every atexit handler of the code (this
 * one is registered first, so it runs last; threads are joined before atexit), __main__'s names become
 * None as at a normal exit and the collector runs, so the code's own finalizers run; then the streams are
 * flushed and the process leaves with status 0 without tearing the interpreter's modules down, which took
 * 6-10 ms of a run with pandas preloaded and 4 ms of a bare one. Registered before the preloads, so that
 * their own handlers (logging's) still run before it. Anything else (sys.exit(), an exception, a flush
 * that fails) finds no mark, or returns, and the interpreter exits as ever. */
#define PYTHON3_FAST_EXIT                                                                     \
        "import sys,os,gc,atexit\\n"                                                          \
        "def fx():\\n"                                                                        \
        " if getattr(sys,'_difysandbox_done',0)!=1:return\\n"                                 \
        " try:\\n"                                                                            \
        "  m=sys.modules['__main__'].__dict__\\n"                                             \
        "  for k in sorted(m,key=lambda k:not k.startswith('_')):\\n"                         \
        "   k!='__builtins__' and m.__setitem__(k,None)\\n"                                   \
        "  gc.collect()\\n"                                                                   \
        "  for f in (sys.stdout,sys.stderr,sys.__stdout__,sys.__stderr__):f and f.flush()\\n" \
        " except BaseException:return\\n"                                                     \
        " os._exit(0)\\n"                                                                     \
        "atexit.register(fx)"
#define PYTHON3_BOOTSTRAP                                                                             \
        "_s=__import__('sys');_d='" PYTHON3_PACKAGES "';_n=len(_s.path);"                             \
        "__import__('os').path.isdir(_d) and __import__('site').addsitedir(_d);"                      \
        "_a=_s.path[_n:];del _s.path[_n:];"                                                           \
        "_k=next((i for i,p in enumerate(_s.path) if p.endswith('-packages')),_n);_s.path[_k:_k]=_a;" \
        "del _s,_d,_n,_a,_k;"                                                                         \
        "_p=__import__('os').environ.pop('" RUNTIME_PRELOAD_VARIABLE "','');"                         \
        "exec(\"" PYTHON3_FAST_EXIT "\",{});"                                                         \
        "exec(\"for _m in _p.split(','):\\n try:_m and __import__(_m)\\n except Exception:pass\");"   \
        "__import__('gc').freeze();del _p,_m;"                                                        \
        "exec(\"try:__import__('os').close(" RUNTIME_READY_FD_STR ")\\nexcept OSError:pass\");"       \
        "exec(compile(__import__('os').fdopen(3,'rb').read(),'<string>','exec'));"                    \
        "__import__('sys')._difysandbox_done=1"

static const char *const python3_argv_tail[] = {
        "-I", "-B", "-c", PYTHON3_BOOTSTRAP, NULL,
};

/* HOME: glibc asks nscd for the home directory at start-up when it is unset (a socket per run).
 * LANG: UTF-8 stdio. JOBLIB_MULTIPROCESSING=0: a run cannot create processes, and with /dev/shm joblib
 * (scikit-learn's n_jobs) would take multiprocessing for working and fail at loky's fork instead of
 * running its jobs in the run's own process, as it does when told. */
static const char *const python3_environment[] = {
        "HOME=/tmp",
        "JOBLIB_MULTIPROCESSING=0",
        "LANG=C.UTF-8",
        NULL,
};

/* clang-format off */
/* A row may leave out its last field, arch: RULE_ARCH_ALL is 0 (seccomp-policy.h). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const SyscallRule python3_rules[] = {
        /* name           action        reason */
        { "bind",         RULE_NETWORK, "urllib3 probes IPv6 with bind([::1]:0) at import (network runs)" },
        { "connect",      RULE_NETWORK, "TCP and resolver connects" },
        { "epoll_pwait",  RULE_ALLOW,   "asyncio selector event loop on arm64 (glibc's epoll_wait)" },
        { "epoll_wait",   RULE_ALLOW,   "asyncio selector event loop", RULE_ARCH_X86_64 },
        { "getpeername",  RULE_ALLOW,   "repr() of socketpair sockets; the ssl module with network" },
        { "getsockname",  RULE_ALLOW,   "asyncio's self-pipe socketpair; TCP sockets with network" },
        { "getsockopt",   RULE_NETWORK, "SO_ERROR after a non-blocking connect" },
        { "mbind",        RULE_ALLOW,   "OpenBLAS buffer allocation (MPOL_PREFERRED), when it is libblas" },
        { "recvfrom",     RULE_ALLOW,   "asyncio self-pipe wake-up; TCP/UDP receive with network" },
        { "recvmsg",      RULE_NETWORK, "receiving on sockets (ssl, asyncio transports)" },
        { "sendmmsg",     RULE_NETWORK, "glibc resolver sends A and AAAA queries together" },
        { "sendmsg",      RULE_NETWORK, "sending on sockets (asyncio transports)" },
        { "sendto",       RULE_ALLOW,   "asyncio self-pipe write; TCP/UDP send with network" },
        { "setsockopt",   RULE_NETWORK, "TCP_NODELAY (urllib3, httpcore), IP_RECVERR (resolver)" },
        { "shutdown",     RULE_NETWORK, "SHUT_WR when httpx closes a connection" },
        { "socket",       RULE_SOCKET,  "TCP/UDP with network; EACCES otherwise, so glibc skips nscd" },
        { "socketpair",   RULE_ALLOW,   "asyncio self-pipe (AF_UNIX pair, reaches nothing outside)" },
};
#pragma GCC diagnostic pop
/* clang-format on */

/* --target skips pip's "externally managed" check (PEP 668), so no --break-system-packages: the target
 * is ours. */
static const char *const python3_install_args[] = {
        "-m",
        "pip",
        "install",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        "--no-color",
        NULL,
};

static const Runtime python3 = {
        .language = LANGUAGE_PYTHON3,
        .name = "python3",
        .argv_tail = python3_argv_tail,
        .network_argv_tail = python3_argv_tail, /* requests, httpx, urllib read the proxy variables */
        .environment = python3_environment,
        .rules = python3_rules,
        .n_rules = sizeof(python3_rules) / sizeof(python3_rules[0]),
        .interpreter_key = "python_path",
        .interpreter_offset = offsetof(Config, python_path),
        .pool_size_offset = offsetof(Config, pool_python3),
        .preload_offset = offsetof(Config, preload_python3),
        .package_tool = PACKAGE_TOOL_PIP,
        .package_tool_name = "pip",
        .install_args = python3_install_args,
        .packages_subdir = "python", /* PYTHON3_PACKAGES above */
        .requirements = REQUIREMENTS_PEP508,
        .tree_builder = "difysandbox-prepare-runtime python3",
};

const Runtime *python3_runtime(void) {
        return &python3;
}

/* clocks: see clocks.h. */

#include "clocks.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int clocks_random_start(uint64_t *ret_nsec) {
        /* The most that is a whole number of times NSEC_PER_SEC: a draw at or above it is drawn again
         * (one in 5e10), so that the nanoseconds are uniform, not biased towards the low ones. */
        const uint64_t nsec_limit = UINT64_MAX - UINT64_MAX % CLOCKS_NSEC_PER_SEC;
        uint64_t v[2];

        do
                if (getrandom(v, sizeof(v), 0) != (ssize_t) sizeof(v))
                        return -EIO;
        while (v[1] >= nsec_limit);
        /* the seconds: a power of two, so uniform */
        *ret_nsec = (v[0] % CLOCKS_START_SPAN_SEC) * CLOCKS_NSEC_PER_SEC + v[1] % CLOCKS_NSEC_PER_SEC;
        return 0;
}

static int64_t timespec_nsec(const struct timespec *ts) {
        return (int64_t) ts->tv_sec * (int64_t) CLOCKS_NSEC_PER_SEC + ts->tv_nsec;
}

/* Prepends "<clock> <seconds> <nanoseconds>\n" to the text that starts at p, for an offset of nsec, as the
 * kernel reads it: seconds rounded down, so that the nanoseconds are 0 to 999999999 (EINVAL otherwise).
 * Written backwards, by hand: the child allocates nothing. */
static char *offset_line(char *p, int clock, int64_t nsec) {
        int64_t seconds = nsec / (int64_t) CLOCKS_NSEC_PER_SEC, frac = nsec % (int64_t) CLOCKS_NSEC_PER_SEC;
        uint64_t v;

        if (frac < 0) {
                frac += (int64_t) CLOCKS_NSEC_PER_SEC;
                seconds--;
        }
        *--p = '\n';
        v = (uint64_t) frac;
        do
                *--p = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        *--p = ' ';
        v = seconds < 0 ? -(uint64_t) seconds : (uint64_t) seconds;
        do
                *--p = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        if (seconds < 0)
                *--p = '-';
        *--p = ' ';
        *--p = (char) ('0' + clock); /* CLOCK_MONOTONIC 1, CLOCK_BOOTTIME 7 */
        return p;
}

static int write_all(int fd, const char *p, size_t n) {
        ssize_t k = write(fd, p, n);

        if (k < 0)
                return -errno;
        return (size_t) k == n ? 0 : -EIO;
}

/* Offsets can only be written before anyone is in the namespace, and only through /proc, still the host's
 * here; then we join it with setns() (execve() moves a process in only on kernels that have
 * exec_task_namespaces(), not on 5.6 all along). Each clock then reads start_nsec plus the little time
 * since we read it, so stays >= 0 (ERANGE otherwise). Host clocks in nanoseconds fit int64_t for 292
 * years of uptime. */
int clocks_enter(uint64_t start_nsec, uint64_t *ret_lag_usec) {
        struct timespec mono, boot;
        char line[128], *p = line + sizeof(line);
        int fd, r;

        if (start_nsec >= CLOCKS_START_SPAN_SEC * CLOCKS_NSEC_PER_SEC)
                return -ERANGE;
        if (unshare(CLONE_NEWTIME) < 0)
                return -errno;
        if (clock_gettime(CLOCK_MONOTONIC, &mono) < 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0)
                return -errno;
        p = offset_line(p, CLOCK_BOOTTIME, (int64_t) start_nsec - timespec_nsec(&boot));
        p = offset_line(p, CLOCK_MONOTONIC, (int64_t) start_nsec - timespec_nsec(&mono));
        fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = write_all(fd, p, (size_t) (line + sizeof(line) - p)); /* EPERM: no CAP_SYS_TIME */
        (void) close(fd);
        if (r < 0)
                return r;

        fd = open("/proc/self/ns/time_for_children", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = setns(fd, CLONE_NEWTIME) < 0 ? -errno : 0;
        (void) close(fd);
        if (r < 0)
                return r;
        /* Ours now reads start_nsec where the old one read mono. */
        *ret_lag_usec = (uint64_t) ((timespec_nsec(&mono) - (int64_t) start_nsec) / 1000);
        return 0;
}

int clocks_probe(void) {
        int status;
        pid_t pid;

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                uint64_t start = 0, lag;
                int r = clocks_random_start(&start);

                if (r >= 0)
                        r = clocks_enter(start, &lag);
                _exit(r < 0 ? (-r & 0xff) : 0);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (!WIFEXITED(status))
                return -EIO;
        return -WEXITSTATUS(status);
}

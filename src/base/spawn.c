/*
 * spawn.c — vfork-style process start (see spawn.h).
 *
 * Why vfork and not fork: fork copies the parent's page tables, which makes
 * spawning from a large parent 20x slower; vfork shares the address space
 * and suspends the parent until the child execs or exits.  The price is
 * discipline in the child: it only makes system calls, touches no parent
 * variable it could corrupt, allocates nothing, and leaves with execve or
 * _exit.  Everything that may allocate (PATH search, /dev/null) happens in
 * the parent first.
 *
 * Why an errno pipe even though vfork shares memory: valgrind turns vfork
 * into fork, where shared memory does not exist; a CLOEXEC pipe reports the
 * failing step and errno under both, and reads as EOF once exec succeeded.
 *
 * All signals are blocked in the parent around vfork so no handler of the
 * parent ever runs on the child's side of the shared memory; the child
 * resets every disposition to default before unblocking.
 *
 * Why clone3 when the child has a cgroup v2 directory to start in: moving a
 * process into a cgroup (a write to cgroup.procs) takes the kernel's
 * threadgroup lock for writing, which waits for an RCU grace period unless
 * another migration happened moments before.  Measured here, the write
 * costs 2-3 us back to back but 7-15 ms after 100 ms of quiet, and agents
 * spawn commands seconds apart.  clone3(CLONE_INTO_CGROUP) makes the child
 * in its cgroup under the read side of that lock, which is cheap always.
 * It is the same vfork-style start (CLONE_VM | CLONE_VFORK) on a stack of
 * its own, so it needs a few lines of assembly: in the child the system
 * call returns on the new stack, where no C frame exists to return to.
 * Where clone3 is missing (kernels < 5.7, valgrind, seccomp filters), the
 * hierarchy is v1, or the architecture has no trampoline here, the child
 * is started by vfork and writes itself into cgroup.procs as before.
 *
 * Why the parent holds itself to its CPU across that clone3: the kernel
 * here (6.18) places a child cloned into a cgroup on another CPU, where a
 * plain vfork child starts on its parent's.  On these VMs, after 100 ms
 * of quiet, the other CPU is a halted vCPU, and the parent, suspended
 * until the exec, waits for it to wake and run the child's set-up and
 * exec from cold: 210-270 us from the clone to the child's first
 * instruction against 50-60 for vfork, then 660-940 us to the end of its
 * exec against 60-110 (means of 21 spawns 100 ms apart, in nine sets).
 * With the parent held to the CPU it is on, the child starts there too;
 * its first step gives the parent and itself back the parent's whole CPU
 * mask, so the command runs as unconfined as it would have.  Where the
 * mask cannot be read or set, nothing is held and the spawn goes on as
 * before.  Interleaved with the unheld start, supervised spawns of
 * /bin/true 100 ms apart took 1733-1784 us against 2040-2104, and back to
 * back the same (1034-1039 against 1039-1045).
 */
#include "base/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

#if defined(__SANITIZE_ADDRESS__)
#define SPAWN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPAWN_ASAN 1
#endif
#endif

/* Architectures with a clone3 trampoline below.  Not under ASan: its
 * bookkeeping does not follow a child onto a stack it did not make (it
 * takes the child's first noreturn call for a stack overflow), so the
 * sanitizer build starts every child by vfork. */
#if defined(__x86_64__) && !defined(SPAWN_ASAN)
#define SPAWN_HAVE_CLONE3 1
#else
#define SPAWN_HAVE_CLONE3 0
#endif

/* The child's stack under clone3, above one guard page.  The child runs
 * child_main and libc's thin system call wrappers only; a sanitizer's
 * frames are larger, hence the room. */
#define SPAWN_CLONE3_STACK (64u * 1024)

/* The PATH used when the environment has none (as execvp does). */
#define SPAWN_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
/* Highest fd the child closes one by one if close_range is missing. */
#define SPAWN_FALLBACK_MAX_FD 65536

extern char **environ;

/*
 * In the child: closes every fd from first up but keep (the errno pipe,
 * CLOEXEC already).  For Linux 5.9 and 5.10, which have close_range but
 * not its CLOSE_RANGE_CLOEXEC (5.11): a plain close is as good in a child
 * whose fd table is its own, and two calls cost far less than a flag set
 * on each of SPAWN_FALLBACK_MAX_FD fds.  False where close_range fails
 * too (older kernels): nothing is known closed.
 */
static bool close_all_but(int first, int keep)
{
    if (keep < first)
        return syscall(SYS_close_range, (unsigned)first, ~0u, 0) == 0;
    return (keep == first ||
            syscall(SYS_close_range, (unsigned)first, (unsigned)keep - 1,
                    0) == 0) &&
           syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0) == 0;
}

/* The kernel's struct sigaction for rt_sigaction(2), which differs from
 * glibc's: a 64-bit mask of the kernel's size. */
struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};

/* What the child writes to the errno pipe when a step fails. */
struct spawn_report {
    int32_t step;
    int32_t err;
};

/* The kernel's struct clone_args, up to the cgroup field (version 2, 88
 * bytes), spelled out so the build does not depend on linux/sched.h
 * agreeing with glibc's sched.h. */
struct spawn_clone_args {
    uint64_t flags;
    uint64_t pidfd;
    uint64_t child_tid;
    uint64_t parent_tid;
    uint64_t exit_signal;
    uint64_t stack;
    uint64_t stack_size;
    uint64_t tls;
    uint64_t set_tid;
    uint64_t set_tid_size;
    uint64_t cgroup;
};

/* Everything the child side needs, prepared by the parent. */
typedef struct spawn_child {
    const spawn_opts_t *o;
    const char *path;
    const char *const *envp;
    int devnull;
    int errfd;
    bool in_cgroup; /* born in o->cgroup_fd: no write to cgroup_procs_fd */
    bool held;      /* the parent was held to one CPU: restore affinity */
    pid_t parent_tid;   /* the held thread, when held */
    cpu_set_t affinity; /* the parent's CPU mask, when held */
} spawn_child_t;

#if SPAWN_HAVE_CLONE3
/*
 * rein_spawn_clone3(args, size, fn, arg): the clone3 system call; in the
 * child, which wakes on the stack args names, it calls fn(arg), which must
 * not return.  Returns the child's pid, or -errno (errno is not set).
 * fn and arg ride in r8/r9, which the system call preserves and the child
 * inherits; rbp is cleared so the child's frame chain ends there.
 */
long rein_spawn_clone3(struct spawn_clone_args *args, size_t size,
                       void (*fn)(void *), void *arg)
    __attribute__((visibility("hidden")));
__asm__(".pushsection .text\n"
        ".globl rein_spawn_clone3\n"
        ".hidden rein_spawn_clone3\n"
        ".type rein_spawn_clone3, @function\n"
        ".p2align 4\n"
        "rein_spawn_clone3:\n"
        "    movq %rdx, %r8\n"
        "    movq %rcx, %r9\n"
        "    movl $435, %eax\n" /* __NR_clone3 on x86_64 */
        "    syscall\n"
        "    testq %rax, %rax\n"
        "    jnz 1f\n"
        "    xorl %ebp, %ebp\n"
        "    movq %r9, %rdi\n"
        "    callq *%r8\n"
        "    hlt\n"
        "1:  ret\n"
        ".size rein_spawn_clone3, .-rein_spawn_clone3\n"
        ".popsection\n");
#endif

void spawn_opts_init(spawn_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->fd_in = o->fd_out = o->fd_err = -1;
    o->ctty_fd = -1;
    o->cgroup_fd = o->cgroup_procs_fd = -1;
    o->group = SPAWN_SESSION;
    o->want_pidfd = true;
}

const char *spawn_step_name(spawn_step_t step)
{
    switch (step) {
    case SPAWN_STEP_NONE: return "none";
    case SPAWN_STEP_RESOLVE: return "resolve";
    case SPAWN_STEP_SETSID: return "setsid";
    case SPAWN_STEP_CTTY: return "controlling tty";
    case SPAWN_STEP_FDS: return "fd set-up";
    case SPAWN_STEP_CHDIR: return "chdir";
    case SPAWN_STEP_EXEC: return "exec";
    case SPAWN_STEP_CGROUP: return "cgroup join";
    case SPAWN_STEP_AFFINITY: return "cpu affinity";
    }
    return "unknown";
}

int spawn_resolve(const char *file, const char *path_env, char *out,
                  size_t size)
{
    if (!file || !*file)
        return -ENOENT;
    if (strchr(file, '/')) {
        if (strlen(file) >= size)
            return -ENAMETOOLONG;
        strcpy(out, file);
        return 0;
    }
    const char *p = path_env && *path_env ? path_env : SPAWN_DEFAULT_PATH;
    int last = -ENOENT;
    while (*p) {
        const char *colon = strchrnul(p, ':');
        size_t dl = (size_t)(colon - p);
        /* An empty PATH entry means the current directory. */
        int n = dl ? snprintf(out, size, "%.*s/%s", (int)dl, p, file)
                   : snprintf(out, size, "./%s", file);
        if (n > 0 && (size_t)n < size) {
            struct stat st;
            if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
                if (access(out, X_OK) == 0)
                    return 0;
                last = -EACCES;
            }
        }
        p = *colon ? colon + 1 : colon;
    }
    return last;
}

/* Moves fd out of the 0..2 range so dup2 into 0..2 cannot clobber it. */
static int lift_fd(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

__attribute__((noreturn)) static void child_fail(int errfd, spawn_step_t step)
{
    struct spawn_report r = {(int32_t)step, (int32_t)errno};
    ssize_t w;
    do
        w = write(errfd, &r, sizeof r);
    while (w < 0 && errno == EINTR);
    _exit(127);
}

/* Moves the calling child into the cgroup whose cgroup.procs (or tasks)
 * is fd: "0" names the writer itself; a plain write, so vfork discipline
 * holds. */
static void child_join(int fd, int errfd)
{
    ssize_t w;
    do
        w = write(fd, "0", 1);
    while (w < 0 && errno == EINTR);
    if (w != 1) {
        if (w >= 0)
            errno = EIO;
        child_fail(errfd, SPAWN_STEP_CGROUP);
    }
}

/* Gives the held parent thread and the child the CPU mask the parent had
 * before it held itself to one CPU (see the top of this file).  The
 * parent's first: it is woken when the child execs, and it may then run
 * wherever the scheduler finds room (it sets its mask again on return, so
 * a failure here costs nothing).  A mask the kernel refuses the child now
 * (its cpuset changed meanwhile) gives way to every CPU, which the kernel
 * narrows to what the cpuset allows: a command is never left confined. */
static void child_unhold(const spawn_child_t *c)
{
    sched_setaffinity(c->parent_tid, sizeof c->affinity, &c->affinity);
    if (sched_setaffinity(0, sizeof c->affinity, &c->affinity) == 0)
        return;
    cpu_set_t all;
    memset(&all, 0xff, sizeof all);
    if (sched_setaffinity(0, sizeof all, &all) < 0)
        child_fail(c->errfd, SPAWN_STEP_AFFINITY);
}

/* Places src on target with CLOEXEC cleared. */
static int place_fd(int src, int target)
{
    if (src == target)
        return fcntl(target, F_SETFD, 0);
    return dup2(src, target) < 0 ? -1 : 0;
}

/*
 * The child side.  Runs in the parent's memory (vfork, or clone3 with
 * CLONE_VM): it reads what c points to, writes nothing of the parent's,
 * and ends in exec or _exit.  noinline keeps its frame separate from the
 * parent's.
 */
__attribute__((noinline, noreturn)) static void child_main(const spawn_child_t *c)
{
    const spawn_opts_t *o = c->o;
    int errfd = c->errfd;
    if (c->held)
        child_unhold(c);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        if (sigaction(s, &dfl, NULL) < 0) {
            /* glibc refuses its reserved real-time signals (32, 33), yet an
             * ignored disposition of theirs survives exec: reset them with
             * the raw system call. */
            struct kernel_sigaction ksa = {SIG_DFL, 0, NULL, 0};
            syscall(SYS_rt_sigaction, s, &ksa, NULL, sizeof ksa.mask);
        }
    }

    if (o->group == SPAWN_SESSION) {
        if (setsid() < 0)
            child_fail(errfd, SPAWN_STEP_SETSID);
    } else if (o->group == SPAWN_PGROUP) {
        if (setpgid(0, 0) < 0)
            child_fail(errfd, SPAWN_STEP_SETSID);
    }
    if (o->ctty_fd >= 0 && ioctl(o->ctty_fd, TIOCSCTTY, 0) < 0)
        child_fail(errfd, SPAWN_STEP_CTTY);

    /* Join the run's cgroups now, while this is the only process of the
     * run: whatever it forks after exec is born inside. */
    if (!c->in_cgroup && o->cgroup_procs_fd >= 0)
        child_join(o->cgroup_procs_fd, errfd);
    for (size_t i = 0; i < o->n_join_fds; i++)
        child_join(o->join_fds[i], errfd);

    /*
     * Extra fds go to 3 .. 3+n-1.  Any fd we still need (the errno pipe,
     * the extra sources themselves) may sit in that range or in 0..2 and be
     * clobbered by a dup2, so each is first copied above the whole range.
     * The copies are CLOEXEC and live in a fixed array on this frame: the
     * child of a vfork allocates nothing.
     */
    size_t nx = o->n_extra_fds;
    int xfd[SPAWN_MAX_EXTRA_FDS];
    int first_free = 3 + (int)nx;
    /* The errno pipe too: a parent with its stdio closed may have got it
     * as fd 0..2, which the child's stdio then replaces, and a failed step
     * would write its report into the child's own output. */
    if (errfd < first_free) {
        int e = fcntl(errfd, F_DUPFD_CLOEXEC, first_free);
        if (e < 0)
            child_fail(errfd, SPAWN_STEP_FDS);
        errfd = e;
    }
    if (nx) {
        for (size_t i = 0; i < nx; i++)
            if ((xfd[i] = fcntl(o->extra_fds[i], F_DUPFD_CLOEXEC,
                                first_free)) < 0)
                child_fail(errfd, SPAWN_STEP_FDS);
    }

    int in = o->fd_in >= 0 ? o->fd_in : c->devnull;
    int out = o->fd_out >= 0 ? o->fd_out : c->devnull;
    int err = o->fd_err >= 0 ? o->fd_err : c->devnull;
    if ((in = lift_fd(in)) < 0 || (out = lift_fd(out)) < 0 ||
        (err = lift_fd(err)) < 0)
        child_fail(errfd, SPAWN_STEP_FDS);
    if (place_fd(in, 0) < 0 || place_fd(out, 1) < 0 || place_fd(err, 2) < 0)
        child_fail(errfd, SPAWN_STEP_FDS);
    for (size_t i = 0; i < nx; i++)
        if (place_fd(xfd[i], 3 + (int)i) < 0)
            child_fail(errfd, SPAWN_STEP_FDS);

    if (o->cwd && chdir(o->cwd) < 0)
        child_fail(errfd, SPAWN_STEP_CHDIR);

    /* Every other fd closes at exec; the errno pipe stays usable until then. */
    if (syscall(SYS_close_range, (unsigned)first_free, ~0u,
                CLOSE_RANGE_CLOEXEC) < 0 &&
        !close_all_but(first_free, errfd)) {
        for (int fd = first_free; fd < SPAWN_FALLBACK_MAX_FD; fd++)
            if (fd != errfd)
                fcntl(fd, F_SETFD, FD_CLOEXEC);
    }

    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* execve's prototype predates const; it does not modify them. */
    execve(c->path, (char *const *)o->argv, (char *const *)c->envp);
    child_fail(errfd, SPAWN_STEP_EXEC);
}

/*
 * The vfork itself, in a frame of its own: the child returns through no
 * code of spawn_start, so none of that function's locals can be clobbered.
 * All signals stay blocked across it (see the top of this file).
 */
__attribute__((noinline)) static pid_t vfork_child(const spawn_child_t *c)
{
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    pid_t pid = vfork();
    if (pid == 0)
        child_main(c); /* never returns */
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    errno = e;
    return pid;
}

#if SPAWN_HAVE_CLONE3
/* Holds the calling thread to the CPU it runs on, keeping its mask in
 * c->affinity for the child and for unhold_cpu (see the top of this
 * file).  Sets c->held when it did; a thread already on one CPU has
 * nothing to hold. */
static void hold_cpu(spawn_child_t *c)
{
    c->held = false;
    int cpu = sched_getcpu();
    if (cpu < 0 || sched_getaffinity(0, sizeof c->affinity, &c->affinity) < 0 ||
        !CPU_ISSET(cpu, &c->affinity) || CPU_COUNT(&c->affinity) < 2)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    c->parent_tid = gettid();
    c->held = sched_setaffinity(0, sizeof one, &one) == 0;
}

/* Gives the calling thread back the mask hold_cpu kept (the child has
 * done so already unless it failed before its first step). */
static void unhold_cpu(spawn_child_t *c)
{
    if (c->held)
        sched_setaffinity(0, sizeof c->affinity, &c->affinity);
    c->held = false;
}

/* Where the trampoline lands in the child. */
__attribute__((noreturn)) static void clone3_entry(void *arg)
{
    child_main(arg);
}
#endif

/*
 * Starts the child born in c->o->cgroup_fd: clone3 in vfork style on a
 * stack of its own (see the top of this file), signals blocked across it
 * as for vfork.  With pidfd not NULL, the kernel also returns a pidfd
 * there.  Returns the pid, or -1 with errno when clone3 could not do it
 * (ENOSYS, EBADF for a v1 directory, ...): the caller then uses vfork.
 */
static pid_t clone3_child(spawn_child_t *c, int *pidfd)
{
#if SPAWN_HAVE_CLONE3
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = page + SPAWN_CLONE3_STACK;
    char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED)
        return -1;
    /* An overflow faults on the guard page instead of writing whatever
     * mapping lies below. */
    if (mprotect(stack, page, PROT_NONE) < 0) {
        int e = errno;
        munmap(stack, size);
        errno = e;
        return -1;
    }
    struct spawn_clone_args a;
    memset(&a, 0, sizeof a);
    a.flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP |
              (pidfd ? CLONE_PIDFD : 0);
    a.pidfd = (uint64_t)(uintptr_t)pidfd;
    a.exit_signal = SIGCHLD;
    a.stack = (uint64_t)(uintptr_t)(stack + page);
    a.stack_size = SPAWN_CLONE3_STACK;
    a.cgroup = (uint64_t)c->o->cgroup_fd;
    c->in_cgroup = true;

    sigset_t all, saved;
    sigfillset(&all);
    hold_cpu(c);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    long rc = rein_spawn_clone3(&a, sizeof a, clone3_entry, c);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    unhold_cpu(c);
    /* The child has exec'ed or exited (CLONE_VFORK): the stack is free. */
    munmap(stack, size);
    if (rc < 0) {
        c->in_cgroup = false;
        errno = (int)-rc;
        return -1;
    }
    return (pid_t)rc;
#else
    (void)c;
    (void)pidfd;
    errno = ENOSYS;
    return -1;
#endif
}

bool spawn_can_start_in_cgroup(void)
{
#if SPAWN_HAVE_CLONE3
    /* A clone into a cgroup fd that cannot be open (fds stop far below
     * INT_MAX): a kernel that would do it fails at that fd, EBADF, and
     * starts nothing; old kernels, valgrind and seccomp filters answer
     * otherwise (EINVAL, E2BIG, ENOSYS, EPERM). */
    struct spawn_clone_args a;
    memset(&a, 0, sizeof a);
    a.flags = CLONE_INTO_CGROUP;
    a.exit_signal = SIGCHLD;
    a.cgroup = INT_MAX;
    return syscall(SYS_clone3, &a, sizeof a) < 0 && errno == EBADF;
#else
    return false;
#endif
}

static const char *env_path(const char *const *envp)
{
    for (const char *const *e = envp; e && *e; e++)
        if (!strncmp(*e, "PATH=", 5))
            return *e + 5;
    return NULL;
}

int spawn_start(const spawn_opts_t *o, pid_t *pid_out, int *pidfd_out,
                spawn_step_t *step)
{
    char path[PATH_MAX];
    int pipefd[2] = {-1, -1}, devnull = -1, clone_pidfd = -1, rc;
    spawn_step_t failed = SPAWN_STEP_NONE;
    const char *const *envp =
        o->envp ? o->envp : (const char *const *)environ;
    pid_t pid;

    *pid_out = -1;
    if (pidfd_out)
        *pidfd_out = -1;
    if (!o->argv || !o->argv[0] || !o->file)
        return -EINVAL;
    if (o->ctty_fd >= 0 && o->group != SPAWN_SESSION)
        return -EINVAL;
    if (o->n_extra_fds > SPAWN_MAX_EXTRA_FDS ||
        (o->n_extra_fds && !o->extra_fds))
        return -EINVAL;
    if (o->cgroup_fd >= 0 && o->cgroup_procs_fd < 0)
        return -EINVAL;
    if (o->n_join_fds && !o->join_fds)
        return -EINVAL;

    rc = spawn_resolve(o->file, env_path(envp), path, sizeof path);
    if (rc < 0) {
        failed = SPAWN_STEP_RESOLVE;
        goto fail;
    }
    if (o->fd_in < 0 || o->fd_out < 0 || o->fd_err < 0) {
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0) {
            rc = -errno;
            failed = SPAWN_STEP_FDS;
            goto fail;
        }
    }
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        rc = -errno;
        goto fail;
    }

    spawn_child_t c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.path = path;
    c.envp = envp;
    c.devnull = devnull;
    c.errfd = pipefd[1];
    bool want_pidfd = o->want_pidfd && pidfd_out;
    pid = -1;
    if (o->cgroup_fd >= 0)
        pid = clone3_child(&c, want_pidfd ? &clone_pidfd : NULL);
    if (pid < 0) /* no cgroup to start in, or clone3 could not */
        pid = vfork_child(&c);
    int spawn_errno = errno;
    close(pipefd[1]);
    pipefd[1] = -1;
    if (pid < 0) {
        rc = -spawn_errno;
        goto fail;
    }

    struct spawn_report r;
    ssize_t n;
    do
        n = read(pipefd[0], &r, sizeof r);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof r) {
        int code;
        spawn_reap(pid, -1, &code); /* the child has _exit'ed */
        rc = r.err ? -r.err : -EINVAL;
        failed = (spawn_step_t)r.step;
        goto fail;
    }

    if (clone_pidfd >= 0) {
        *pidfd_out = clone_pidfd;
    } else if (want_pidfd) {
        /* Safe from pid reuse: the child is ours and not yet reaped. */
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        *pidfd_out = fd >= 0 ? fd : -1;
    }
    close(pipefd[0]);
    if (devnull >= 0)
        close(devnull);
    *pid_out = pid;
    if (step)
        *step = SPAWN_STEP_NONE;
    return 0;

fail:
    if (clone_pidfd >= 0)
        close(clone_pidfd);
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    if (devnull >= 0)
        close(devnull);
    if (step)
        *step = failed;
    return rc;
}

int spawn_code_from_info(const siginfo_t *info)
{
    if (info->si_code == CLD_EXITED)
        return info->si_status;
    return 128 + info->si_status;
}

int spawn_reap(pid_t pid, int pidfd, int *code)
{
    siginfo_t info;
    int rc;
    memset(&info, 0, sizeof info);
    do {
        if (pidfd >= 0)
            rc = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED);
        else
            rc = waitid(P_PID, (id_t)pid, &info, WEXITED);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0 && pidfd >= 0 && errno == EINVAL) {
        /* Kernel without P_PIDFD: fall back to the pid (still unreaped). */
        do
            rc = waitid(P_PID, (id_t)pid, &info, WEXITED);
        while (rc < 0 && errno == EINTR);
    }
    if (rc < 0)
        return -errno;
    if (code)
        *code = spawn_code_from_info(&info);
    return 0;
}

/*
 * spawn.h — start a child process safely and fast.
 *
 * vfork-style: the parent's page tables are never copied, so spawning from a
 * large server costs the same as from a small one.  A CLOEXEC errno pipe
 * turns a failed chdir or exec into a synchronous error naming the step,
 * instead of a child that exits 127.  The child starts with every signal
 * disposition at its default and an empty mask, no inherited fds beyond
 * 0/1/2 (and the extra fds it is given, placed at 3, 4, ...), in its own
 * session or process group, and in tty mode with the PTY slave as its
 * controlling terminal.  Given a cgroup v2 directory it is born inside it
 * (clone3 with CLONE_INTO_CGROUP, so it never migrates: see spawn.c); given
 * cgroup.procs fds, it joins those cgroups before exec.
 */
#ifndef REIN_BASE_SPAWN_H
#define REIN_BASE_SPAWN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Which step of the child's set-up failed, for the error message. */
typedef enum spawn_step {
    SPAWN_STEP_NONE = 0,
    SPAWN_STEP_RESOLVE, /* program not found on PATH (parent side) */
    SPAWN_STEP_SETSID,
    SPAWN_STEP_CTTY,
    SPAWN_STEP_FDS,
    SPAWN_STEP_CHDIR,
    SPAWN_STEP_EXEC,
    SPAWN_STEP_CGROUP, /* joining a cgroup (cgroup_procs_fd, join_fds) */
    SPAWN_STEP_AFFINITY, /* taking back the parent's CPU mask (clone3) */
} spawn_step_t;

typedef enum spawn_group {
    SPAWN_SESSION = 0, /* setsid(): own session and process group */
    SPAWN_PGROUP,      /* setpgid(0, 0): own process group only */
    SPAWN_INHERIT,     /* stay in the parent's group (tests only) */
} spawn_group_t;

/* The most extra fds one child can be given (see spawn_opts.extra_fds). */
#define SPAWN_MAX_EXTRA_FDS 8

typedef struct spawn_opts {
    const char *file;     /* program; searched on PATH when it has no '/' */
    const char *const *argv; /* argv[0] included; NULL-terminated */
    const char *const *envp; /* NULL: the current environ */
    const char *cwd;      /* NULL: inherited */
    int fd_in;            /* -1: /dev/null */
    int fd_out;           /* -1: /dev/null */
    int fd_err;           /* -1: /dev/null */
    int ctty_fd;          /* >= 0: PTY slave to become the controlling tty */
    spawn_group_t group;  /* ctty_fd >= 0 requires SPAWN_SESSION */
    bool want_pidfd;      /* also open a pidfd (-1 if unsupported) */
    /* Extra fds for the child: extra_fds[i] becomes its fd 3 + i, with
     * CLOEXEC cleared; at most SPAWN_MAX_EXTRA_FDS.  The sources may be any
     * fds of ours, 0..2 and 3.. included. */
    const int *extra_fds;
    size_t n_extra_fds;
    /* A cgroup v2 directory (O_RDONLY|O_DIRECTORY) the child is born in,
     * or -1.  Where the kernel cannot do that (no clone3, valgrind, a v1
     * hierarchy) the child writes itself into cgroup_procs_fd, the same
     * cgroup's cgroup.procs (O_WRONLY), instead: give both. */
    int cgroup_fd;
    int cgroup_procs_fd;
    /* More files (O_WRONLY) the child writes "0" to before exec, so it is
     * inside those cgroups before it can fork anything: a v1 hierarchy's
     * cgroup.procs, or its `tasks` (the same move for the child, a single
     * thread, and much cheaper: see contain_run_new). */
    const int *join_fds;
    size_t n_join_fds;
} spawn_opts_t;

/* Initialises o to defaults: fds -1, no cgroup, session, pidfd wanted. */
void spawn_opts_init(spawn_opts_t *o);

/*
 * Starts the child.  On success *pid is set and, when asked and supported,
 * *pidfd (O_CLOEXEC) — else -1.  On failure returns -errno and, when step is
 * not NULL, the step that failed; no child is left behind.
 */
int spawn_start(const spawn_opts_t *o, pid_t *pid, int *pidfd,
                spawn_step_t *step);

/* Whether spawn_start starts a child directly in spawn_opts_t.cgroup_fd
 * on this build and kernel (clone3 with CLONE_INTO_CGROUP), rather than
 * having it write itself into cgroup_procs_fd.  Either way it ends there;
 * this is for tests and diagnostics. */
bool spawn_can_start_in_cgroup(void);

/* A short human word for a step ("exec", "chdir"). */
const char *spawn_step_name(spawn_step_t step);

/*
 * Reaps child pid (blocking until it has exited) and returns its wait
 * status as an exit code: the exit status, or 128 + signal.  pidfd may be
 * -1.  Returns a negative error if the child cannot be reaped.
 */
int spawn_reap(pid_t pid, int pidfd, int *code);

/* Turns waitid() info into the exit code convention above. */
int spawn_code_from_info(const siginfo_t *info);

/* Searches PATH (or /usr/bin:/bin) for file; writes the path into out. */
int spawn_resolve(const char *file, const char *path_env, char *out,
                  size_t size);

#endif

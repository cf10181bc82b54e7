/*
 * tutil.h — small helpers shared by the tests: run a child through spawn
 * and collect its output, read a pipe to EOF or one line of it; for the
 * protocol tests, read one line from a non-blocking fd while a loop runs;
 * and the judge of condensed output that the corpus and fixture tests
 * share (the rules, in one place, so both suites judge alike).
 */
#ifndef REIN_TEST_TUTIL_H
#define REIN_TEST_TUTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <stdint.h>

#include "base/buf.h"
#include "base/loop.h"
#include "base/spawn.h"

/* Spawns argv with stdout+stderr on a pipe, reads to EOF, reaps.  Returns
 * the exit code (>= 0) or a negative error; output in *out. */
int tu_run(spawn_opts_t *o, buf_t *out);
/* Spawns with o as the caller set it, stdout on a new pipe; fails the test
 * if it cannot start.  Returns the pipe's read end, and *pid and *pidfd
 * (pidfd may be NULL) for the reap. */
int tu_spawn_opts_piped(spawn_opts_t *o, pid_t *pid, int *pidfd);
/* Spawns argv in group with stdout on a new pipe and stdin on fd_in (-1:
 * /dev/null); fails the test if it cannot start.  Returns the pipe's read
 * end, and *pid and *pidfd (-1 where unsupported) for the reap. */
int tu_spawn_piped(const char *const *argv, spawn_group_t group, int fd_in,
                   pid_t *pid, int *pidfd);
/* Reads fd to EOF into out. */
int tu_read_all(int fd, buf_t *out);
/* Starts `sleep 60` as a child, a process to stand in for a run or an
 * owner; *pidfd for the reap (-1 where unsupported). */
pid_t tu_sleeper_start(int *pidfd);
/* tu_sleeper_start, and its start time in *start (its identity). */
pid_t tu_sleeper_timed(int *pidfd, uint64_t *start);
/* SIGKILLs and reaps a child from tu_sleeper_start. */
void tu_sleeper_stop(pid_t pid, int pidfd);
/* Starts the rein binary with args (NULL-terminated, "rein" not
 * included), stdout and stderr on one new pipe, whose read end it
 * returns; *pid for the reap. */
int tu_rein_start(const char *const *args, pid_t *pid);
/* The pid a process wrote to path (a file it renamed into place, or
 * wrote whole); fails the test on anything else. */
pid_t tu_read_pid_file(const char *path);
/* Waits for path to exist, at most timeout_ms (another process writes it
 * and no event tells this one: polled), then tu_read_pid_file. */
pid_t tu_await_pid_file(const char *path, uint64_t timeout_ms);

/* An owner and one running run of it, as a crash leaves them in the
 * registry: by default no lock file, so only the owner's process and its
 * lease can tell whether it lives. */
typedef struct tu_plant {
    const char *owner;    /* the owner id: 32 hex digits */
    const char *boot_id;  /* the owner's and the run's */
    pid_t owner_pid;
    uint64_t owner_start; /* 0: not recorded */
    int64_t lease_ms;
    pid_t run_pid;        /* the run's leader, group and session */
    uint64_t run_start;
    const char *lock_path; /* the owner's lock file, or NULL */
    uint64_t pid_ns;       /* the owner's pid namespace; 0: unknown */
} tu_plant_t;
/* Plants p in the registry of state_dir (pgid containment, command
 * "planted"); returns the run's id. */
int64_t tu_plant_run(const char *state_dir, const tu_plant_t *p);

/* Reads one line (without its newline) from the blocking fd, a byte at a
 * time so nothing after it is consumed: false on EOF before its first
 * byte; fails the test on EOF inside it or a line longer than size - 1. */
bool tu_try_read_line(int fd, char *buf, size_t size);
/* tu_try_read_line, failing the test on EOF. */
void tu_read_line(int fd, char *buf, size_t size);

/* Runs l until a whole line can be taken from the non-blocking fd (bytes
 * after it stay in acc for the next call) or timeout_ms pass.  Returns the
 * line without its '\n' (malloc'd) or NULL on timeout or EOF. */
char *tu_loop_read_line(loop_t *l, int fd, buf_t *acc, uint64_t timeout_ms);

/* The marker syntax of docs/markers.md. */
#define TU_MARKER_RE "^\\[rein\\] [a-z]+(?: .*)?$"
/* Whether the n bytes at line (no newline) are a marker in that syntax. */
bool tu_is_marker(const char *line, size_t n);

/* Reads a whole file into b (b->p is never NULL after success). */
bool tu_read_file(const char *path, buf_t *b);
/* The shipped grammars' directory (grammars/ beside the build dir) into
 * out; skips the test when there is none. */
void tu_shipped_grammars(char *out, size_t size);
struct grammar_set;
/* The shipped grammars, loaded (free with grammar_set_free); skips the
 * test when there are none. */
struct grammar_set *tu_shipped_set(void);
/* The condensed view of raw for command with the grammars set, exit code
 * exit_code, log path "/l": streamed, as `rein run` shows it, or deferred,
 * as `rein squash` (budget 0: capped to the input) and exec_command (a
 * budget in bytes) show it.  Into out (reset first; never NULL after). */
void tu_condense(const struct grammar_set *set, const char *command,
                 const buf_t *raw, bool streamed, size_t budget,
                 int exit_code, buf_t *out);
/* Puts the calling test (and what it forks) in a private mount namespace,
 * so it can mount as root without touching anyone else; the mounts vanish
 * with the test process.  Skips (a failure on CI) where no namespace can be
 * had, or where / is no mount of its own (a chroot into a plain directory:
 * making it private then fails with EINVAL). */
void tu_private_mounts(void);
/* Runs the rest of the calling test (and what it forks) without the v1
 * pids hierarchy: it is unmounted in a private mount namespace, so runs
 * get no pids cgroup and only the registry, the leader's tree and its
 * session lead to a member that left its run.  Skips (a failure on CI)
 * where no namespace can be had. */
void tu_hide_pids_hierarchy(void);
/* The most v1 pids mounts tu_hide_pids_hierarchy unmounts. */
#define TU_MAX_PIDS_MOUNTS 8
/* The command of a case: the part before a trailing "  (note)". */
void tu_case_command(json_t *cs, char *out, size_t cap);
/* What tu_judge measured. */
typedef struct tu_verdict {
    double ratio;        /* ceil(bytes / 4) out over in, after VT stripping */
    uint64_t in_tokens;
    uint64_t in_bytes;   /* the VT-stripped input, a '\n' per line */
} tu_verdict_t;
/* Judges one condensed output against a case (corpus case.json or a
 * fixture's .json): every must_keep regex matches (PCRE2, multiline),
 * every VT-stripped raw line matching keep_all_matching is kept verbatim,
 * `[rein] exit N` shows the case's exit code, and every emitted line is a
 * raw line or a marker.  Returns true when all hold; otherwise appends one
 * line per broken rule to why.  The ratio is measured, not judged. */
bool tu_judge(json_t *cs, const buf_t *raw, const buf_t *out, tu_verdict_t *v,
              buf_t *why);

/* Makes system call nr fail with err for the rest of the calling test
 * (and what it starts), as an older kernel would answer: every call when
 * arg < 0, else only calls whose argument arg (0..5) equals value.  A
 * seccomp filter (no_new_privs first); fails the test if it cannot be
 * had. */
#define TU_ANY_ARG (-1)
void tu_syscall_fails(long nr, int arg, unsigned value, int err);

#endif

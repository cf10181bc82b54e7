/*
 * procfs.h — reading /proc: identity, family and command line of a process.
 *
 * A pid alone names nothing for long: it is reused.  rein identifies a
 * process by pid plus start time (field 22 of /proc/<pid>/stat, in clock
 * ticks since boot) within one boot (boot_id), and reads children from
 * /proc/<pid>/task/<tid>/children of every thread, since a child belongs to
 * the thread that forked it.
 */
#ifndef REIN_BASE_PROCFS_H
#define REIN_BASE_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The length of a boot id ("xxxxxxxx-xxxx-...") plus its NUL. */
#define PROCFS_BOOT_ID_LEN 37
/* comm is at most 15 bytes plus NUL on Linux. */
#define PROCFS_COMM_LEN 16

typedef struct procfs_stat {
    pid_t pid;
    char comm[PROCFS_COMM_LEN];
    char state;          /* R S D Z T t X I ... */
    pid_t ppid;
    pid_t pgrp;
    pid_t session;
    int tty_nr;
    pid_t tpgid;         /* foreground process group of its tty, or -1 */
    unsigned flags;      /* field 9: the kernel's PF_* flags */
    uint64_t start_time; /* field 22: clock ticks after boot */
} procfs_stat_t;

/* PF_EXITING in procfs_stat_t.flags: the process has begun to exit (set
 * before it leaves its cgroup, and long before it is a zombie). */
#define PROCFS_PF_EXITING 0x00000004u

/* Reads /proc/<pid>/stat.  -ESRCH when the process is gone.  *out is
 * written whatever the result: zeroed first, so that no field is left
 * unwritten. */
int procfs_read_stat(pid_t pid, procfs_stat_t *out);
/* The start time alone (0 on failure); -ESRCH when gone. */
int procfs_start_time(pid_t pid, uint64_t *out);
/* True when pid exists, is not a zombie, and (if start_time != 0) started
 * at start_time. */
bool procfs_alive(pid_t pid, uint64_t start_time);
/* What is to become of a process, as far as the kernel says now. */
typedef enum procfs_fate {
    PROCFS_FATE_GONE,    /* gone, or another process has the pid now */
    PROCFS_FATE_RUNNING, /* nothing says it is about to end */
    /* On its way out: a zombie, past PF_EXITING, or with SIGKILL pending
     * (the kernel turns a fatal signal that is not blocked, such as a
     * terminal's SIGHUP to a process that neither ignores nor catches it,
     * into SIGKILL for every thread the moment it is sent, long before the
     * process runs again to die of it). */
    PROCFS_FATE_DYING,
    /* SIGHUP pending with its default action, but blocked for now (a
     * shell between vfork and exec blocks every signal): it ends once it
     * unblocks it, unless it takes it first another way (signalfd,
     * sigwait) and lives on. */
    PROCFS_FATE_HUP_BLOCKED,
} procfs_fate_t;

/* The fate of pid, if it started at start_time (unless 0). */
procfs_fate_t procfs_fate(pid_t pid, uint64_t start_time);
/* /proc/sys/kernel/random/boot_id into out (PROCFS_BOOT_ID_LEN bytes). */
int procfs_boot_id(char out[PROCFS_BOOT_ID_LEN]);
/* The inode of the caller's pid namespace (/proc/self/ns/pid): two
 * processes see the same pids only when theirs are equal. */
int procfs_pid_ns(uint64_t *ino);

/* Direct children of pid (of every thread).  *out malloc'ed; *n count. */
int procfs_children(pid_t pid, pid_t **out, size_t *n);
/* Every descendant of pid, parents before children (breadth-first).
 * Bounded by PROCFS_MAX_DESCENDANTS. */
int procfs_descendants(pid_t pid, pid_t **out, size_t *n);
#define PROCFS_MAX_DESCENDANTS 65536

/* argv from /proc/<pid>/cmdline as a NULL-terminated malloc'ed vector
 * (free with procfs_strv_free).  A kernel thread gives an empty vector. */
int procfs_cmdline(pid_t pid, char ***argv);
void procfs_strv_free(char **v);
/* readlink /proc/<pid>/exe into out; " (deleted)" suffix removed. */
int procfs_exe(pid_t pid, char *out, size_t size);
/* Reads a whole kernel text file (/proc, /sys: its size is not known in
 * advance) into a malloc'ed NUL-terminated buffer, its length in *len when
 * len is not NULL.  A file of max bytes is read; one byte more is
 * -E2BIG.  Otherwise -errno (ENOENT as is); *out is NULL on failure. */
int procfs_read_file(const char *path, char **out, size_t *len, size_t max);
/* Every pid on the system, ascending.  *out malloc'ed. */
int procfs_list_all(pid_t **out, size_t *n);

#endif

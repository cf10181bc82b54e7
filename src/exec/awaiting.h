/*
 * awaiting.h — is a run waiting for input?  Read from kernel state alone.
 *
 * Two front ends ask: the MCP sessions (session_check_input: a poll ends
 * early when the process is blocked at a prompt) and `rein run` (once its
 * own stdin has ended nobody can answer a prompt, so it answers a cooked
 * read with EOF and hangs up a raw one).  Both need the same fact, and
 * neither may guess it from the text: a process that printed "Password:"
 * and went on computing, or one asleep in nanosleep, is not waiting.
 *
 * The candidates are, in TTY mode, the processes of the terminal's
 * foreground process group (tpgid of the leader's /proc stat) among the
 * leader and its descendants; in pipe mode, the leader and all its
 * descendants.  A candidate is waiting for input when it sleeps (state S)
 * in a syscall (/proc/<pid>/syscall) that waits on an fd referring to
 * `input` — the PTY (same st_rdev, or /dev/tty while the PTY is its
 * controlling terminal) or our stdin pipe (same inode):
 *
 *   read/readv(fd)                  that fd;
 *   select/pselect6(n, readfds)     any fd set in readfds;
 *   poll/ppoll(fds, n)              any entry with POLLIN;
 *   epoll_wait/pwait(epfd)          any target fd with EPOLLIN in
 *                                   /proc/<pid>/fdinfo/<epfd>.
 *
 * fd sets and poll arrays are read from the process's memory
 * (process_vm_readv; allowed for our own descendants).  A process asleep
 * in anything else (nanosleep, wait4, a socket) is not waiting for input:
 * `sleep 30` never is.  Every thread of a candidate counts: a runtime that
 * reads its terminal in a thread of its own waits as much as one that
 * reads it in its first.
 *
 * Beyond yes or no, the answer says whether some candidate's wait can end
 * only by input (`sole`: a read, or a select/poll/epoll that watches
 * nothing but the input, or beside it only fds the process itself makes
 * ready while nothing else of it can be woken from outside: idle node)
 * and whether that wait, or a sibling thread's sleep, has a timeout.
 * `rein run` hangs up only such a wait: ssh polling the terminal and its
 * socket, or an editor watching its language server, may still be woken by
 * the other side, and a terminal query with a timeout ends by itself.
 */
#ifndef REIN_EXEC_AWAITING_H
#define REIN_EXEC_AWAITING_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Candidates (asleep, and on a terminal in its foreground group) whose
 * syscall is examined per check; the rest of the tree is only stat'ed. */
#define AWAITING_SCAN_MAX_PROCS 64
/* poll(2) entries read from a blocked process when looking for its input;
 * a poll over more is taken as watching something else too. */
#define AWAITING_POLL_MAX_FDS 64
/* Threads of one candidate looked at; a process with more is taken as
 * doing something else too. */
#define AWAITING_THREADS_MAX 256
/* A process's fds numbered below this are looked through for the other
 * end of a pipe or unix socket it waits on (a self-pipe); an end held
 * only on a higher fd is not seen, and the pipe counts as one from
 * elsewhere. */
#define AWAITING_FD_SCAN_MAX 1024
/* Bytes of the kernel's answer about one unix socket (sock_diag): its
 * message and the peer attribute, with room to spare. */
#define AWAITING_DIAG_REPLY 1024

typedef struct awaiting {
    bool waiting; /* some candidate sleeps in a wait on the input */
    /* Of the waits on the input, one watches nothing else (a read, or a
     * select/poll/epoll whose every fd is the input), so only input or
     * its own timeout can end it. */
    bool sole;
    bool timed; /* that sole wait has a timeout (select, poll, epoll) */
    /* That sole wait is a read/readv, never marked timed here: on a
     * terminal its VMIN and VTIME decide, which the caller knows. */
    bool read;
    /* That sole wait relies on the process's own wake-ups: beside the
     * input it watches fds only the process readies, or other threads of
     * it sleep (an event loop's runtime at rest, see awaiting.c). */
    bool internal;
    pid_t pid; /* the process reported on (the sole waiter first); 0 */
} awaiting_t;

/* Looks at the candidates of the run led by leader (see the top of
 * file), stopping at the first untimed sole wait that is not a read (a
 * read's timing is the terminal's).  *out is the answer (all false when
 * nothing waits); 0, or -ESRCH when the leader is gone. */
int awaiting_scan(pid_t leader, bool tty, const struct stat *input,
                  awaiting_t *out);

#endif

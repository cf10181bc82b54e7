/*
 * contain.c — containment levels and per-run boundaries (see contain.h).
 *
 * Detection happens once, in contain_open, by doing what a run will need
 * rather than by guessing from versions: the cgroup2 mount is looked up in
 * /proc/self/mountinfo, rein's own cgroup in /proc/self/cgroup, and an
 * instance cgroup <own>/rein/<pid>.<start time> is actually created (the
 * probe).  That instance directory keeps the leaves of concurrent rein
 * processes apart even when their run ids collide (two state dirs), and the
 * pid plus start time in its name cannot repeat within a boot.  The same
 * layout is made in the v1 pids hierarchy when it is writable, for the
 * per-run task limit.
 *
 * Nothing here signals a process because of its pid alone: a member read
 * from cgroup.procs is pinned with a pidfd, its membership re-read from
 * /proc/<pid>/cgroup, and only then signalled (see contain_signal_member).
 */
#include "supervise/contain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/procfs.h"

/* The environment variable that forces a level. */
#define CONTAIN_ENV "REIN_CONTAINMENT"
/* REIN_CGROUP_KILL=0 pretends cgroup.kill is missing (kernels < 5.14), so
 * the signalling fallback can be exercised anywhere. */
#define CONTAIN_KILL_ENV "REIN_CGROUP_KILL"
/* rein's directory under its own cgroup, in every hierarchy it uses. */
#define CONTAIN_PARENT_DIR "rein"
/* Room for the detection notes (why a better level was not taken). */
#define CONTAIN_NOTE_LEN 1024
/* mkdir rein/ then rein/<instance>: another rein may remove an empty rein/
 * between the two, so the pair is retried a few times. */
#define CONTAIN_MKDIR_RETRIES 8
/* Passes of the signalling kill before giving up with -EAGAIN: each pass
 * catches one generation forked while the previous one was being killed. */
#define CONTAIN_KILL_MAX_PASSES 256
/* The largest cgroup.procs or mountinfo read, as a sanity bound. */
#define CONTAIN_MAX_FILE (16u << 20)
/* Mode of the cgroup directories rein creates. */
#define CONTAIN_DIR_MODE 0755

/* One cgroup hierarchy rein uses: the v2 one, or v1 with `pids`. */
typedef struct contain_hier {
    bool ok;                /* the instance cgroup exists and is usable */
    char mount[PATH_MAX];   /* where the hierarchy is mounted */
    char mroot[PATH_MAX];   /* the hierarchy path mounted there ("/") */
    char self[PATH_MAX];    /* rein's own cgroup, as /proc/self/cgroup says */
    char inst[PATH_MAX];    /* rein's instance cgroup, same notation */
} contain_hier_t;

struct contain {
    contain_level_t level;
    bool set_subreaper;  /* turned on by us: contain_free turns it off */
    bool has_kill;       /* cgroup.kill exists (kernel >= 5.14) */
    contain_hier_t v2;
    bool v2_looked;      /* contain_locate tried v2 (contain_run_attach) */
    contain_hier_t pids;
    char note[CONTAIN_NOTE_LEN];
};

struct contain_run {
    contain_level_t level;
    int64_t id;
    bool has_kill;
    char v2_rel[PATH_MAX];   /* "" when the run has no v2 leaf */
    char v2_dir[PATH_MAX];
    char pids_rel[PATH_MAX]; /* "" when the run has no pids cgroup */
    char pids_dir[PATH_MAX];
    int v2_dir_fd;           /* the leaf itself: the child is born in it */
    int v2_procs_fd;         /* cgroup.procs, O_WRONLY: the fallback join */
    int pids_tasks_fd;       /* tasks of the pids cgroup: the join (why:
                                contain_run_new) */
    int events_fd;           /* cgroup.events of the v2 leaf */
};

/* A process the signalling kill has already sent SIGKILL to. */
typedef struct contain_sent {
    pid_t pid;
    uint64_t start_time;
} contain_sent_t;

/* Numbers the contain_t of this process (see contain_open_why). */
static unsigned contain_seq;

/* ------------------------------------------------------------ small utils */

/* Appends a note to out, "; "-separated, truncating quietly (notes are
 * for people; a cut one still names its subject first). */
__attribute__((format(printf, 3, 4))) static void
contain_say(char *out, size_t size, const char *fmt, ...)
{
    if (!out || !size)
        return;
    size_t len = strlen(out);
    if (len && len + 2 < size) {
        memcpy(out + len, "; ", 3);
        len += 2;
    }
    if (len + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + len, size - len, fmt, ap);
    va_end(ap);
}

static int contain_write_str(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = strlen(s);
    ssize_t w;
    do
        w = write(fd, s, len);
    while (w < 0 && errno == EINTR);
    int rc = w < 0 ? -errno : (size_t)w == len ? 0 : -EIO;
    close(fd);
    return rc;
}

/* path = a + "/" + b, refusing truncation. */
static int contain_path(char *out, size_t size, const char *a, const char *b)
{
    int n = snprintf(out, size, "%s/%s", a, b);
    return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* True when path is cgroup base or below it. */
static bool contain_within(const char *path, const char *base)
{
    size_t bl = strlen(base);
    if (!strcmp(base, "/"))
        return path[0] == '/';
    return !strncmp(path, base, bl) && (path[bl] == 0 || path[bl] == '/');
}

/* The directory of cgroup rel (as /proc/<pid>/cgroup names it) in h. */
static int contain_dir_of(const contain_hier_t *h, const char *rel, char *out,
                          size_t size)
{
    const char *rest = rel;
    if (strcmp(h->mroot, "/")) {
        /* Only part of the hierarchy is mounted (a bind mount): rel must
         * lie inside it to have a directory at all. */
        if (!contain_within(rel, h->mroot))
            return -ENOENT;
        rest = rel + strlen(h->mroot);
    }
    int n = snprintf(out, size, "%s%s", h->mount, strcmp(rest, "/") ? rest : "");
    return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* cgroup a + "/" + b in /proc/<pid>/cgroup notation (no "//"). */
static int contain_rel_join(char *out, size_t size, const char *a,
                            const char *b)
{
    int n = snprintf(out, size, "%s/%s", strcmp(a, "/") ? a : "", b);
    return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* ------------------------------------------------- /proc/<pid>/cgroup */

/* True when the comma-separated list has item. */
static bool contain_list_has(const char *list, size_t len, const char *item)
{
    size_t il = strlen(item);
    const char *p = list, *end = list + len;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        if ((size_t)(e - p) == il && !memcmp(p, item, il))
            return true;
        p = e + 1;
    }
    return false;
}

/*
 * The cgroup of pid in one hierarchy: the v2 one (controller NULL, the
 * "0::" line) or the v1 one carrying controller.  -ESRCH when pid is gone,
 * -ENOENT when it has no such hierarchy.
 */
static int contain_cgroup_line(pid_t pid, const char *controller, char *out,
                               size_t size)
{
    char path[64], *text;
    int rc;
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%ld/cgroup", (long)pid);
    else
        snprintf(path, sizeof path, "/proc/self/cgroup");
    rc = procfs_read_file(path, &text, NULL, CONTAIN_MAX_FILE);
    if (rc < 0)
        return rc == -ENOENT ? -ESRCH : rc;
    rc = -ENOENT;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        /* hierarchy-id ":" controller-list ":" path */
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        size_t clen = (size_t)(c2 - c1 - 1);
        bool match = controller
                         ? contain_list_has(c1 + 1, clen, controller)
                         : (clen == 0 && !strncmp(line, "0:", 2));
        if (!match)
            continue;
        if (strlen(c2 + 1) >= size) {
            rc = -ENAMETOOLONG;
            break;
        }
        strcpy(out, c2 + 1);
        rc = 0;
        break;
    }
    free(text);
    return rc;
}

int contain_cgroup_of(pid_t pid, char *out, size_t size)
{
    if (pid <= 0)
        return -EINVAL;
    return contain_cgroup_line(pid, NULL, out, size);
}

/* ------------------------------------------------------------ mountinfo */

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void contain_unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' &&
            r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
}

/*
 * Finds a mount of fstype (with super option opt, when not NULL) whose
 * mounted root contains h->self, and fills h->mount and h->mroot.
 */
static int contain_find_mount(contain_hier_t *h, const char *fstype,
                              const char *opt)
{
    char *text;
    int rc = procfs_read_file("/proc/self/mountinfo", &text, NULL,
                              CONTAIN_MAX_FILE);
    if (rc < 0)
        return rc;
    rc = -ENOENT;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        /* id parent maj:min root mountpoint options [optional...] - type
         * source super-options */
        char *f[5], *save = NULL, *sep = strstr(line, " - ");
        if (!sep)
            continue;
        *sep = 0;
        char *tail = sep + 3;
        int nf = 0;
        for (char *t = strtok_r(line, " ", &save); t && nf < 5;
             t = strtok_r(NULL, " ", &save))
            f[nf++] = t;
        if (nf < 5)
            continue;
        char *type = strtok_r(tail, " ", &save);
        char *source = type ? strtok_r(NULL, " ", &save) : NULL;
        char *sopts = source ? strtok_r(NULL, " ", &save) : NULL;
        if (!type || strcmp(type, fstype))
            continue;
        if (opt && (!sopts || !contain_list_has(sopts, strlen(sopts), opt)))
            continue;
        contain_unescape(f[3]);
        contain_unescape(f[4]);
        if (!contain_within(h->self, f[3]))
            continue;
        if (strlen(f[3]) >= sizeof h->mroot || strlen(f[4]) >= sizeof h->mount) {
            rc = -ENAMETOOLONG;
            continue;
        }
        strcpy(h->mroot, f[3]);
        strcpy(h->mount, f[4]);
        rc = 0;
        break;
    }
    free(text);
    return rc;
}

/* ------------------------------------------------------------ detection */

/* mkdir that accepts an existing directory: 1 when it was made, 0 when
 * it existed, or a negative error. */
static int contain_mkdir(const char *path)
{
    if (mkdir(path, CONTAIN_DIR_MODE) == 0)
        return 1;
    return errno == EEXIST ? 0 : -errno;
}

/*
 * Whether instance directory name (contain_open's "<pid>.<start>.<seq>"
 * and, from this build on, ".<pid namespace>") names a rein that is gone:
 * its pid and start time name no live process here.  A rein in another
 * pid namespace (a container sharing our cgroup) is not ours to judge by
 * pid, and neither is one whose namespace we cannot read; a name without
 * one (an older build's) is judged as before.
 */
static bool contain_instance_gone(const char *name, uint64_t my_ns)
{
    char *end;
    long pid = strtol(name, &end, 10);
    if (pid <= 0 || *end != '.')
        return false;
    unsigned long long start = strtoull(end + 1, &end, 10);
    if (*end != '.')
        return false;
    strtoul(end + 1, &end, 10); /* the sequence number */
    if (*end == '.') {
        unsigned long long ns = strtoull(end + 1, &end, 10);
        if (*end || ns != my_ns || !my_ns)
            return false;
    }
    uint64_t now;
    return !(procfs_start_time((pid_t)pid, &now) == 0 && now == start);
}

/*
 * Removes what a rein that died left in rein/: the instance directories
 * that name no live process (contain_instance_gone), with their empty
 * leaves.  A populated leaf survives rmdir (EBUSY), and with it its
 * instance: those processes are for reconcile, which knows the run.
 * Nothing here can touch a live rein's directories, since its pid and
 * start time still match.
 */
static void contain_sweep_stale(const contain_hier_t *h)
{
    char parent[PATH_MAX], pdir[PATH_MAX], idir[PATH_MAX], leaf[PATH_MAX];
    if (contain_rel_join(parent, sizeof parent, h->self, CONTAIN_PARENT_DIR) < 0 ||
        contain_dir_of(h, parent, pdir, sizeof pdir) < 0)
        return;
    DIR *d = opendir(pdir);
    if (!d)
        return;
    uint64_t my_ns = 0;
    procfs_pid_ns(&my_ns); /* 0 when unknown: sweeps no named namespace */
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!contain_instance_gone(e->d_name, my_ns))
            continue;
        if (contain_path(idir, sizeof idir, pdir, e->d_name) < 0)
            continue;
        DIR *inst = opendir(idir);
        if (!inst)
            continue;
        struct dirent *le;
        while ((le = readdir(inst)))
            if (!strncmp(le->d_name, "run-", 4) &&
                contain_path(leaf, sizeof leaf, idir, le->d_name) == 0)
                rmdir(leaf);
        closedir(inst);
        rmdir(idir);
    }
    closedir(d);
}

/*
 * Creates <self>/rein/<inst> in h.  The parent is shared by every rein
 * under this cgroup; the instance directory is ours alone.
 */
static int contain_make_instance(contain_hier_t *h, const char *inst_name)
{
    char rel[PATH_MAX], dir[PATH_MAX], parent[PATH_MAX];
    int rc;
    bool made_parent = false;
    if ((rc = contain_rel_join(parent, sizeof parent, h->self,
                               CONTAIN_PARENT_DIR)) < 0 ||
        (rc = contain_rel_join(rel, sizeof rel, parent, inst_name)) < 0)
        return rc;
    for (int i = 0; i < CONTAIN_MKDIR_RETRIES; i++) {
        if ((rc = contain_dir_of(h, parent, dir, sizeof dir)) < 0 ||
            (rc = contain_mkdir(dir)) < 0)
            return rc;
        made_parent = rc == 1;
        if ((rc = contain_dir_of(h, rel, dir, sizeof dir)) < 0)
            return rc;
        rc = contain_mkdir(dir);
        if (rc != -ENOENT)
            break;
    }
    if (rc < 0)
        return rc;
    strcpy(h->inst, rel);
    h->ok = true;
    /* A rein/ we made was empty: nothing stale can be in it (an instance
     * made since is a live rein's).  That saves a one-shot shell_exec
     * eight system calls when no other rein shares our cgroup. */
    if (!made_parent)
        contain_sweep_stale(h);
    return 0;
}

/* Removes h's instance directory, and rein/ when no other rein uses it. */
static void contain_drop_instance(contain_hier_t *h)
{
    char dir[PATH_MAX], parent[PATH_MAX];
    if (!h->ok)
        return;
    h->ok = false;
    if (contain_dir_of(h, h->inst, dir, sizeof dir) < 0)
        return;
    /* EBUSY when a run was not freed: its leaf stays, and so do we. */
    if (rmdir(dir) < 0)
        return;
    if (contain_rel_join(parent, sizeof parent, h->self, CONTAIN_PARENT_DIR) ==
            0 &&
        contain_dir_of(h, parent, dir, sizeof dir) == 0)
        rmdir(dir); /* EBUSY while another rein has its instance there */
}

/* Whether cgroup.kill in cgroup directory dir can be used (it exists:
 * kernel >= 5.14, and REIN_CGROUP_KILL=0 does not hide it). */
static bool contain_kill_usable(const char *dir)
{
    char file[PATH_MAX];
    const char *e = getenv(CONTAIN_KILL_ENV);
    return !(e && !strcmp(e, "0")) &&
           contain_path(file, sizeof file, dir, "cgroup.kill") == 0 &&
           access(file, W_OK) == 0;
}

/* Finds h's mount (fstype, with super option opt when not NULL) and our
 * own cgroup in it, without making anything there: enough to reach the
 * leaves other rein processes made (contain_run_attach). */
static void contain_locate(contain_hier_t *h, const char *fstype,
                           const char *opt)
{
    if (contain_cgroup_line(0, opt, h->self, sizeof h->self) < 0 ||
        contain_find_mount(h, fstype, opt) < 0)
        h->mount[0] = h->mroot[0] = 0;
}

/* The v1 pids hierarchy: a per-run task limit at any level. */
static void contain_setup_pids(contain_t *c, const char *inst_name)
{
    contain_hier_t *h = &c->pids;
    char dir[PATH_MAX], probe[PATH_MAX];
    int rc = contain_cgroup_line(0, "pids", h->self, sizeof h->self);
    if (rc < 0) {
        contain_say(c->note, sizeof c->note, "pids: no v1 pids hierarchy");
        return;
    }
    if ((rc = contain_find_mount(h, "cgroup", "pids")) < 0) {
        contain_say(c->note, sizeof c->note, "pids: no mount of %s (%s)",
                    h->self, strerror(-rc));
        return;
    }
    if ((rc = contain_make_instance(h, inst_name)) < 0) {
        contain_say(c->note, sizeof c->note, "pids: cannot create %s/%s in %s (%s)",
                    CONTAIN_PARENT_DIR, inst_name, h->mount, strerror(-rc));
        return;
    }
    /* A v1 hierarchy without pids.max would give no limit at all. */
    if (contain_dir_of(h, h->inst, dir, sizeof dir) < 0 ||
        contain_path(probe, sizeof probe, dir, "pids.max") < 0 ||
        access(probe, W_OK) < 0) {
        contain_say(c->note, sizeof c->note, "pids: pids.max not writable");
        contain_drop_instance(h);
    }
}

/* The v2 hierarchy: the cgroup level.  0 or -ENOTSUP with a note. */
static int contain_setup_v2(contain_t *c, const char *inst_name)
{
    contain_hier_t *h = &c->v2;
    char dir[PATH_MAX], file[PATH_MAX], *type = NULL;
    int rc = contain_cgroup_line(0, NULL, h->self, sizeof h->self);
    if (rc < 0) {
        contain_say(c->note, sizeof c->note,
                    "cgroup: no cgroup v2 line in /proc/self/cgroup");
        return -ENOTSUP;
    }
    if ((rc = contain_find_mount(h, "cgroup2", NULL)) < 0) {
        contain_say(c->note, sizeof c->note,
                    "cgroup: no cgroup2 mount holding %s in "
                    "/proc/self/mountinfo",
                    h->self);
        return -ENOTSUP;
    }
    /* Moving a process between cgroups, or starting one in another
     * (CLONE_INTO_CGROUP), needs write access to cgroup.procs of their
     * common ancestor, which is our own cgroup: without it (an undelegated
     * subtree) every spawn would fail. */
    if ((rc = contain_dir_of(h, h->self, dir, sizeof dir)) < 0 ||
        (rc = contain_path(file, sizeof file, dir, "cgroup.procs")) < 0 ||
        access(file, W_OK) < 0) {
        contain_say(c->note, sizeof c->note,
                    "cgroup: %s/cgroup.procs not writable (not delegated)",
                    dir);
        return -ENOTSUP;
    }
    if ((rc = contain_make_instance(h, inst_name)) < 0) {
        contain_say(c->note, sizeof c->note,
                    "cgroup: cannot create %s/%s/%s (%s)", dir,
                    CONTAIN_PARENT_DIR, inst_name, strerror(-rc));
        return -ENOTSUP;
    }
    /* Under a threaded cgroup the leaves would be threaded too, and a
     * whole process cannot join a threaded cgroup. */
    if ((rc = contain_dir_of(h, h->inst, dir, sizeof dir)) < 0 ||
        (rc = contain_path(file, sizeof file, dir, "cgroup.type")) < 0 ||
        (rc = procfs_read_file(file, &type, NULL, CONTAIN_MAX_FILE)) < 0 ||
        strncmp(type, "domain\n", 7)) {
        if (type)
            type[strcspn(type, "\n")] = 0;
        contain_say(c->note, sizeof c->note,
                    "cgroup: %s is not a domain cgroup (%s)", dir,
                    type ? type : strerror(-rc));
        free(type);
        contain_drop_instance(h);
        return -ENOTSUP;
    }
    free(type);
    c->has_kill = contain_kill_usable(dir);
    if (!c->has_kill)
        contain_say(c->note, sizeof c->note,
                    "cgroup: no cgroup.kill, killing by signals");
    return 0;
}

int contain_level_parse(const char *name, contain_level_t *out)
{
    if (!name)
        return -EINVAL;
    if (!strcmp(name, "cgroup"))
        *out = CONTAIN_CGROUP;
    else if (!strcmp(name, "subreaper"))
        *out = CONTAIN_SUBREAPER;
    else if (!strcmp(name, "pgid"))
        *out = CONTAIN_PGID;
    else
        return -EINVAL;
    return 0;
}

const char *contain_level_name(contain_level_t level)
{
    switch (level) {
    case CONTAIN_PGID: return "pgid";
    case CONTAIN_SUBREAPER: return "subreaper";
    case CONTAIN_CGROUP: return "cgroup";
    }
    return "unknown";
}

int contain_open_why(const char *force, contain_t **out, char *why,
                     size_t why_size)
{
    contain_level_t want = 0;
    contain_t *c = NULL;
    char inst[96];
    uint64_t start = 0, ns = 0;
    int rc;

    *out = NULL;
    if (why && why_size)
        why[0] = 0;
    if (!force) {
        force = getenv(CONTAIN_ENV);
        if (force && !*force)
            force = NULL;
    }
    if (force && contain_level_parse(force, &want) < 0) {
        contain_say(why, why_size,
                    "unknown containment level \"%s\" (cgroup, subreaper, "
                    "pgid)",
                    force);
        return -EINVAL;
    }
    c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    procfs_start_time(getpid(), &start);
    procfs_pid_ns(&ns);
    /* The sequence number keeps two supervisors of one process apart; the
     * pid namespace says where the pid means this process
     * (contain_instance_gone). */
    snprintf(inst, sizeof inst, "%ld.%llu.%u.%llu", (long)getpid(),
             (unsigned long long)start,
             __atomic_fetch_add(&contain_seq, 1, __ATOMIC_RELAXED),
             (unsigned long long)ns);

    contain_setup_pids(c, inst);
    if (!want || want == CONTAIN_CGROUP) {
        if (contain_setup_v2(c, inst) == 0)
            c->level = CONTAIN_CGROUP;
        else if (want == CONTAIN_CGROUP) {
            rc = -ENOTSUP;
            goto fail;
        }
    }
    if (want != CONTAIN_PGID) {
        /* Orphans of a run come to us at the cgroup level too: they must
         * be reaped by someone who knows whose they are. */
        int on = 0;
        /* all five arguments given: glibc's prctl is variadic, and the
         * kernel (and valgrind) read the ones left out from garbage */
        prctl(PR_GET_CHILD_SUBREAPER, &on, 0, 0, 0);
        if (on || prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0) {
            c->set_subreaper = !on;
            if (!c->level)
                c->level = CONTAIN_SUBREAPER;
        } else {
            contain_say(c->note, sizeof c->note,
                        "subreaper: PR_SET_CHILD_SUBREAPER: %s",
                        strerror(errno));
            if (want == CONTAIN_SUBREAPER) {
                rc = -ENOTSUP;
                goto fail;
            }
        }
    }
    if (!c->level)
        c->level = CONTAIN_PGID;
    *out = c;
    return 0;
fail:
    contain_say(why, why_size, "%s", c->note);
    contain_free(c);
    return rc;
}

int contain_open(const char *force, contain_t **out)
{
    return contain_open_why(force, out, NULL, 0);
}

void contain_free(contain_t *c)
{
    if (!c)
        return;
    contain_drop_instance(&c->v2);
    contain_drop_instance(&c->pids);
    if (c->set_subreaper)
        prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    free(c);
}

contain_level_t contain_level(const contain_t *c)
{
    return c->level;
}

bool contain_has_pids_limit(const contain_t *c)
{
    return c->pids.ok;
}

const char *contain_note(const contain_t *c)
{
    return c->note;
}

const char *contain_cgroup2_mount(const contain_t *c)
{
    return c->level == CONTAIN_CGROUP ? c->v2.mount : NULL;
}

const char *contain_instance_cgroup(const contain_t *c)
{
    return c->level == CONTAIN_CGROUP && c->v2.ok ? c->v2.inst : NULL;
}

const char *contain_instance_pids_cgroup(const contain_t *c)
{
    return c->pids.ok ? c->pids.inst : NULL;
}

/* ----------------------------------------------------------------- runs */

/* Makes leaf run-<id> under h's instance; rel and dir receive its names. */
static int contain_make_leaf(const contain_hier_t *h, int64_t id, char *rel,
                             char *dir)
{
    char name[32];
    int rc;
    snprintf(name, sizeof name, "run-%lld", (long long)id);
    if ((rc = contain_rel_join(rel, PATH_MAX, h->inst, name)) < 0 ||
        (rc = contain_dir_of(h, rel, dir, PATH_MAX)) < 0)
        return rc;
    /* EEXIST is an error here: a leaf is never shared between runs. */
    if (mkdir(dir, CONTAIN_DIR_MODE) < 0) {
        rc = -errno;
        rel[0] = dir[0] = 0;
        return rc;
    }
    return 0;
}

static int contain_open_in(const char *dir, const char *file, int flags)
{
    char path[PATH_MAX];
    int rc = contain_path(path, sizeof path, dir, file);
    if (rc < 0)
        return rc;
    int fd = open(path, flags | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int contain_run_new(contain_t *c, int64_t run_id, uint32_t pids_max,
                    contain_run_t **out)
{
    contain_run_t *r;
    char file[PATH_MAX], num[32];
    int rc;

    *out = NULL;
    if (run_id < 0)
        return -EINVAL;
    r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->level = c->level;
    r->id = run_id;
    r->has_kill = c->has_kill;
    r->v2_dir_fd = r->v2_procs_fd = r->pids_tasks_fd = r->events_fd = -1;

    if (c->level == CONTAIN_CGROUP) {
        if ((rc = contain_make_leaf(&c->v2, run_id, r->v2_rel, r->v2_dir)) < 0)
            goto fail;
        if ((rc = r->v2_dir_fd =
                 contain_open_in(r->v2_dir, ".", O_RDONLY | O_DIRECTORY)) < 0 ||
            (rc = r->v2_procs_fd =
                 contain_open_in(r->v2_dir, "cgroup.procs", O_WRONLY)) < 0 ||
            (rc = r->events_fd =
                 contain_open_in(r->v2_dir, "cgroup.events", O_RDONLY)) < 0)
            goto fail;
    }
    if (c->pids.ok) {
        if ((rc = contain_make_leaf(&c->pids, run_id, r->pids_rel,
                                    r->pids_dir)) < 0)
            goto fail;
        snprintf(num, sizeof num, "%lu",
                 (unsigned long)(pids_max ? pids_max : CONTAIN_DEFAULT_PIDS_MAX));
        if ((rc = contain_path(file, sizeof file, r->pids_dir, "pids.max")) < 0 ||
            (rc = contain_write_str(file, num)) < 0)
            goto fail;
        /* The child joins by writing "0" to `tasks`, which moves the
         * calling thread alone, not to cgroup.procs.  For the child, a
         * single thread before exec, that is the same move; but the
         * kernel (6.x) takes its global threadgroup lock only to move a
         * whole process, and that lock waits for an RCU grace period
         * after a quiet spell: 5-8 ms here after 100 ms of quiet, against
         * 7-30 us for `tasks` (see docs/bench.md). */
        if ((rc = r->pids_tasks_fd =
                 contain_open_in(r->pids_dir, "tasks", O_WRONLY)) < 0)
            goto fail;
    }
    *out = r;
    return 0;
fail:
    contain_run_free(r);
    return rc;
}

/* True when s[0..len) is one or more digits. */
static bool contain_all_digits(const char *s, size_t len)
{
    if (!len)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* True when the len bytes at name are an instance's name as contain_open
 * makes it, <pid>.<start>.<n>.<pid namespace>, or as older builds did,
 * without the namespace: three or four fields of digits. */
static bool contain_is_instance_name(const char *name, size_t len)
{
    size_t fields = 0;
    for (size_t at = 0; at <= len; fields++) {
        const char *dot = memchr(name + at, '.', len - at);
        size_t n = dot ? (size_t)(dot - (name + at)) : len - at;
        if (!contain_all_digits(name + at, n))
            return false;
        at += n + 1;
    }
    return fields == 3 || fields == 4;
}

/*
 * True when rel names the leaf rein makes for run run_id, wherever it lies
 * in the hierarchy: .../rein/<instance>/run-<run_id>, every
 * component plain (none empty, "." or "..").  The leaf need not be under
 * our own cgroup: reconcile and `rein kill` may run in another cgroup
 * (another terminal's or service's scope) than the rein that made it.
 * Anything else a registry record could name is refused: attaching would
 * aim rein's kill at a cgroup it never made.
 */
static bool contain_is_run_leaf(const char *rel, int64_t run_id)
{
    const char *comp[3] = {NULL, NULL, NULL};
    size_t clen[3] = {0, 0, 0}, n = 0;
    if (!rel || rel[0] != '/')
        return false;
    for (const char *p = rel + 1;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (!len || (len == 1 && p[0] == '.') ||
            (len == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        /* The last three components, oldest first. */
        comp[0] = comp[1];
        clen[0] = clen[1];
        comp[1] = comp[2];
        clen[1] = clen[2];
        comp[2] = p;
        clen[2] = len;
        n++;
        if (!slash)
            break;
        p = slash + 1;
    }
    if (n < 3 || clen[0] != strlen(CONTAIN_PARENT_DIR) ||
        memcmp(comp[0], CONTAIN_PARENT_DIR, clen[0]) != 0)
        return false;
    if (!contain_is_instance_name(comp[1], clen[1]))
        return false;
    char want[32];
    int wl = snprintf(want, sizeof want, "run-%lld", (long long)run_id);
    return run_id >= 0 && wl > 0 && clen[2] == (size_t)wl &&
           !memcmp(comp[2], want, clen[2]);
}

int contain_run_attach(contain_t *c, int64_t run_id, const char *v2_rel,
                       const char *pids_rel, contain_run_t **out)
{
    *out = NULL;
    contain_run_t *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->level = c->level;
    r->id = run_id;
    r->v2_dir_fd = r->v2_procs_fd = r->pids_tasks_fd = r->events_fd = -1;
    /* Below the cgroup level (forced, or where v2 failed before its mount
     * was found) the v2 hierarchy is still looked up, here: reconcile and
     * `rein kill` must reach the leaves of runs another rein made at the
     * cgroup level, whatever level this one runs at.  Only here, since two
     * /proc reads cost a library shell or PTY session 50 us per open on a
     * slow VM, and most supervisors never attach. */
    if (!c->v2.mount[0] && !c->v2_looked) {
        contain_locate(&c->v2, "cgroup2", NULL);
        c->v2_looked = true;
    }
    struct stat st;
    if (v2_rel && *v2_rel && c->v2.mount[0] &&
        contain_is_run_leaf(v2_rel, run_id) &&
        contain_dir_of(&c->v2, v2_rel, r->v2_dir, sizeof r->v2_dir) == 0 &&
        stat(r->v2_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(r->v2_rel, sizeof r->v2_rel, "%s", v2_rel);
        /* The leaf's own kernel decides, not this rein's level. */
        r->has_kill = contain_kill_usable(r->v2_dir);
        r->events_fd = contain_open_in(r->v2_dir, "cgroup.events", O_RDONLY);
        if (r->events_fd < 0)
            r->events_fd = -1;
    } else {
        r->v2_dir[0] = 0;
    }
    if (pids_rel && *pids_rel && c->pids.mount[0] &&
        contain_is_run_leaf(pids_rel, run_id) &&
        contain_dir_of(&c->pids, pids_rel, r->pids_dir, sizeof r->pids_dir) == 0 &&
        stat(r->pids_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(r->pids_rel, sizeof r->pids_rel, "%s", pids_rel);
    } else {
        r->pids_dir[0] = 0;
    }
    if (!r->v2_dir[0] && !r->pids_dir[0]) {
        free(r);
        return -ENOENT;
    }
    *out = r;
    return 0;
}

contain_level_t contain_run_level(const contain_run_t *r)
{
    return r->level;
}

void contain_run_spawn_opts(const contain_run_t *r, spawn_opts_t *o,
                            int join[CONTAIN_MAX_JOIN_FDS])
{
    if (r->v2_dir_fd >= 0 && r->v2_procs_fd >= 0) {
        o->cgroup_fd = r->v2_dir_fd;
        o->cgroup_procs_fd = r->v2_procs_fd;
    }
    if (r->pids_tasks_fd >= 0) {
        join[0] = r->pids_tasks_fd;
        o->join_fds = join;
        o->n_join_fds = 1;
    }
}

const char *contain_run_cgroup(const contain_run_t *r)
{
    return r->v2_rel[0] ? r->v2_rel : NULL;
}

const char *contain_run_pids_cgroup(const contain_run_t *r)
{
    return r->pids_rel[0] ? r->pids_rel : NULL;
}

int contain_run_events_fd(const contain_run_t *r)
{
    return r->events_fd;
}

static int contain_cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* Appends the pids listed in dir/cgroup.procs to *v. */
static int contain_read_procs(const char *dir, pid_t **v, size_t *n,
                              size_t *cap)
{
    char path[PATH_MAX], *text;
    int rc;
    if ((rc = contain_path(path, sizeof path, dir, "cgroup.procs")) < 0 ||
        (rc = procfs_read_file(path, &text, NULL, CONTAIN_MAX_FILE)) < 0)
        return rc;
    for (char *p = text, *end; *p; p = end) {
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid <= 0)
            continue;
        if (*n == *cap) {
            size_t ncap = *cap ? *cap * 2 : 16;
            pid_t *nv = realloc(*v, ncap * sizeof *nv);
            if (!nv) {
                free(text);
                return -ENOMEM;
            }
            *v = nv;
            *cap = ncap;
        }
        (*v)[(*n)++] = (pid_t)pid;
    }
    free(text);
    return 0;
}

int contain_run_pids(const contain_run_t *r, pid_t **out, size_t *n_out)
{
    pid_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    *out = NULL;
    *n_out = 0;
    if (r->v2_dir[0] && (rc = contain_read_procs(r->v2_dir, &v, &n, &cap)) < 0)
        goto fail;
    if (r->pids_dir[0] &&
        (rc = contain_read_procs(r->pids_dir, &v, &n, &cap)) < 0)
        goto fail;
    /* A process is in both cgroups: list it once. */
    if (n > 1)
        qsort(v, n, sizeof *v, contain_cmp_pid);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || v[u - 1] != v[i])
            v[u++] = v[i];
    *out = v;
    *n_out = u;
    return 0;
fail:
    free(v);
    return rc;
}

/* How many processes the run's cgroups list. */
static size_t contain_run_count(const contain_run_t *r)
{
    pid_t *v;
    size_t n;
    if (contain_run_pids(r, &v, &n) < 0)
        return 0;
    free(v);
    return n;
}

bool contain_run_populated(const contain_run_t *r)
{
    if (r->events_fd >= 0) {
        char buf[256];
        /* Reading the same open file also re-arms its POLLPRI, so a caller
         * that polls events_fd after this cannot miss the next change. */
        ssize_t k = pread(r->events_fd, buf, sizeof buf - 1, 0);
        if (k > 0) {
            buf[k] = 0;
            const char *p = strstr(buf, "populated ");
            if (p && p[10] == '1')
                return true;
            /* Empty v2 leaf: only a process that moved itself out of it
             * (privileged) can still be in the pids cgroup. */
            if (p && !r->pids_dir[0])
                return false;
        }
    }
    return contain_run_count(r) > 0;
}

/* True when pid is (still) inside one of the run's cgroups. */
static bool contain_is_member(const contain_run_t *r, pid_t pid)
{
    char cg[PATH_MAX];
    if (r->v2_rel[0] && contain_cgroup_line(pid, NULL, cg, sizeof cg) == 0 &&
        contain_within(cg, r->v2_rel))
        return true;
    if (r->pids_rel[0] &&
        contain_cgroup_line(pid, "pids", cg, sizeof cg) == 0 &&
        contain_within(cg, r->pids_rel))
        return true;
    return false;
}

/*
 * Signals pid only if it is a member of the run, and is still the process
 * whose membership was read.  With a pidfd the identity is pinned: the
 * pidfd is opened first, membership read from /proc, then the pidfd
 * checked not to have exited, so the /proc read was about that very
 * process.  Without pidfds (valgrind, old kernels) the start time is read
 * around the membership check, leaving only the kernel's reuse window.
 */
static int contain_signal_member(const contain_run_t *r, pid_t pid, int signo,
                                 uint64_t *start_out)
{
    uint64_t s1 = 0, s2 = 0;
    int rc = 0;
    if (pid <= 1 || pid == getpid())
        return -EPERM;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0 && errno != ENOSYS)
        return -errno;
    if (procfs_start_time(pid, &s1) < 0 || !contain_is_member(r, pid) ||
        procfs_start_time(pid, &s2) < 0 || s1 != s2) {
        rc = -ESRCH;
        goto out;
    }
    if (fd >= 0) {
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, 0) > 0) {
            rc = -ESRCH; /* exited: the /proc reads may be another's */
            goto out;
        }
        if (syscall(SYS_pidfd_send_signal, fd, signo, NULL, 0) < 0)
            rc = -errno;
    } else if (kill(pid, signo) < 0) {
        rc = -errno;
    }
    if (start_out)
        *start_out = s1;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

int contain_run_signal(contain_run_t *r, ptree_pass_t *pass)
{
    pid_t *v;
    size_t n;
    int rc = contain_run_pids(r, &v, &n);
    if (rc < 0)
        return rc;
    int sent = 0;
    for (size_t i = 0; i < n; i++)
        if (ptree_pass_due(pass, v[i]) &&
            contain_signal_member(r, v[i], pass->signo, NULL) == 0) {
            ptree_pass_note(pass, v[i]);
            sent++;
        }
    free(v);
    return sent;
}

/* True when pid, with the start time it had then, was sent SIGKILL (a
 * dying or zombie member must not count as new on every pass). */
static bool contain_was_sent(const contain_sent_t *s, size_t n, pid_t pid)
{
    uint64_t st;
    for (size_t i = 0; i < n; i++)
        if (s[i].pid == pid && procfs_start_time(pid, &st) == 0 &&
            st == s[i].start_time)
            return true;
    return false;
}

/*
 * The kill without cgroup.kill: SIGKILL every member, and again for every
 * member not yet sent one, until a pass finds nobody new.  A process with
 * SIGKILL pending cannot complete a fork, so what a pass misses is only
 * what was forked before its parent's SIGKILL landed: one generation per
 * pass, bounded by the pids limit where there is one.
 */
static int contain_kill_by_signals(contain_run_t *r)
{
    contain_sent_t *sent = NULL;
    size_t nsent = 0, cap = 0;
    int rc = -EAGAIN;
    for (int pass = 0; pass < CONTAIN_KILL_MAX_PASSES; pass++) {
        pid_t *v;
        size_t n, fresh = 0;
        if ((rc = contain_run_pids(r, &v, &n)) < 0)
            break;
        for (size_t i = 0; i < n; i++) {
            uint64_t st;
            if (contain_was_sent(sent, nsent, v[i]))
                continue;
            if (contain_signal_member(r, v[i], SIGKILL, &st) < 0)
                continue;
            fresh++;
            if (nsent == cap) {
                size_t ncap = cap ? cap * 2 : 16;
                contain_sent_t *ns = realloc(sent, ncap * sizeof *ns);
                if (!ns) {
                    free(v);
                    rc = -ENOMEM;
                    goto out;
                }
                sent = ns;
                cap = ncap;
            }
            sent[nsent++] = (contain_sent_t){v[i], st};
        }
        free(v);
        if (!fresh) {
            rc = 0;
            break;
        }
        rc = -EAGAIN;
    }
out:
    free(sent);
    return rc;
}

int contain_run_kill(contain_run_t *r)
{
    char file[PATH_MAX];
    int rc;
    if (!r->v2_dir[0] && !r->pids_dir[0])
        return -ENOTSUP;
    if (r->v2_dir[0] && r->has_kill) {
        /* One write kills the whole subtree, setsid escapees included, and
         * stops it from forking while the kill is in progress. */
        if ((rc = contain_path(file, sizeof file, r->v2_dir, "cgroup.kill")) < 0 ||
            (rc = contain_write_str(file, "1")) < 0)
            return rc;
    }
    /* Also what left the v2 leaf but not the pids cgroup (a privileged
     * process can move itself), and everything where cgroup.kill is
     * missing. */
    return contain_kill_by_signals(r);
}

/* Whether st describes a process that is exiting or has exited: a zombie,
 * or one past PF_EXITING, which the kernel sets before the process leaves
 * its cgroup (whose files then read "/", as if it had left the run). */
static bool contain_exiting(const procfs_stat_t *st)
{
    return st->state == 'Z' || st->state == 'X' ||
           (st->flags & PROCFS_PF_EXITING);
}

/* Whether pid is still the process st describes and is not exiting. */
static bool contain_same_live(pid_t pid, const procfs_stat_t *st)
{
    procfs_stat_t now;
    return procfs_read_stat(pid, &now) == 0 && !contain_exiting(&now) &&
           now.start_time == st->start_time;
}

bool contain_run_escaped(const contain_run_t *r, pid_t sid, pid_t pid,
                         uint64_t start_time)
{
    procfs_stat_t st;
    char cg[PATH_MAX];
    if (procfs_read_stat(pid, &st) < 0 || contain_exiting(&st) ||
        (start_time && st.start_time != start_time))
        return false;
    bool out = st.session != sid;
    if (!out && r->v2_rel[0] &&
        contain_cgroup_line(pid, NULL, cg, sizeof cg) == 0 &&
        !contain_within(cg, r->v2_rel))
        out = true;
    if (!out && r->pids_rel[0] &&
        contain_cgroup_line(pid, "pids", cg, sizeof cg) == 0 &&
        !contain_within(cg, r->pids_rel))
        out = true;
    /* A process that begins to exit between the reads reads as in "/":
     * only one still the same and not exiting after them has left. */
    return out && contain_same_live(pid, &st);
}

void contain_run_free(contain_run_t *r)
{
    if (!r)
        return;
    if (r->v2_dir_fd >= 0)
        close(r->v2_dir_fd);
    if (r->v2_procs_fd >= 0)
        close(r->v2_procs_fd);
    if (r->pids_tasks_fd >= 0)
        close(r->pids_tasks_fd);
    if (r->events_fd >= 0)
        close(r->events_fd);
    /* EBUSY while populated: the leaf stays for reconcile to find. */
    if (r->v2_dir[0])
        rmdir(r->v2_dir);
    if (r->pids_dir[0])
        rmdir(r->pids_dir);
    free(r);
}

/* tutil.c — see tutil.h. */
#include "tutil.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <pcre2.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/procfs.h"
#include "harness.h"
#include "squash/grammar.h"
#include "squash/squash.h"
#include "squash/vt.h"
#include "supervise/registry.h"

int tu_read_all(int fd, buf_t *out)
{
    char tmp[4096];
    for (;;) {
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n > 0) {
            if (buf_append(out, tmp, (size_t)n) < 0)
                return -ENOMEM;
            continue;
        }
        if (n == 0 || errno == EIO)
            return 0;
        if (errno != EINTR)
            return -errno;
    }
}

pid_t tu_sleeper_start(int *pidfd)
{
    const char *argv[] = {"sleep", "60", NULL};
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    pid_t pid;
    ASSERT_OK(spawn_start(&o, &pid, pidfd, NULL));
    return pid;
}

pid_t tu_sleeper_timed(int *pidfd, uint64_t *start)
{
    pid_t pid = tu_sleeper_start(pidfd);
    ASSERT_OK(procfs_start_time(pid, start));
    return pid;
}

int tu_rein_start(const char *const *args, pid_t *pid)
{
    char path[PATH_MAX];
    const char *argv[16] = {path};
    size_t n = 1;
    snprintf(path, sizeof path, "%s/rein", test_build_dir());
    for (; args[n - 1]; n++)
        ASSERT_INT(n, <, sizeof argv / sizeof argv[0] - 1);
    memcpy(argv + 1, args, (n - 1) * sizeof *args);
    argv[n] = NULL;
    int p[2];
    ASSERT_OK(pipe2(p, O_CLOEXEC));
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = path;
    o.argv = argv;
    o.fd_out = o.fd_err = p[1];
    ASSERT_OK(spawn_start(&o, pid, NULL, NULL));
    close(p[1]);
    return p[0];
}

pid_t tu_read_pid_file(const char *path)
{
    FILE *f = fopen(path, "re");
    ASSERT_TRUE(f != NULL);
    char line[32] = {0};
    ASSERT_TRUE(fgets(line, sizeof line, f) != NULL);
    fclose(f);
    pid_t pid = (pid_t)atol(line);
    ASSERT_INT(pid, >, 1);
    return pid;
}

pid_t tu_await_pid_file(const char *path, uint64_t timeout_ms)
{
    uint64_t t0 = test_now_ms();
    while (access(path, F_OK) < 0) {
        ASSERT_INT(test_now_ms() - t0, <, timeout_ms);
        usleep(10000);
    }
    return tu_read_pid_file(path);
}

void tu_sleeper_stop(pid_t pid, int pidfd)
{
    kill(pid, SIGKILL); /* the caller's own child */
    spawn_reap(pid, pidfd, NULL);
    if (pidfd >= 0)
        close(pidfd);
}

int64_t tu_plant_run(const char *state_dir, const tu_plant_t *p)
{
    registry_t *reg;
    ASSERT_OK(registry_open(state_dir, &reg));
    owner_record_t o;
    memset(&o, 0, sizeof o);
    snprintf(o.id, sizeof o.id, "%s", p->owner);
    snprintf(o.boot_id, sizeof o.boot_id, "%s", p->boot_id);
    o.pid = p->owner_pid;
    o.start_time = p->owner_start;
    o.lease_expires_ms = p->lease_ms;
    o.lock_path = (char *)p->lock_path;
    o.pid_ns = p->pid_ns;
    ASSERT_OK(registry_owner_add(reg, &o));
    run_record_t r;
    run_record_init(&r);
    memcpy(r.owner, o.id, sizeof r.owner);
    memcpy(r.boot_id, o.boot_id, sizeof r.boot_id);
    r.pid = r.pgid = r.sid = p->run_pid;
    r.start_time = p->run_start;
    snprintf(r.containment, sizeof r.containment, "pgid");
    r.state = REIN_RUN_RUNNING;
    r.command = strdup("planted");
    ASSERT_OK(registry_run_insert(reg, &r));
    int64_t id = r.id;
    run_record_clear(&r);
    registry_close(reg);
    return id;
}

int tu_run(spawn_opts_t *o, buf_t *out)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    o->fd_out = o->fd_err = p[1];
    pid_t pid;
    int pidfd, code;
    int rc = spawn_start(o, &pid, &pidfd, NULL);
    close(p[1]);
    if (rc < 0) {
        close(p[0]);
        return rc;
    }
    tu_read_all(p[0], out);
    close(p[0]);
    rc = spawn_reap(pid, pidfd, &code);
    if (pidfd >= 0)
        close(pidfd);
    return rc < 0 ? rc : code;
}

int tu_spawn_opts_piped(spawn_opts_t *o, pid_t *pid, int *pidfd)
{
    int p[2];
    ASSERT_OK(pipe2(p, O_CLOEXEC));
    o->fd_out = p[1];
    spawn_step_t step;
    int rc = spawn_start(o, pid, pidfd, &step);
    close(p[1]);
    o->fd_out = -1;
    if (rc < 0)
        test_fail(__FILE__, __LINE__, "spawn %s: %s at %s", o->argv[0],
                  strerror(-rc), spawn_step_name(step));
    return p[0];
}

int tu_spawn_piped(const char *const *argv, spawn_group_t group, int fd_in,
                   pid_t *pid, int *pidfd)
{
    spawn_opts_t o;
    spawn_opts_init(&o);
    o.file = argv[0];
    o.argv = argv;
    o.group = group;
    o.fd_in = fd_in;
    return tu_spawn_opts_piped(&o, pid, pidfd);
}

static void tu_on_readable(loop_t *l, int fd, unsigned ev, void *data)
{
    (void)l;
    (void)fd;
    (void)ev;
    *(bool *)data = true;
}

bool tu_try_read_line(int fd, char *buf, size_t size)
{
    size_t n = 0;
    for (;;) {
        char c;
        ssize_t r = read(fd, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0 && n == 0)
            return false;
        ASSERT_INT(r, ==, 1);
        if (c == '\n')
            break;
        ASSERT_INT(n + 1, <, size);
        buf[n++] = c;
    }
    buf[n] = 0;
    return true;
}

void tu_read_line(int fd, char *buf, size_t size)
{
    ASSERT_TRUE(tu_try_read_line(fd, buf, size));
}

char *tu_loop_read_line(loop_t *l, int fd, buf_t *acc, uint64_t timeout_ms)
{
    uint64_t deadline = loop_clock_ms() + timeout_ms;
    for (;;) {
        char *nl = acc->len ? memchr(acc->p, '\n', acc->len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - acc->p);
            char *line = strndup(acc->p, n);
            buf_consume(acc, n + 1);
            return line;
        }
        char tmp[65536];
        ssize_t r = read(fd, tmp, sizeof tmp);
        if (r > 0) {
            buf_append(acc, tmp, (size_t)r);
            continue;
        }
        if (r == 0)
            return NULL;
        uint64_t now = loop_clock_ms();
        if (now >= deadline)
            return NULL;
        /* Nothing yet: run the loop (the server is in this thread) until
         * fd is readable or the time is up. */
        bool ready = false;
        if (loop_io_add(l, fd, LOOP_READ, tu_on_readable, &ready) < 0)
            return NULL;
        while (!ready && (now = loop_clock_ms()) < deadline)
            loop_run_once(l, (int)(deadline - now));
        loop_io_del(l, fd);
    }
}

void tu_shipped_grammars(char *out, size_t size)
{
    struct stat st;
    snprintf(out, size, "%s/../grammars", test_build_dir());
    if (stat(out, &st) < 0)
        SKIP("no grammars beside %s", test_build_dir());
}

grammar_set_t *tu_shipped_set(void)
{
    char gdir[PATH_MAX];
    tu_shipped_grammars(gdir, sizeof gdir);
    const char *dirs[] = {gdir, NULL};
    grammar_set_t *set;
    buf_t errs = BUF_INIT;
    ASSERT_OK(grammar_set_load(&set, dirs, &errs));
    buf_free(&errs);
    return set;
}

static void tu_collect(const char *t, size_t n, void *d)
{
    buf_append(d, t, n);
}

void tu_condense(const grammar_set_t *set, const char *command,
                 const buf_t *raw, bool streamed, size_t budget,
                 int exit_code, buf_t *out)
{
    sq_opts_t o;
    memset(&o, 0, sizeof o);
    o.command = command;
    o.log_path = "/l";
    o.grammars = set;
    o.budget_bytes = budget;
    buf_reset(out);
    if (!streamed) {
        ASSERT_OK(squash_buffer(&o, raw->p, raw->len, exit_code, 0, out));
    } else {
        squash_t *sq;
        ASSERT_OK(squash_new(&o, tu_collect, out, &sq));
        ASSERT_OK(squash_feed(sq, raw->p, raw->len, 0));
        ASSERT_OK(squash_finish(sq, exit_code, 0, 0));
        squash_free(sq);
    }
    ASSERT_OK(buf_append(out, "", 0));
}

bool tu_read_file(const char *path, buf_t *b)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    int rc = tu_read_all(fd, b);
    close(fd);
    if (rc == 0 && !b->p)
        rc = buf_append(b, "", 0);
    return rc == 0 && b->p;
}

void tu_case_command(json_t *cs, char *out, size_t cap)
{
    const char *c = json_string_value(json_object_get(cs, "command"));
    snprintf(out, cap, "%s", c ? c : "");
    char *note = strstr(out, "  (");
    if (note && out[strlen(out) - 1] == ')')
        *note = '\0';
}

/* The VT-stripped raw lines, each followed by '\n'. */
static int tu_line(const sq_line_t *l, void *data)
{
    if (l->kind == SQ_LINE_BINARY && l->len == 0)
        return 0;
    int rc = buf_append(data, l->text, l->len);
    return rc ? rc : buf_append_byte(data, '\n');
}

/* Every frame a row showed before it was drawn over or erased is text
 * the terminal showed: a view may keep one (vt_set_keep), so each is a
 * raw line the judge accepts. */
static bool tu_keep_every_frame(const sq_line_t *l, void *data)
{
    (void)l;
    (void)data;
    return true;
}

/* Is l[0..n) one of the lines of text (each ending in '\n')? */
static bool tu_has_line(const buf_t *text, const char *l, size_t n)
{
    const char *p = text->p, *end = p + text->len;
    while (p && p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if ((size_t)(e - p) == n && !memcmp(p, l, n))
            return true;
        p = e + 1;
    }
    return false;
}

static pcre2_code *tu_re(const char *pat, uint32_t flags, buf_t *why)
{
    int ec;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | flags, &ec, &off, NULL);
    if (!re)
        buf_printf(why, "bad regex /%s/ at %zu\n", pat, (size_t)off);
    return re;
}

static bool tu_match(pcre2_code *re, const char *s, size_t n)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc = md ? pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, NULL) : -1;
    pcre2_match_data_free(md);
    return rc >= 0;
}

bool tu_is_marker(const char *line, size_t n)
{
    buf_t why = BUF_INIT;
    pcre2_code *re = tu_re(TU_MARKER_RE, 0, &why);
    bool yes = re && tu_match(re, line, n);
    pcre2_code_free(re);
    buf_free(&why);
    return yes;
}

bool tu_judge(json_t *cs, const buf_t *raw, const buf_t *out, tu_verdict_t *v,
              buf_t *why)
{
    size_t why0 = why->len;
    buf_t lines = BUF_INIT;
    vt_t *vt = NULL;
    if (vt_new(tu_line, &lines, &vt) == 0)
        vt_set_keep(vt, tu_keep_every_frame, NULL);
    if (!vt || vt_feed(vt, raw->p, raw->len, 0) < 0 || vt_finish(vt) < 0)
        buf_printf(why, "VT stripping failed\n");
    vt_free(vt);
    const char *o = out->p ? out->p : "", *end = o + out->len;

    json_t *mk = json_object_get(cs, "must_keep");
    for (size_t i = 0; i < json_array_size(mk); i++) {
        const char *pat = json_string_value(json_array_get(mk, i));
        pcre2_code *re = pat ? tu_re(pat, PCRE2_MULTILINE, why) : NULL;
        if (re && !tu_match(re, o, out->len))
            buf_printf(why, "must_keep /%s/ lost\n", pat);
        pcre2_code_free(re);
    }

    char ex[64];
    snprintf(ex, sizeof ex, "^\\[rein\\] exit %lld\\b",
             (long long)json_integer_value(json_object_get(cs, "exit_code")));
    pcre2_code *exre = tu_re(ex, PCRE2_MULTILINE, why);
    if (exre && !tu_match(exre, o, out->len))
        buf_printf(why, "exit code not shown\n");
    pcre2_code_free(exre);

    pcre2_code *mre = tu_re(TU_MARKER_RE, 0, why);
    /* The counts must add up: the noise marker counts dropped lines only,
     * so the lines shown and the noise never pass the exit marker's total. */
    unsigned long long total = 0, noise = 0, shown = 0;
    bool has_total = false;
    for (const char *p = o; mre && p < end;) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e) {
            buf_printf(why, "output does not end in a newline\n");
            break;
        }
        size_t n = (size_t)(e - p);
        bool marker = tu_match(mre, p, n);
        if (!marker && !tu_has_line(&lines, p, n))
            buf_printf(why, "neither raw nor marker: \"%.*s\"\n", (int)n, p);
        bool exit_marker = marker && (!strncmp(p, "[rein] exit ", 12) ||
                                      !strncmp(p, "[rein] signal ", 14));
        /* "... · 26 lines": the count is the number before " line" */
        const char *sep = exit_marker && !has_total ? memmem(p, n, " line", 5)
                                                    : NULL;
        if (sep) {
            const char *d = sep;
            while (d > p && d[-1] >= '0' && d[-1] <= '9')
                d--;
            total = strtoull(d, NULL, 10);
            has_total = true;
        } else if (marker && !strncmp(p, "[rein] noise ", 13)) {
            noise += strtoull(p + 13, NULL, 10);
        } else if (!marker) {
            shown++;
        }
        p = e + 1;
    }
    pcre2_code_free(mre);
    if (has_total && shown + noise > total)
        buf_printf(why, "%llu lines shown and %llu noise pass the total of %llu\n",
                   shown, noise, total);

    json_t *kam = json_object_get(cs, "keep_all_matching");
    pcre2_code *kre = json_is_string(kam) ? tu_re(json_string_value(kam), 0, why)
                                          : NULL;
    /* keep_all_matching: every such raw line, verbatim, among the output's */
    buf_t kept = BUF_INIT;
    if (kre && buf_append(&kept, o, out->len) == 0) {
        const char *q = lines.p, *qe = q + lines.len;
        while (q && q < qe) {
            const char *e = memchr(q, '\n', (size_t)(qe - q));
            size_t n = (size_t)(e - q);
            if (tu_match(kre, q, n) && !tu_has_line(&kept, q, n))
                buf_printf(why, "keep_all_matching line lost: \"%.*s\"\n",
                           (int)n, q);
            q = e + 1;
        }
    }
    buf_free(&kept);
    pcre2_code_free(kre);

    uint64_t tin = (lines.len + 3) / 4, tout = (out->len + 3) / 4;
    v->in_bytes = lines.len;
    v->in_tokens = tin;
    v->ratio = tin ? (double)tout / (double)tin : 0.0;
    buf_free(&lines);
    return why->len == why0;
}

void tu_private_mounts(void)
{
    if (unshare(CLONE_NEWNS) < 0 ||
        mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
        SKIP_FACILITY("mount-namespace", "a private mount namespace: %s",
                      strerror(errno));
}

void tu_hide_pids_hierarchy(void)
{
    tu_private_mounts();
    /* Listed first, unmounted after: unmounting changes the listing. */
    char mps[TU_MAX_PIDS_MOUNTS][PATH_MAX];
    size_t n = 0;
    FILE *f = fopen("/proc/self/mountinfo", "re");
    ASSERT_TRUE(f != NULL);
    char line[4096];
    while (n < TU_MAX_PIDS_MOUNTS && fgets(line, sizeof line, f)) {
        /* "id parent maj:min root mountpoint opts... - type source super" */
        char mp[PATH_MAX], type[64], super[1024];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 ||
            sscanf(dash + 3, "%63s %*s %1023s", type, super) != 2 ||
            strcmp(type, "cgroup") != 0)
            continue;
        for (char *save = NULL, *o = strtok_r(super, ",", &save); o;
             o = strtok_r(NULL, ",", &save))
            if (!strcmp(o, "pids"))
                snprintf(mps[n++], PATH_MAX, "%s", mp);
    }
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (umount2(mps[i], MNT_DETACH) < 0)
            SKIP_FACILITY("mount-namespace", "umount %s: %s", mps[i],
                          strerror(errno));
}

void tu_syscall_fails(long nr, int arg, unsigned value, int err)
{
    ASSERT_TRUE(arg < 6);
    /* The low 32 bits of the argument (little-endian), enough for the
     * flags and id types tests match. */
    unsigned off = (unsigned)offsetof(struct seccomp_data, args) +
                   (unsigned)(arg < 0 ? 0 : arg) * 8;
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, off),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, arg < 0 ? 0 : 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & 0xffff)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    ASSERT_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    ASSERT_OK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0));
}

/* test_spool.c — the log spool: exact bytes, 0600 + O_EXCL + O_CLOEXEC,
 * batching and flush, write-through (nothing lost to the writer's
 * SIGKILL), sticky write errors, 0700 directory creation. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/spool.h"
#include "harness.h"

static void path_in_tmp(char *out, size_t size, const char *name)
{
    int n = snprintf(out, size, "%s/%s", test_tmpdir(), name);
    ASSERT_TRUE(n > 0 && (size_t)n < size);
}

static off_t file_size(const char *path)
{
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    return st.st_size;
}

static void read_all(const char *path, buf_t *b)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ASSERT_TRUE(fd >= 0);
    char tmp[8192];
    ssize_t r;
    while ((r = read(fd, tmp, sizeof tmp)) > 0)
        ASSERT_OK(buf_append(b, tmp, (size_t)r));
    ASSERT_EQ(r, 0);
    close(fd);
}

TEST(spool_roundtrip_random_sizes)
{
    /* Sizes around the batching buffer, in every order relation. */
    static const size_t sizes[] = {
        0, 1, 7, 4096, 100, SPOOL_BUF_SIZE - 1, 1, SPOOL_BUF_SIZE,
        SPOOL_BUF_SIZE + 1, 3, 3 * SPOOL_BUF_SIZE + 17, 4096, 4096, 4096,
        SPOOL_BUF_SIZE / 2, SPOOL_BUF_SIZE / 2 + 1, 5,
    };
    char path[PATH_MAX];
    path_in_tmp(path, sizeof path, "run.log");
    spool_t *sp = NULL;
    ASSERT_OK(spool_open(path, 0, &sp));
    buf_t exp = BUF_INIT;
    unsigned seed = 99;
    for (int rep = 0; rep < 3; rep++) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t n = sizes[i];
            unsigned char *d = malloc(n + 1);
            ASSERT_TRUE(d != NULL);
            for (size_t j = 0; j < n; j++) {
                seed = seed * 1103515245u + 12345u;
                d[j] = (unsigned char)(seed >> 16);
            }
            ASSERT_OK(spool_write(sp, d, n));
            ASSERT_OK(buf_append(&exp, d, n));
            free(d);
            ASSERT_EQ(spool_bytes(sp), exp.len);
        }
    }
    ASSERT_EQ(spool_dropped(sp), 0);
    ASSERT_OK(spool_close(sp));
    buf_t got = BUF_INIT;
    read_all(path, &got);
    ASSERT_MEM(got.p, got.len, exp.p, exp.len);
    buf_free(&got);
    buf_free(&exp);
}

TEST(spool_mode_0600_and_cloexec)
{
    umask(0); /* the mode must come from the spool, not the umask */
    char path[PATH_MAX];
    path_in_tmp(path, sizeof path, "m.log");
    spool_t *sp = NULL;
    ASSERT_OK(spool_open(path, 0, &sp));
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_EQ(st.st_mode & 07777, 0600);
    ASSERT_TRUE(S_ISREG(st.st_mode));
    /* Find our fd by its target and check O_CLOEXEC in fdinfo. */
    DIR *dir = opendir("/proc/self/fd");
    ASSERT_TRUE(dir != NULL);
    struct dirent *de;
    bool found = false;
    while ((de = readdir(dir))) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(dirfd(dir), de->d_name, target, sizeof target - 1);
        if (n < 0)
            continue;
        target[n] = 0;
        if (strcmp(target, path) != 0)
            continue;
        int fd = atoi(de->d_name);
        int fl = fcntl(fd, F_GETFD);
        ASSERT_TRUE(fl >= 0 && (fl & FD_CLOEXEC));
        int st_fl = fcntl(fd, F_GETFL);
        ASSERT_TRUE(st_fl & O_APPEND);
        found = true;
    }
    closedir(dir);
    ASSERT_TRUE(found);
    ASSERT_OK(spool_close(sp));
}

TEST(spool_excl_unless_append)
{
    char path[PATH_MAX];
    path_in_tmp(path, sizeof path, "x.log");
    spool_t *sp = NULL, *sp2 = NULL;
    ASSERT_OK(spool_open(path, 0, &sp));
    ASSERT_OK(spool_write(sp, "one", 3));
    ASSERT_OK(spool_close(sp));
    ASSERT_EQ(spool_open(path, 0, &sp2), -EEXIST);
    ASSERT_OK(spool_open(path, SPOOL_OPEN_APPEND, &sp2));
    ASSERT_OK(spool_write(sp2, "two", 3));
    ASSERT_EQ(spool_bytes(sp2), 3); /* counts this handle's bytes */
    ASSERT_OK(spool_close(sp2));
    buf_t got = BUF_INIT;
    read_all(path, &got);
    ASSERT_STR(got.p, "onetwo");
    buf_free(&got);
    /* APPEND also creates a missing file. */
    path_in_tmp(path, sizeof path, "new.log");
    ASSERT_OK(spool_open(path, SPOOL_OPEN_APPEND, &sp));
    ASSERT_OK(spool_close(sp));
    ASSERT_EQ(file_size(path), 0);
}

TEST(spool_refuses_planted_symlink)
{
    char path[PATH_MAX], target[PATH_MAX];
    path_in_tmp(path, sizeof path, "link.log");
    path_in_tmp(target, sizeof target, "elsewhere");
    ASSERT_EQ(symlink(target, path), 0);
    spool_t *sp = NULL;
    ASSERT_EQ(spool_open(path, 0, &sp), -EEXIST);
    ASSERT_TRUE(access(target, F_OK) != 0); /* nothing created through it */
}

TEST(spool_open_errors)
{
    char path[PATH_MAX];
    spool_t *sp = NULL;
    path_in_tmp(path, sizeof path, "missing/dir/x.log");
    ASSERT_EQ(spool_open(path, 0, &sp), -ENOENT);
    path_in_tmp(path, sizeof path, "f.log");
    ASSERT_EQ(spool_open(path, 1u << 7, &sp), -EINVAL);
    ASSERT_EQ(access(path, F_OK), -1);
    ASSERT_EQ(spool_close(NULL), 0);
}

TEST(spool_batches_until_flush)
{
    char path[PATH_MAX];
    path_in_tmp(path, sizeof path, "b.log");
    spool_t *sp = NULL;
    ASSERT_OK(spool_open(path, 0, &sp));
    ASSERT_OK(spool_write(sp, "hello", 5));
    ASSERT_EQ(file_size(path), 0); /* buffered, no write() yet */
    ASSERT_OK(spool_flush(sp));
    ASSERT_EQ(file_size(path), 5);
    ASSERT_OK(spool_flush(sp)); /* nothing to flush is fine */
    /* Small writes fill the buffer; the one that fills it writes one full
     * batch and the rest stays. */
    const size_t small = SPOOL_DIRECT_MIN - 1; /* the largest gathered */
    const size_t fit = (SPOOL_BUF_SIZE - 1) / small;
    char *big = malloc(SPOOL_BUF_SIZE);
    ASSERT_TRUE(big != NULL);
    memset(big, 'z', SPOOL_BUF_SIZE);
    for (size_t i = 0; i < fit; i++)
        ASSERT_OK(spool_write(sp, big, small));
    ASSERT_EQ(file_size(path), 5);
    ASSERT_OK(spool_write(sp, big, small));
    ASSERT_EQ(file_size(path), 5 + SPOOL_BUF_SIZE);
    const uint64_t kept = (fit + 1) * small - SPOOL_BUF_SIZE;
    /* A write of SPOOL_DIRECT_MIN goes straight through, after what was
     * buffered. */
    ASSERT_OK(spool_write(sp, big, SPOOL_DIRECT_MIN));
    ASSERT_EQ(file_size(path), 5 + SPOOL_BUF_SIZE + kept + SPOOL_DIRECT_MIN);
    /* So does one larger than the buffer. */
    ASSERT_OK(spool_write(sp, big, SPOOL_BUF_SIZE));
    ASSERT_EQ(file_size(path),
              5 + SPOOL_BUF_SIZE + kept + SPOOL_DIRECT_MIN + SPOOL_BUF_SIZE);
    ASSERT_EQ(spool_bytes(sp), (uint64_t)file_size(path));
    ASSERT_OK(spool_close(sp));
    free(big);
}

/* Write-through: every byte, however small the write, is in the file
 * when spool_write returns, so the writer's SIGKILL right after loses
 * none (a child writes and dies; the file has it all). */
TEST(spool_write_through_gathers_nothing)
{
    char path[PATH_MAX];
    path_in_tmp(path, sizeof path, "t.log");
    spool_t *sp = NULL;
    ASSERT_OK(spool_open(path, SPOOL_OPEN_WRITE_THROUGH, &sp));
    ASSERT_OK(spool_write(sp, "h", 1));
    ASSERT_EQ(file_size(path), 1);
    ASSERT_OK(spool_write(sp, "ello", 4));
    ASSERT_EQ(file_size(path), 5);
    ASSERT_EQ(spool_bytes(sp), 5u);
    ASSERT_OK(spool_close(sp));

    path_in_tmp(path, sizeof path, "k.log");
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        spool_t *c = NULL;
        if (spool_open(path, SPOOL_OPEN_WRITE_THROUGH, &c) < 0)
            _exit(3);
        for (int i = 0; i < 100; i++)
            spool_write(c, "line\n", 5);
        raise(SIGKILL); /* no flush, no close */
        _exit(4);
    }
    int st;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    ASSERT_EQ(file_size(path), 500);
}

TEST(spool_write_error_sticky_and_dropped)
{
    if (access("/dev/full", W_OK) != 0)
        SKIP("no writable /dev/full");
    spool_t *sp = NULL;
    ASSERT_OK(spool_open("/dev/full", SPOOL_OPEN_APPEND, &sp));
    ASSERT_OK(spool_write(sp, "0123456789", 10)); /* buffered: no error yet */
    ASSERT_EQ(spool_flush(sp), -ENOSPC);
    ASSERT_EQ(spool_dropped(sp), 10);
    ASSERT_EQ(spool_write(sp, "abcde", 5), -ENOSPC);
    ASSERT_EQ(spool_dropped(sp), 15);
    ASSERT_EQ(spool_bytes(sp), 15);
    ASSERT_EQ(spool_flush(sp), -ENOSPC);
    ASSERT_EQ(spool_close(sp), -ENOSPC);

    /* A big write fails at once and counts all of itself. */
    ASSERT_OK(spool_open("/dev/full", SPOOL_OPEN_APPEND, &sp));
    char *big = calloc(1, SPOOL_BUF_SIZE * 2);
    ASSERT_TRUE(big != NULL);
    ASSERT_EQ(spool_write(sp, big, SPOOL_BUF_SIZE * 2), -ENOSPC);
    ASSERT_EQ(spool_dropped(sp), SPOOL_BUF_SIZE * 2);
    ASSERT_EQ(spool_close(sp), -ENOSPC);

    /* A write of SPOOL_DIRECT_MIN is not gathered: it fails at once. */
    ASSERT_OK(spool_open("/dev/full", SPOOL_OPEN_APPEND, &sp));
    ASSERT_EQ(spool_write(sp, big, SPOOL_DIRECT_MIN), -ENOSPC);
    ASSERT_EQ(spool_dropped(sp), SPOOL_DIRECT_MIN);
    ASSERT_EQ(spool_close(sp), -ENOSPC);

    /* Filling the buffer reports the error from the write that batches. */
    ASSERT_OK(spool_open("/dev/full", SPOOL_OPEN_APPEND, &sp));
    const size_t small = SPOOL_DIRECT_MIN - 1;
    const size_t fit = (SPOOL_BUF_SIZE - 1) / small;
    for (size_t i = 0; i < fit; i++)
        ASSERT_OK(spool_write(sp, big, small));
    ASSERT_EQ(spool_write(sp, big, small), -ENOSPC);
    /* The full batch, and what did not fit in it. */
    ASSERT_EQ(spool_dropped(sp), (fit + 1) * small);
    ASSERT_EQ(spool_close(sp), -ENOSPC);
    free(big);

    /* Close alone reports an error in the final flush. */
    ASSERT_OK(spool_open("/dev/full", SPOOL_OPEN_APPEND, &sp));
    ASSERT_OK(spool_write(sp, "x", 1));
    ASSERT_EQ(spool_close(sp), -ENOSPC);
}

TEST(spool_mkdir_private_creates_0700)
{
    umask(0);
    char dir[PATH_MAX];
    path_in_tmp(dir, sizeof dir, "state/rein//logs/");
    ASSERT_OK(spool_mkdir_private(dir));
    static const char *const parts[] = {"state", "state/rein", "state/rein/logs"};
    for (size_t i = 0; i < 3; i++) {
        char p[PATH_MAX];
        path_in_tmp(p, sizeof p, parts[i]);
        struct stat st;
        ASSERT_EQ(stat(p, &st), 0);
        ASSERT_TRUE(S_ISDIR(st.st_mode));
        ASSERT_EQ(st.st_mode & 07777, 0700);
    }
    ASSERT_OK(spool_mkdir_private(dir)); /* existing: fine */
    /* Existing directories are left alone, not chmod-ed. */
    char pre[PATH_MAX];
    path_in_tmp(pre, sizeof pre, "shared");
    ASSERT_EQ(mkdir(pre, 0755), 0);
    path_in_tmp(dir, sizeof dir, "shared/mine");
    ASSERT_OK(spool_mkdir_private(dir));
    struct stat st;
    ASSERT_EQ(stat(pre, &st), 0);
    ASSERT_EQ(st.st_mode & 07777, 0755);
    ASSERT_EQ(stat(dir, &st), 0);
    ASSERT_EQ(st.st_mode & 07777, 0700);
    /* Then a spool can live there. */
    char f[PATH_MAX];
    path_in_tmp(f, sizeof f, "shared/mine/run.log");
    spool_t *sp = NULL;
    ASSERT_OK(spool_open(f, 0, &sp));
    ASSERT_OK(spool_close(sp));
}

TEST(spool_mkdir_private_errors)
{
    char file[PATH_MAX], dir[PATH_MAX];
    path_in_tmp(file, sizeof file, "plain");
    int fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    ASSERT_EQ(spool_mkdir_private(file), -ENOTDIR);
    path_in_tmp(dir, sizeof dir, "plain/sub");
    ASSERT_EQ(spool_mkdir_private(dir), -ENOTDIR);
    /* a dangling symlink is no directory either (not "File exists") */
    char link[PATH_MAX];
    path_in_tmp(link, sizeof link, "dangling");
    ASSERT_OK(symlink("/nonexistent/rein-test", link));
    ASSERT_EQ(spool_mkdir_private(link), -ENOTDIR);
    ASSERT_EQ(spool_mkdir_private(""), -EINVAL);
    ASSERT_EQ(spool_mkdir_private(NULL), -EINVAL);
    ASSERT_OK(spool_mkdir_private("/")); /* the root exists */
}

/* The cap, at its edges: up to cap nothing is dropped; past cap + a step
 * the middle after the head is punched out, the head and a tail of at
 * least cap - head bytes stay, the file keeps its size (offsets are stream
 * offsets) and the dropped range is noted. */
TEST(spool_cap_keeps_head_and_rolling_tail)
{
    char path[PATH_MAX], note[PATH_MAX];
    path_in_tmp(path, sizeof path, "capped.log");
    path_in_tmp(note, sizeof note, "capped.log.dropped");
    const uint64_t cap = 64 * 1024, head = 16 * 1024;
    spool_t *sp;
    ASSERT_OK(spool_open(path, 0, &sp));
    ASSERT_EQ(spool_set_cap(sp, cap, head + 1, note), -EINVAL);
    ASSERT_EQ(spool_set_cap(sp, head, head, note), -EINVAL);
    ASSERT_OK(spool_set_cap(sp, cap, head, note));
    uint64_t a, b;
    ASSERT_EQ(spool_hole(sp, &a, &b), 1);
    ASSERT_EQ(a, 0);
    ASSERT_EQ(b, 0);
    /* Exactly cap + step - 1 bytes: still whole. */
    uint64_t step = (cap - head) / SPOOL_HOLE_STEP_DIV;
    unsigned char *data = malloc(4 * cap);
    ASSERT_TRUE(data != NULL);
    for (size_t i = 0; i < 4 * cap; i++)
        data[i] = (unsigned char)('a' + (i / 4096) % 26);
    ASSERT_OK(spool_write(sp, data, cap + step - 1));
    ASSERT_OK(spool_flush(sp));
    ASSERT_EQ(spool_hole(sp, &a, &b), 1);
    ASSERT_EQ(b, 0);
    ASSERT_TRUE(access(note, F_OK) != 0);
    /* One more byte crosses the step: the middle goes. */
    ASSERT_OK(spool_write(sp, data + cap + step - 1, 4 * cap - (cap + step - 1)));
    ASSERT_OK(spool_flush(sp));
    int hr = spool_hole(sp, &a, &b);
    if (hr == -EOPNOTSUPP)
        SKIP("this file system cannot punch holes");
    ASSERT_EQ(hr, 1);
    ASSERT_EQ(a, head);
    ASSERT_TRUE(b > head);
    ASSERT_TRUE(4 * cap - b >= cap - head); /* the tail kept */
    ASSERT_EQ(b % SPOOL_HOLE_ALIGN, 0);
    ASSERT_OK(spool_close(sp));
    ASSERT_EQ(file_size(path), (off_t)(4 * cap));
    buf_t got = BUF_INIT;
    read_all(path, &got);
    ASSERT_MEM(got.p, head, data, head);
    ASSERT_MEM(got.p + b, 4 * cap - b, data + b, 4 * cap - b);
    for (uint64_t i = a; i < b; i++)
        ASSERT_EQ(got.p[i], 0);
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_TRUE((uint64_t)st.st_blocks * 512 <= cap + step + SPOOL_HOLE_ALIGN);
    buf_t n = BUF_INIT;
    read_all(note, &n);
    char want[64];
    snprintf(want, sizeof want, "dropped %llu-%llu\n", (unsigned long long)a,
             (unsigned long long)b);
    ASSERT_STR(n.p, want);
    buf_free(&n);
    buf_free(&got);
    free(data);
}

/* Without a cap nothing is ever dropped, and flush gives the buffer back
 * (the next write allocates it again and still lands in order). */
TEST(spool_no_cap_and_flush_releases)
{
    char path[PATH_MAX];
    path_in_tmp(path, sizeof path, "plain.log");
    spool_t *sp;
    ASSERT_OK(spool_open(path, 0, &sp));
    uint64_t a, b;
    ASSERT_EQ(spool_hole(sp, &a, &b), 0);
    for (int i = 0; i < 3; i++) {
        ASSERT_OK(spool_write(sp, "ab", 2));
        ASSERT_OK(spool_flush(sp));
        ASSERT_OK(spool_flush(sp)); /* twice: nothing buffered, no buffer */
    }
    ASSERT_OK(spool_close(sp));
    buf_t got = BUF_INIT;
    read_all(path, &got);
    ASSERT_STR(got.p, "ababab");
    buf_free(&got);
}

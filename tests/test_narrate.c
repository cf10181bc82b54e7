/*
 * test_narrate.c — narrate plans against real files: cp/mv/ln into a
 * directory or onto a name, -t, rm, touch, chmod, option values that are
 * not paths, the operand cap and the directory-walk cap at their edges.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "harness.h"
#include "tutil.h"
#include "squash/emit.h"
#include "squash/narrate.h"

static void put(const char *name, size_t size)
{
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(ftruncate(fd, (off_t)size), 0);
    close(fd);
}

/* Plans argv, runs `sh -c script` (the command's effect), ends the plan. */
static void narrate(const char *const *argv, const char *script, buf_t *out)
{
    size_t argc = 0;
    while (argv[argc])
        argc++;
    narrate_t *n = NULL;
    ASSERT_OK(narrate_begin(argv, argc, &n));
    if (script)
        ASSERT_EQ(system(script), 0);
    buf_reset(out);
    ASSERT_OK(narrate_end(n, out));
    narrate_free(n);
    /* Each line a marker in the syntax every kind follows. */
    for (const char *p = out->p, *e; p && *p; p = e + 1) {
        e = strchr(p, '\n');
        ASSERT_TRUE(e != NULL);
        ASSERT_TRUE(tu_is_marker(p, (size_t)(e - p)));
    }
}

TEST(narrate_copies_moves_links)
{
    ASSERT_EQ(chdir(test_tmpdir()), 0);
    buf_t o = BUF_INIT;
    put("a", 4300);
    ASSERT_EQ(mkdir("d", 0700), 0);
    narrate((const char *[]){"cp", "-p", "a", "d", NULL}, "cp a d", &o);
    ASSERT_STR(o.p, "[rein] narrate cp: a → d/a (4.2 KiB)\n");
    narrate((const char *[]){"cp", "a", "d/a", NULL}, "cp a d/a", &o);
    ASSERT_STR(o.p, "[rein] narrate cp: a → d/a (4.2 KiB, replaced)\n");
    narrate((const char *[]){"cp", "-t", "d", "--", "a", NULL}, NULL, &o);
    ASSERT_STR(o.p, "[rein] narrate cp: a → d/a: unchanged\n");
    narrate((const char *[]){"mv", "a", "b", NULL}, "mv a b", &o);
    ASSERT_STR(o.p, "[rein] narrate mv: a → b (4.2 KiB, source removed)\n");
    narrate((const char *[]){"ln", "-sf", "b", "l", NULL}, "ln -s b l", &o);
    ASSERT_STR(o.p, "[rein] narrate ln: l → b (symlink)\n");
    narrate((const char *[]){"cp", "nope", "x", NULL}, NULL, &o);
    ASSERT_STR(o.p, "[rein] narrate cp: nope → x: not created\n");
    /* Not a narrated command: nothing. */
    narrate((const char *[]){"ls", "a", NULL}, NULL, &o);
    ASSERT_EQ(o.len, 0);
    buf_free(&o);
}

TEST(narrate_removes_creates_and_changes_modes)
{
    ASSERT_EQ(chdir(test_tmpdir()), 0);
    buf_t o = BUF_INIT;
    put("f", 10);
    narrate((const char *[]){"rm", "-f", "f", "ghost", NULL}, "rm -f f", &o);
    ASSERT_STR(o.p, "[rein] narrate rm: removed f (10 B)\n"
                    "[rein] narrate rm: ghost did not exist\n");
    narrate((const char *[]){"touch", "-d", "2020-01-01", "t", NULL},
            "touch t", &o);
    ASSERT_STR(o.p, "[rein] narrate touch: created t (0 B)\n");
    narrate((const char *[]){"chmod", "-x", "t", NULL}, "chmod 600 t", &o);
    ASSERT_STR(o.p, "[rein] narrate chmod: t 0644 → 0600\n");
    narrate((const char *[]){"mkdir", "-m", "700", "-p", "x/y", NULL},
            "mkdir -p x/y", &o);
    ASSERT_STR(o.p, "[rein] narrate mkdir: created x/y/\n");
    narrate((const char *[]){"rm", "-r", "x", NULL}, "rm -r x", &o);
    ASSERT_STR(o.p, "[rein] narrate rm: removed x/ (0 files, 0 B)\n");
    buf_free(&o);
}

TEST(narrate_operand_cap_at_its_edge)
{
    ASSERT_EQ(chdir(test_tmpdir()), 0);
    const char *argv[NARRATE_MAX_OPERANDS + 3] = {"rm"};
    char names[NARRATE_MAX_OPERANDS + 1][16];
    for (int i = 0; i <= NARRATE_MAX_OPERANDS; i++) {
        snprintf(names[i], sizeof names[i], "g%d", i);
        argv[i + 1] = names[i];
    }
    buf_t o = BUF_INIT;
    argv[NARRATE_MAX_OPERANDS + 1] = NULL; /* exactly the cap */
    narrate(argv, NULL, &o);
    ASSERT_TRUE(strstr(o.p, "more operands") == NULL);
    argv[NARRATE_MAX_OPERANDS + 1] = names[NARRATE_MAX_OPERANDS];
    argv[NARRATE_MAX_OPERANDS + 2] = NULL; /* one over */
    narrate(argv, NULL, &o);
    ASSERT_CONTAINS(o.p, "[rein] narrate rm: 1 more operands not narrated\n");
    buf_free(&o);
}

TEST(narrate_walk_cap_at_its_edge)
{
    ASSERT_EQ(chdir(test_tmpdir()), 0);
    ASSERT_EQ(mkdir("w", 0700), 0);
    put("w/1", 1);
    put("w/2", 2);
    uint64_t bytes, files;
    bool partial;
    /* Three entries: the directory and two files. */
    ASSERT_OK(narrate_tree_size("w", 3, &bytes, &files, &partial));
    ASSERT_FALSE(partial);
    ASSERT_EQ(bytes, 3);
    ASSERT_EQ(files, 2);
    ASSERT_OK(narrate_tree_size("w", 2, &bytes, &files, &partial));
    ASSERT_TRUE(partial);
    ASSERT_TRUE(NARRATE_WALK_MAX >= 1000);
}

TEST(narrate_sizes)
{
    char b[32];
    emit_size(0, b, sizeof b);
    ASSERT_STR(b, "0 B");
    emit_size(1023, b, sizeof b);
    ASSERT_STR(b, "1023 B");
    emit_size(1024, b, sizeof b);
    ASSERT_STR(b, "1.0 KiB");
    emit_size(1536ull * 1024, b, sizeof b);
    ASSERT_STR(b, "1.5 MiB");
}

/* Every wording a narrate marker has, once: the markers are formed in
 * emit.c (emit_narrate) from the facts narrate.c gathers, and this pins
 * them byte for byte. */
TEST(narrate_every_wording)
{
    ASSERT_EQ(chdir(test_tmpdir()), 0);
    buf_t o = BUF_INIT;
    char want[256];
    put("a", 2048);
    put("b", 10);
    ASSERT_EQ(mkdir("src", 0755), 0);
    put("src/1", 1000);
    put("src/2", 24);
    ASSERT_EQ(mkdir("dst", 0755), 0);
    /* A directory copied into one: a slash, its files and size. */
    narrate((const char *[]){"cp", "-r", "src", "dst", NULL}, "cp -r src dst",
            &o);
    ASSERT_STR(o.p, "[rein] narrate cp: src → dst/src/ (2 files, 1.0 KiB)\n");
    /* A move onto an existing name. */
    narrate((const char *[]){"mv", "-f", "b", "a", NULL}, "mv -f b a", &o);
    ASSERT_STR(o.p, "[rein] narrate mv: b → a (10 B, replaced, source "
                    "removed)\n");
    /* A hard link, and a symlink copied as a link (its size is "symlink"). */
    narrate((const char *[]){"ln", "a", "h", NULL}, "ln a h", &o);
    ASSERT_STR(o.p, "[rein] narrate ln: h → a (hard link)\n");
    ASSERT_EQ(symlink("a", "s"), 0);
    narrate((const char *[]){"cp", "-P", "s", "s2", NULL}, "cp -P s s2", &o);
    ASSERT_STR(o.p, "[rein] narrate cp: s → s2 (symlink)\n");
    /* rm that left its operand, rmdir, a directory's one file. */
    narrate((const char *[]){"rm", "a", NULL}, NULL, &o);
    ASSERT_STR(o.p, "[rein] narrate rm: a still exists\n");
    narrate((const char *[]){"rmdir", "dst/src", NULL}, "rm -r dst/src", &o);
    ASSERT_STR(o.p, "[rein] narrate rmdir: removed dst/src/ (2 files, "
                    "1.0 KiB)\n");
    put("dst/one", 3);
    narrate((const char *[]){"rm", "-r", "dst", NULL}, "rm -r dst", &o);
    ASSERT_STR(o.p, "[rein] narrate rm: removed dst/ (1 file, 3 B)\n");
    /* mkdir of what exists, and of what is not made. */
    narrate((const char *[]){"mkdir", "src", "nope", NULL}, NULL, &o);
    ASSERT_STR(o.p, "[rein] narrate mkdir: src/ already existed\n"
                    "[rein] narrate mkdir: nope not created\n");
    /* touch: updated, not created. */
    narrate((const char *[]){"touch", "a", "ghost", NULL}, "touch a", &o);
    ASSERT_STR(o.p, "[rein] narrate touch: updated a (10 B)\n"
                    "[rein] narrate touch: ghost not created\n");
    /* chmod, chown, chgrp of a missing path; chown to the same owner. */
    narrate((const char *[]){"chmod", "644", "ghost", NULL}, NULL, &o);
    ASSERT_STR(o.p, "[rein] narrate chmod: ghost does not exist\n");
    narrate((const char *[]){"chgrp", "0", "ghost", NULL}, NULL, &o);
    ASSERT_STR(o.p, "[rein] narrate chgrp: ghost does not exist\n");
    narrate((const char *[]){"chown", "x", "a", NULL}, NULL, &o);
    snprintf(want, sizeof want, "[rein] narrate chown: a %u:%u → %u:%u\n",
             (unsigned)getuid(), (unsigned)getgid(), (unsigned)getuid(),
             (unsigned)getgid());
    ASSERT_STR(o.p, want);
    /* truncate: a new file, a resize, one not made. */
    narrate((const char *[]){"truncate", "-s", "5", "t", NULL},
            "truncate -s 5 t", &o);
    ASSERT_STR(o.p, "[rein] narrate truncate: t new → 5 B\n");
    narrate((const char *[]){"truncate", "-s", "2K", "t", NULL},
            "truncate -s 2K t", &o);
    ASSERT_STR(o.p, "[rein] narrate truncate: t 5 B → 2.0 KiB\n");
    narrate((const char *[]){"truncate", "-s", "1", "no/t", NULL}, NULL, &o);
    ASSERT_STR(o.p, "[rein] narrate truncate: no/t not created\n");
    /* mv that made nothing. */
    narrate((const char *[]){"mv", "ghost", "g2", NULL}, NULL, &o);
    ASSERT_STR(o.p, "[rein] narrate mv: ghost → g2: not created\n");
    buf_free(&o);
}

/* A file name may hold a newline or an escape: the marker stays one line
 * (each control character a space), so a name cannot end it and start a
 * line that passes for another marker.  narrate printed the name as it
 * was, newline and all. */
TEST(narrate_marker_is_one_line_whatever_the_name)
{
    ASSERT_EQ(chdir(test_tmpdir()), 0);
    buf_t o = BUF_INIT;
    static const char name[] = "a\n[rein] exit 0\x1b[2J\x7f";
    narrate((const char *[]){"touch", name, NULL}, NULL, &o);
    ASSERT_STR(o.p, "[rein] narrate touch: a [rein] exit 0 [2J  not "
                    "created\n");
    put(name, 3);
    narrate((const char *[]){"cp", name, "b\tc", NULL}, NULL, &o);
    ASSERT_STR(o.p, "[rein] narrate cp: a [rein] exit 0 [2J  → b c: not "
                    "created\n");
    buf_free(&o);
}

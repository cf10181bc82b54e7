/*
 * narrate.c — what a file command changed, from stat() before and after
 * (see narrate.h).
 *
 * A plan is a list of items, one per path the command will touch: the
 * operand as written (what the person typed, so the marker reads like the
 * command), the path to stat, and, for copies, moves and links, the source
 * it came from.  Options are parsed the way coreutils parse them, as far
 * as naming paths goes: `-t DIR`, a trailing directory operand, `--`, and
 * options that take a value (so `touch -d 'next week' f` does not narrate a
 * file called "next week").
 */
#include "squash/narrate.h"

#include <assert.h>
#include <errno.h>
#include <fts.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "squash/emit.h"

enum narrate_op {
    OP_NONE,
    OP_COPY,  /* cp */
    OP_MOVE,  /* mv */
    OP_LINK,  /* ln */
    OP_REMOVE, /* rm, rmdir */
    OP_MKDIR,
    OP_TOUCH,
    OP_MODE,  /* chmod */
    OP_OWNER, /* chown, chgrp */
    OP_TRUNCATE,
};

/* What stat() saw of one path. */
struct narrate_st {
    bool exists;
    struct stat st;
    uint64_t bytes, files; /* a directory's tree size */
    bool partial;
};

struct narrate_item {
    char *src; /* copy/move/link source as written; NULL otherwise */
    char *dst; /* the path changed */
    struct narrate_st src_before, before, after;
};

struct narrate {
    enum narrate_op op;
    const char *name; /* "cp", for the marker */
    bool symbolic;    /* ln -s */
    struct narrate_item *items;
    size_t n;
    size_t more; /* operands beyond NARRATE_MAX_OPERANDS */
};

static const struct {
    const char *cmd;
    enum narrate_op op;
    const char *valued; /* short options taking a value */
    const char *const long_valued[4];
} narrate_cmds[] = {
    {"cp", OP_COPY, "tS", {"--target-directory", "--suffix", NULL}},
    {"mv", OP_MOVE, "tS", {"--target-directory", "--suffix", NULL}},
    {"ln", OP_LINK, "tS", {"--target-directory", "--suffix", NULL}},
    {"rm", OP_REMOVE, "", {NULL}},
    {"rmdir", OP_REMOVE, "", {NULL}},
    {"mkdir", OP_MKDIR, "m", {"--mode", "--context", NULL}},
    {"touch", OP_TOUCH, "drt", {"--date", "--reference", NULL}},
    {"chmod", OP_MODE, "", {"--reference", NULL}},
    {"chown", OP_OWNER, "", {"--reference", "--from", NULL}},
    {"chgrp", OP_OWNER, "", {"--reference", NULL}},
    {"truncate", OP_TRUNCATE, "sr", {"--size", "--reference", NULL}},
};

int narrate_tree_size(const char *path, size_t max_entries, uint64_t *bytes,
                      uint64_t *files, bool *partial)
{
    struct stat st;
    *bytes = *files = 0;
    *partial = false;
    if (lstat(path, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode)) {
        *bytes = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
        *files = 1;
        return 0;
    }
    char *const paths[] = {(char *)path, NULL};
    FTS *fts = fts_open(paths, FTS_PHYSICAL | FTS_NOCHDIR, NULL);
    if (!fts)
        return -errno;
    size_t seen = 0;
    FTSENT *e;
    while ((e = fts_read(fts))) {
        if (e->fts_info == FTS_DP)
            continue; /* a directory's second visit */
        if (++seen > max_entries) {
            *partial = true;
            break;
        }
        if (e->fts_info == FTS_F && e->fts_statp) {
            *bytes += (uint64_t)e->fts_statp->st_size;
            (*files)++;
        }
    }
    fts_close(fts);
    return 0;
}

static void narrate_stat(const char *path, struct narrate_st *s)
{
    memset(s, 0, sizeof *s);
    if (lstat(path, &s->st) < 0)
        return;
    s->exists = true;
    narrate_tree_size(path, NARRATE_WALK_MAX, &s->bytes, &s->files,
                      &s->partial);
}

void narrate_free(narrate_t *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++) {
        free(n->items[i].src);
        free(n->items[i].dst);
    }
    free(n->items);
    free(n);
}

static int narrate_add(narrate_t *n, const char *src, const char *dst)
{
    if (n->n == NARRATE_MAX_OPERANDS) {
        n->more++;
        return 0;
    }
    struct narrate_item *it = &n->items[n->n];
    memset(it, 0, sizeof *it);
    if ((src && !(it->src = strdup(src))) || !(it->dst = strdup(dst))) {
        free(it->src);
        return -ENOMEM;
    }
    n->n++;
    return 0;
}

/* DIR/basename(src), with one slash between. */
static char *narrate_join(const char *dir, const char *src)
{
    size_t sl = strlen(src);
    while (sl > 1 && src[sl - 1] == '/')
        sl--;
    const char *b = src + sl;
    while (b > src && b[-1] != '/')
        b--;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    char *out = NULL;
    if (asprintf(&out, "%.*s/%.*s", (int)dl, dir, (int)(sl - (size_t)(b - src)),
                 b) < 0)
        return NULL;
    return out;
}

static bool narrate_is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A chmod mode that looks like an option (`chmod -x f`). */
static bool narrate_mode_word(const char *w)
{
    if (w[0] != '-' && w[0] != '+' && w[0] != '=')
        return false;
    return w[1] && strspn(w + 1, "rwxXstugoa+-=,") == strlen(w + 1);
}

int narrate_begin(const char *const *argv, size_t argc, narrate_t **out)
{
    narrate_t *n = calloc(1, sizeof *n);
    const char **ops = NULL;
    size_t nops = 0;
    const char *target = NULL;
    int rc = -ENOMEM;
    if (!n)
        return -ENOMEM;
    *out = n;
    if (argc == 0)
        return 0;
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    size_t c;
    for (c = 0; c < sizeof narrate_cmds / sizeof narrate_cmds[0]; c++)
        if (!strcmp(base, narrate_cmds[c].cmd))
            break;
    if (c == sizeof narrate_cmds / sizeof narrate_cmds[0])
        return 0;
    n->op = narrate_cmds[c].op;
    n->name = narrate_cmds[c].cmd;
    n->items = calloc(NARRATE_MAX_OPERANDS, sizeof *n->items);
    ops = calloc(argc, sizeof *ops);
    if (!n->items || !ops)
        goto fail;

    /* Options and operands. */
    bool dashdash = false, first_operand_is_arg = n->op == OP_MODE ||
                                                   n->op == OP_OWNER;
    bool have_arg = false;
    for (size_t i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (!dashdash && !strcmp(w, "--")) {
            dashdash = true;
            continue;
        }
        if (!dashdash && n->op == OP_MODE && !have_arg &&
            narrate_mode_word(w)) {
            have_arg = true; /* chmod -x f: the mode, not an option */
            continue;
        }
        if (!dashdash && w[0] == '-' && w[1]) {
            if (w[1] == '-') {
                bool valued = false;
                for (const char *const *l = narrate_cmds[c].long_valued; *l;
                     l++)
                    if (!strcmp(w, *l))
                        valued = true;
                if (!strncmp(w, "--target-directory=", 19))
                    target = w + 19;
                else if (!strcmp(w, "--target-directory") && i + 1 < argc)
                    target = argv[i + 1];
                if (!strncmp(w, "--reference", 11))
                    have_arg = true; /* chmod --reference=R f: no mode */
                if (!strcmp(w, "--symbolic"))
                    n->symbolic = true;
                if (valued)
                    i++;
                continue;
            }
            /* A cluster of short options; a valued one takes the rest of
             * the word or the next word. */
            for (const char *o = w + 1; *o; o++) {
                if (*o == 's' && n->op == OP_LINK)
                    n->symbolic = true;
                if (strchr(narrate_cmds[c].valued, *o)) {
                    const char *val = o[1] ? o + 1 : (i + 1 < argc ? argv[++i]
                                                                   : NULL);
                    if (*o == 't' && (n->op == OP_COPY || n->op == OP_MOVE ||
                                      n->op == OP_LINK))
                        target = val;
                    if (*o == 'r' && n->op == OP_TRUNCATE)
                        have_arg = true;
                    break;
                }
            }
            continue;
        }
        if (first_operand_is_arg && !have_arg) {
            have_arg = true; /* the mode or owner */
            continue;
        }
        ops[nops++] = w;
    }

    switch (n->op) {
    case OP_COPY:
    case OP_MOVE:
    case OP_LINK: {
        const char *dest = target;
        size_t nsrc = nops;
        bool into_dir = target != NULL;
        if (!dest) {
            if (nops == 0)
                break;
            if (nops == 1 && n->op == OP_LINK) {
                dest = ".";
                into_dir = true;
            } else if (nops == 1) {
                break; /* a missing destination: the command says so */
            } else {
                dest = ops[--nsrc];
                size_t dl = strlen(dest);
                into_dir = nsrc > 1 || narrate_is_dir(dest) ||
                           (dl && dest[dl - 1] == '/');
            }
        }
        for (size_t i = 0; i < nsrc; i++) {
            char *d = into_dir ? narrate_join(dest, ops[i]) : strdup(dest);
            if (!d)
                goto fail;
            rc = narrate_add(n, ops[i], d);
            free(d);
            if (rc < 0)
                goto fail;
        }
        break;
    }
    default:
        for (size_t i = 0; i < nops; i++)
            if ((rc = narrate_add(n, NULL, ops[i])) < 0)
                goto fail;
        break;
    }
    for (size_t i = 0; i < n->n; i++) {
        struct narrate_item *it = &n->items[i];
        if (it->src)
            narrate_stat(it->src, &it->src_before);
        narrate_stat(it->dst, &it->before);
    }
    free(ops);
    return 0;
fail:
    free(ops);
    narrate_free(n);
    *out = NULL;
    return -ENOMEM;
}

/* The facts of one stat a marker may state (emit_file_t). */
static emit_file_t narrate_file(const struct narrate_st *s)
{
    return (emit_file_t){
        .exists = s->exists,
        .dir = S_ISDIR(s->st.st_mode),
        .symlink = S_ISLNK(s->st.st_mode),
        .bytes = s->bytes,
        .files = s->files,
        .partial = s->partial,
        .mode = (unsigned)(s->st.st_mode & 07777),
        .uid = (unsigned)s->st.st_uid,
        .gid = (unsigned)s->st.st_gid,
    };
}

/* What the command did to one path, judged from its stats before and
 * after; emit_narrate words it. */
static emit_narrate_kind_t narrate_kind(const narrate_t *n,
                                        const struct narrate_item *it)
{
    const struct narrate_st *a = &it->after, *b = &it->before;
    bool same = b->exists && a->exists && b->st.st_ino == a->st.st_ino &&
                b->st.st_dev == a->st.st_dev &&
                b->st.st_mtim.tv_sec == a->st.st_mtim.tv_sec &&
                b->st.st_mtim.tv_nsec == a->st.st_mtim.tv_nsec &&
                b->st.st_ctim.tv_sec == a->st.st_ctim.tv_sec &&
                b->st.st_ctim.tv_nsec == a->st.st_ctim.tv_nsec;
    switch (n->op) {
    case OP_COPY:
    case OP_MOVE:
    case OP_LINK:
        if (!a->exists)
            return EMIT_NARRATE_NOT_CREATED;
        if (same)
            return EMIT_NARRATE_UNCHANGED;
        return n->op == OP_LINK ? EMIT_NARRATE_LINKED : EMIT_NARRATE_COPIED;
    case OP_REMOVE:
        return !b->exists  ? EMIT_NARRATE_ABSENT
               : a->exists ? EMIT_NARRATE_KEPT
                           : EMIT_NARRATE_REMOVED;
    case OP_MKDIR:
        return b->exists    ? EMIT_NARRATE_DIR_EXISTED
               : !a->exists ? EMIT_NARRATE_NOT_CREATED
                            : EMIT_NARRATE_DIR_MADE;
    case OP_TOUCH:
        return a->exists ? EMIT_NARRATE_TOUCHED : EMIT_NARRATE_NOT_CREATED;
    case OP_MODE:
        return a->exists ? EMIT_NARRATE_MODE : EMIT_NARRATE_MISSING;
    case OP_OWNER:
        return a->exists ? EMIT_NARRATE_OWNER : EMIT_NARRATE_MISSING;
    case OP_TRUNCATE:
        return a->exists ? EMIT_NARRATE_RESIZED : EMIT_NARRATE_NOT_CREATED;
    case OP_NONE:
        break;
    }
    assert(!"narrate_kind: a plan without a command has no items");
    return EMIT_NARRATE_NOT_CREATED;
}

static int narrate_item_end(narrate_t *n, struct narrate_item *it, buf_t *o)
{
    emit_narrate_t m = {
        .kind = narrate_kind(n, it),
        .cmd = n->name,
        .src = it->src,
        .path = it->dst,
        .symbolic = n->symbolic,
        .source_removed = n->op == OP_MOVE && it->src_before.exists,
        .before = narrate_file(&it->before),
        .after = narrate_file(&it->after),
    };
    return emit_narrate(o, &m);
}

int narrate_end(narrate_t *n, buf_t *out)
{
    int rc;
    if (!n)
        return 0;
    for (size_t i = 0; i < n->n; i++) {
        narrate_stat(n->items[i].dst, &n->items[i].after);
        if ((rc = narrate_item_end(n, &n->items[i], out)) < 0)
            return rc;
    }
    if (n->more)
        return emit_narrate_more(out, n->name, n->more);
    return 0;
}

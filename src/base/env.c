/*
 * env.c — a child's environment (see env.h).
 *
 * Linear lookups: an environment holds tens of entries, and this runs once
 * per spawn.
 */
#include "base/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rein.h"

extern char **environ;

bool env_valid(const char *entry)
{
    const char *eq = entry ? strchr(entry, '=') : NULL;
    return eq && eq != entry;
}

static size_t name_len(const char *entry)
{
    return (size_t)(strchr(entry, '=') - entry);
}

static long find(const env_t *e, const char *name, size_t len)
{
    for (size_t i = 0; i < e->n; i++)
        if (!strncmp(e->v[i], name, len) && e->v[i][len] == '=')
            return (long)i;
    return -1;
}

int env_init(env_t *e, const char *const *base)
{
    const char *const *src = base ? base : (const char *const *)environ;
    size_t n = 0;
    while (src && src[n])
        n++;
    e->n = 0;
    e->v = calloc(n + 1, sizeof *e->v);
    if (!e->v)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        /* Only well-formed entries, and a name once: the first, which is
         * the one getenv finds.  With both, a replaced first would leave
         * the second to a shell, which takes the last it reads. */
        if (!env_valid(src[i]) || find(e, src[i], name_len(src[i])) >= 0)
            continue;
        e->v[e->n] = strdup(src[i]);
        if (!e->v[e->n]) {
            env_free(e);
            return -ENOMEM;
        }
        e->n++;
    }
    return 0;
}

int env_put(env_t *e, const char *entry)
{
    if (!env_valid(entry))
        return REIN_EENV;
    char *copy = strdup(entry);
    if (!copy)
        return -ENOMEM;
    long i = find(e, entry, name_len(entry));
    if (i >= 0) {
        free(e->v[i]);
        e->v[i] = copy;
        return 0;
    }
    char **v = realloc(e->v, (e->n + 2) * sizeof *v);
    if (!v) {
        free(copy);
        return -ENOMEM;
    }
    e->v = v;
    e->v[e->n++] = copy;
    e->v[e->n] = NULL;
    return 0;
}

int env_put_all(env_t *e, const char *const *list)
{
    for (size_t i = 0; list && list[i]; i++) {
        int rc = env_put(e, list[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int env_default(env_t *e, const char *name, const char *value)
{
    if (find(e, name, strlen(name)) >= 0)
        return 0;
    size_t len = strlen(name) + strlen(value) + 2;
    char *s = malloc(len);
    if (!s)
        return -ENOMEM;
    snprintf(s, len, "%s=%s", name, value);
    int rc = env_put(e, s);
    free(s);
    return rc;
}

const char *env_get(const env_t *e, const char *name)
{
    size_t len = strlen(name);
    long i = find(e, name, len);
    return i >= 0 ? e->v[i] + len + 1 : NULL;
}

void env_free(env_t *e)
{
    if (!e || !e->v)
        return;
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
    e->v = NULL;
    e->n = 0;
}

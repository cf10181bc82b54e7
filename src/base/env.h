/*
 * env.h — building a child's environment.
 *
 * Children get the current environment with the caller's NAME=value entries
 * laid over it (the caller's win).  Entries are validated: a string without
 * '=' or with an empty name is an error, never a silently odd environment.
 */
#ifndef REIN_BASE_ENV_H
#define REIN_BASE_ENV_H

#include <stdbool.h>
#include <stddef.h>

typedef struct env {
    char **v; /* NULL-terminated; each entry malloc'ed */
    size_t n;
} env_t;

/* Copies base (NULL: environ) into e: its well-formed entries, each name
 * once (the first, as getenv finds it). */
int env_init(env_t *e, const char *const *base);
/* Sets "NAME=value" (replacing NAME).  REIN_EENV when malformed. */
int env_put(env_t *e, const char *entry);
/* Sets every entry of list (NULL-terminated, may be NULL). */
int env_put_all(env_t *e, const char *const *list);
/* Sets name=value only when name is not set. */
int env_default(env_t *e, const char *name, const char *value);
/* The value of name, or NULL. */
const char *env_get(const env_t *e, const char *name);
/* True when entry is a well-formed NAME=value. */
bool env_valid(const char *entry);
void env_free(env_t *e);

#endif

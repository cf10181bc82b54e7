/*
 * fixup.h — internals of the bash fixups (rein_bash_fixup in rein.h).
 *
 * The public contract lives in rein.h.  This header names the limit the
 * rewrite honours and the fault-injection hook the tests use to prove that
 * every allocation failure comes back as -ENOMEM with nothing leaked.
 */
#ifndef REIN_TERM_FIXUP_H
#define REIN_TERM_FIXUP_H

/* Commands longer than this (bytes, NUL not counted) are returned unchanged:
 * agents' one-liners are far shorter, and the cap bounds the work done
 * before a command even starts. */
#define FIXUP_MAX_INPUT (64 * 1024)

/* Nesting beyond this ($( ), ( ), ${ }, $(( )) inside each other) makes the
 * command too unusual to rewrite: it is returned unchanged.  Also bounds the
 * lexer's recursion. */
#define FIXUP_MAX_DEPTH 64

/* Compound keywords (if/for/while/case/{/[[) open inside one command list
 * at once, beyond which the command is returned unchanged. */
#define FIXUP_MAX_NEST 32

/*
 * Fault injection for tests: when non-zero, the Nth allocation (counting
 * from 1) made by one rein_bash_fixup call fails as if memory ran out.
 * 0, the default, disables it.  Not thread-safe; for tests only.
 */
extern unsigned long fixup_fail_nth_alloc;

#endif

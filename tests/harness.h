/*
 * harness.h — rein's test harness.
 *
 * TEST(name) { ... } defines a test; the runner (harness.c) forks each test
 * in its own process group with a timeout, runs them in parallel on the
 * available cores, and ends with the line "N passed, N failed, N skipped".
 * Asserts print both values and end the test at once.  A test that cannot
 * run here calls SKIP(...); SKIP_FACILITY(...) is for facilities that CI
 * machines always have, where a skip is a failure.
 */
#ifndef REIN_TEST_HARNESS_H
#define REIN_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rein.h"

typedef void (*test_fn)(void);

struct test_case {
    const char *name;
    const char *file;
    test_fn fn;
    unsigned timeout_s;
    bool solo; /* runs alone, after the others (see TEST_SOLO) */
    struct test_case *next;
};

void test_register(struct test_case *tc);

/* The default time a test may take before the runner kills it. */
#define TEST_DEFAULT_TIMEOUT_S 60

#define TEST_DEF_(tname, timeout, alone)                                    \
    static void test_##tname(void);                                         \
    static struct test_case tc_##tname = {#tname, __FILE__, test_##tname,   \
                                          (timeout), (alone), NULL};        \
    __attribute__((constructor)) static void reg_##tname(void)              \
    {                                                                       \
        test_register(&tc_##tname);                                         \
    }                                                                       \
    static void test_##tname(void)

#define TEST_T(tname, timeout) TEST_DEF_(tname, timeout, false)
#define TEST(tname) TEST_T(tname, TEST_DEFAULT_TIMEOUT_S)
/* A test that disturbs the machine for others (it forces pid reuse through
 * ns_last_pid): it runs with nothing else running, after the rest. */
#define TEST_SOLO(tname, timeout) TEST_DEF_(tname, timeout, true)

__attribute__((noreturn, format(printf, 3, 4)))
void test_fail(const char *file, int line, const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2)))
void test_skip(const char *fmt, ...);
/* Skips, except on CI (CI=true), where the facility must exist: fails. */
__attribute__((noreturn, format(printf, 2, 3)))
void test_skip_facility(const char *facility, const char *fmt, ...);
/* Prints bytes as a C string literal (escapes non-printables) to stderr. */
void test_print_bytes(const char *label, const void *p, size_t n);
void test_fail_mem(const char *file, int line, const char *ea, const char *eb,
                   const void *a, size_t alen, const void *b, size_t blen)
    __attribute__((noreturn));

#define SKIP(...) test_skip(__VA_ARGS__)
#define SKIP_FACILITY(fac, ...) test_skip_facility(fac, __VA_ARGS__)
/* The exit status of a test process that skipped; a test that forks one
 * which may skip reads it to tell a skip from a failure. */
#define SKIP_EXIT 77

#define ASSERT_TRUE(c)                                                      \
    do {                                                                    \
        if (!(c))                                                           \
            test_fail(__FILE__, __LINE__, "ASSERT_TRUE(%s)", #c);           \
    } while (0)

#define ASSERT_FALSE(c)                                                     \
    do {                                                                    \
        if (c)                                                              \
            test_fail(__FILE__, __LINE__, "ASSERT_FALSE(%s)", #c);          \
    } while (0)

/* Integer comparison: ASSERT_INT(a, ==, b), printing both values. */
#define ASSERT_INT(a, op, b)                                                \
    do {                                                                    \
        long long a_ = (long long)(a), b_ = (long long)(b);                 \
        if (!(a_ op b_))                                                    \
            test_fail(__FILE__, __LINE__,                                   \
                      "ASSERT_INT(%s %s %s): %lld vs %lld", #a, #op, #b,    \
                      a_, b_);                                              \
    } while (0)

#define ASSERT_EQ(a, b) ASSERT_INT(a, ==, b)

/* A rein call that must succeed; prints the error's name and message. */
#define ASSERT_OK(call)                                                     \
    do {                                                                    \
        int rc_ = (call);                                                   \
        if (rc_ < 0)                                                        \
            test_fail(__FILE__, __LINE__, "ASSERT_OK(%s): %d %s (%s)",      \
                      #call, rc_, rein_err_name(rc_), rein_strerror(rc_));  \
    } while (0)

#define ASSERT_STR(a, b)                                                    \
    do {                                                                    \
        const char *a_ = (a), *b_ = (b);                                    \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                              \
            test_fail(__FILE__, __LINE__,                                   \
                      "ASSERT_STR(%s, %s): \"%s\" vs \"%s\"", #a, #b,       \
                      a_ ? a_ : "(null)", b_ ? b_ : "(null)");              \
    } while (0)

/* Substring check: haystack contains needle. */
#define ASSERT_CONTAINS(hay, needle)                                        \
    do {                                                                    \
        const char *h_ = (hay), *n_ = (needle);                             \
        if (!h_ || !n_ || !strstr(h_, n_))                                  \
            test_fail(__FILE__, __LINE__,                                   \
                      "ASSERT_CONTAINS(%s, %s): \"%s\" lacks \"%s\"", #hay, \
                      #needle, h_ ? h_ : "(null)", n_ ? n_ : "(null)");     \
    } while (0)

/* Substring check: haystack does not contain needle. */
#define ASSERT_NOT_CONTAINS(hay, needle)                                    \
    do {                                                                    \
        const char *h_ = (hay), *n_ = (needle);                             \
        if (!h_ || !n_ || strstr(h_, n_))                                   \
            test_fail(__FILE__, __LINE__,                                   \
                      "ASSERT_NOT_CONTAINS(%s, %s): \"%s\" has \"%s\"",    \
                      #hay, #needle, h_ ? h_ : "(null)",                    \
                      n_ ? n_ : "(null)");                                  \
    } while (0)

#define ASSERT_MEM(a, alen, b, blen)                                        \
    do {                                                                    \
        const void *a_ = (a), *b_ = (b);                                    \
        size_t al_ = (alen), bl_ = (blen);                                  \
        if (al_ != bl_ || (al_ && memcmp(a_, b_, al_) != 0))                \
            test_fail_mem(__FILE__, __LINE__, #a, #b, a_, al_, b_, bl_);    \
    } while (0)

/* Helpers for tests that run processes. */

/* The directory of the test runner's binary's helpers (build/tests/bin). */
const char *test_bin_dir(void);
/* The build directory (build/ or build-san/): the rein binary is there. */
const char *test_build_dir(void);
/* A fresh 0700 directory under $TMPDIR for this test; removed by the runner. */
const char *test_tmpdir(void);
/* Milliseconds on the monotonic clock. */
uint64_t test_now_ms(void);
/* True when pid exists and is not a zombie. */
bool test_pid_alive(pid_t pid);
/* The longest test_wait_gone waits before it reports failure. */
#define TEST_WAIT_GONE_MS 15000
/* Waits until pid (any process, not only a child) has exited (a zombie
 * counts), at most TEST_WAIT_GONE_MS; false when it is still there.  It
 * sleeps on a pidfd; where pidfd_open is missing (valgrind) it polls. */
bool test_wait_gone(pid_t pid);

#endif

/*
 * fuzz_answer.c — rein as the terminal (term/answer.h) on arbitrary
 * program output: the query scanner, and the libvterm 0.1.4 screen model
 * it feeds, which a session's screen view and full-screen results render.
 *
 * libvterm 0.1.4 reads and writes outside its arrays on some input (a CSI
 * of more than 16 arguments, a DECRQSS reply, a saved cursor or scroll
 * region outside a shrunk screen); answer.c keeps that from it, and this
 * target, under ASan, is what says it does, with resizes between reads.
 *
 * The first byte picks the read size, the second where resizes fall and
 * to what size.  Checked: every reply is one whole escape sequence
 * shorter than TERM_ANSWER_REPLY_MAX; without resizes, reading in pieces
 * changes nothing (the same replies, cursor, alternate-screen state and
 * switch offsets, and screen cells as one read).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <vterm.h>

#include "base/buf.h"
#include "term/answer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_COLS 80
#define FZ_ROWS 24

static void fz_reply(const void *r, size_t n, void *data)
{
    const unsigned char *p = r;
    if (n < 2 || n >= TERM_ANSWER_REPLY_MAX || p[0] != 0x1b)
        abort();
    buf_append(data, r, n);
}

/* A hash of every cell of the screen, the cursor, and the alternate
 * screen's flag and switch offsets. */
static uint64_t fz_screen_hash(term_answer_t *a)
{
    VTerm *vt = term_answer_vterm(a);
    VTermScreen *scr = vterm_obtain_screen(vt);
    int rows, cols;
    vterm_get_size(vt, &rows, &cols);
    uint64_t h = 1469598103934665603ull;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            VTermScreenCell cell;
            if (!vterm_screen_get_cell(scr, (VTermPos){r, c}, &cell))
                abort();
            for (int k = 0; k < VTERM_MAX_CHARS_PER_CELL && cell.chars[k];
                 k++)
                h = (h ^ cell.chars[k]) * 1099511628211ull;
            h = (h ^ (uint64_t)(unsigned char)cell.width) * 1099511628211ull;
        }
    VTermPos pos;
    vterm_state_get_cursorpos(vterm_obtain_state(vt), &pos);
    if (pos.row < 0 || pos.row >= rows || pos.col < 0 || pos.col > cols)
        abort();
    h = (h ^ (uint64_t)pos.row) * 1099511628211ull;
    h = (h ^ (uint64_t)pos.col) * 1099511628211ull;
    uint64_t sp[TERM_ANSWER_ALT_SPANS][2];
    size_t ns = term_answer_alt_spans(a, 0, sp, TERM_ANSWER_ALT_SPANS);
    for (size_t i = 0; i < ns; i++) {
        if (sp[i][0] >= sp[i][1] || (i && sp[i][0] < sp[i - 1][1]))
            abort(); /* each ends after it starts, in order, apart */
        h = (h ^ sp[i][0]) * 1099511628211ull;
        h = (h ^ sp[i][1]) * 1099511628211ull;
    }
    return (h ^ term_answer_alt(a)) * 1099511628211ull;
}

/* Feeds p to a responder and a screen model in reads of `chunk` bytes,
 * resizing both after a read where `resize` (0: never) says so; returns
 * the screen's hash and the replies in *replies. */
static uint64_t fz_run(const uint8_t *p, size_t n, size_t chunk,
                       unsigned resize, buf_t *replies)
{
    term_answer_t *ans, *scr;
    if (term_answer_new(FZ_COLS, FZ_ROWS, fz_reply, replies, &ans) < 0 ||
        term_answer_new(FZ_COLS, FZ_ROWS, NULL, NULL, &scr) < 0)
        abort();
    vterm_screen_enable_altscreen(vterm_obtain_screen(term_answer_vterm(scr)),
                                  1);
    vterm_screen_reset(vterm_obtain_screen(term_answer_vterm(scr)), 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i += chunk, k++) {
        size_t len = n - i < chunk ? n - i : chunk;
        term_answer_feed(ans, p + i, len);
        term_answer_feed(scr, p + i, len);
        if (resize && (k * resize) % 5 == 0) {
            /* Sizes as a session clamps them, shrinking and growing. */
            unsigned cols = 20 + (p[i] * resize) % 120;
            unsigned rows = 5 + (p[i] ^ resize) % 40;
            term_answer_resize(ans, cols, rows);
            term_answer_resize(scr, cols, rows);
        }
    }
    uint64_t h = fz_screen_hash(scr);
    if (term_answer_alt(ans) != term_answer_alt(scr))
        abort();
    term_answer_free(ans);
    term_answer_free(scr);
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t chunk = (size_t)data[0] % 17 + 1;
    unsigned resize = data[1];
    const uint8_t *p = data + 2;
    size_t n = size - 2;
    buf_t whole = BUF_INIT, pieces = BUF_INIT, resized = BUF_INIT;
    uint64_t a = fz_run(p, n, n ? n : 1, 0, &whole);
    uint64_t b = fz_run(p, n, chunk, 0, &pieces);
    if (a != b || whole.len != pieces.len ||
        (whole.len && memcmp(whole.p, pieces.p, whole.len)))
        abort();
    if (resize)
        fz_run(p, n, chunk, resize, &resized);
    buf_free(&whole);
    buf_free(&pieces);
    buf_free(&resized);
    return 0;
}

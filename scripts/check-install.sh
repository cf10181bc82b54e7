#!/usr/bin/env bash
# check-install.sh — `make install` into a scratch prefix, then build and run
# a program against the installed header and library through pkg-config,
# exactly as the README tells a user to.  Run by `make check`.
set -euo pipefail
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
make -s --no-print-directory install PREFIX="$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cat > "$prefix/hello.c" <<'C'
#include <rein.h>
#include <stdio.h>
static void on_chunk(const char *t, size_t n, void *d) { (void)d; fwrite(t, 1, n, stdout); }
int main(void)
{
    rein_pty_t *p;
    rein_run_result_t r;
    rein_pty_start_opts_t o = {.command = "printf installed", .on_chunk = on_chunk};
    if (rein_pty_new(&p) < 0 || rein_pty_start(p, &o, &r) < 0)
        return 125;
    rein_pty_free(p);
    return r.exit_code;
}
C
cc -o "$prefix/hello" "$prefix/hello.c" $(pkg-config --cflags --libs --static rein)
out=$("$prefix/hello")
[ "$out" = "installed" ] || { echo "check-install: got '$out'" >&2; exit 1; }
[ -f "$prefix/share/man/man1/rein.1" ] && [ -x "$prefix/bin/rein" ] || { echo "check-install: missing files" >&2; exit 1; }
"$prefix/bin/rein" --version >/dev/null
echo "check-install: ok (pkg-config build against $prefix)"

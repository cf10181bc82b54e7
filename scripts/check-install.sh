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
# Under `make SAN=1 check` the library installed is the sanitizer build,
# and a program linked with it needs the sanitizers' runtimes.
san=
[ "${SAN:-0}" = 1 ] && san="-fsanitize=address,undefined"
cc $san -o "$prefix/hello" "$prefix/hello.c" $(pkg-config --cflags --libs rein)
out=$("$prefix/hello")
[ "$out" = "installed" ] || { echo "check-install: got '$out'" >&2; exit 1; }
[ -f "$prefix/share/man/man1/rein.1" ] && [ -x "$prefix/bin/rein" ] || { echo "check-install: missing files" >&2; exit 1; }
"$prefix/bin/rein" --version >/dev/null
# The installed binary finds the installed grammars (<bin>/../share/rein/
# grammars) with no help from the environment: the `tool` noise reason
# comes only from a grammar's rule (gcc's `In file included from`, a lead
# rule: noise when, as here, no diagnostic follows it; the universal tier
# knows the chain too, but leaves such lines plain).
[ -f "$prefix/share/rein/grammars/gcc.json" ] &&
    [ -f "$prefix/share/rein/grammars/_shared/c-compiler.json" ] ||
    { echo "check-install: grammars not installed" >&2; exit 1; }
{
    for i in $(seq 1 40); do echo "In file included from /usr/include/h$i.h:1,"; done
    echo "building x.c"
    echo "x.c:3:5: error: 'y' undeclared (first use in this function)"
    echo "    3 |     y = 1;"
} > "$prefix/sample"
out=$(cd / && env -u REIN_GRAMMAR_DIR HOME="$prefix" XDG_CONFIG_HOME= \
      "$prefix/bin/rein" squash --as "gcc x.c" --exit 1 --log /dev/null < "$prefix/sample")
grep -q "^\[rein\] noise 40 lines (tool 40)$" <<<"$out" &&
    grep -q "^x.c:3:5: error: 'y' undeclared" <<<"$out" ||
    { echo "check-install: installed rein did not use its grammars:" >&2; echo "$out" >&2; exit 1; }
echo "check-install: ok (pkg-config build against $prefix)"

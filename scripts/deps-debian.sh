#!/usr/bin/env bash
# deps-debian.sh — install what rein needs to build, test and run CI on
# Debian 12, and nothing that is already there.  Idempotent: when everything
# is present it only checks and exits 0.  All output goes to stderr, since
# `make serve` runs it before handing stdout to the MCP protocol.
#
#   scripts/deps-debian.sh           install what is missing
#   scripts/deps-debian.sh --check   exit 1 (listing them) when anything is missing
set -euo pipefail
exec 1>&2

check_only=0
[ "${1:-}" = "--check" ] && check_only=1

missing=()
# Libraries: present when pkg-config knows the module.
declare -A pc=(
  [jansson]=libjansson-dev
  [libpcre2-8]=libpcre2-dev
  [sqlite3]=libsqlite3-dev
  [vterm]=libvterm-dev
)
# Tools: present when the command exists.
declare -A cmd=(
  [cc]=build-essential
  [make]=build-essential
  [pkg-config]=pkg-config
  [clang]=clang
  [valgrind]=valgrind
  [cppcheck]=cppcheck
  # The grammar fixtures (check-grammars.py) and tests that drive a REPL.
  # Debian's nodejs pulls it in; a node installed another way does not.
  [python3]=python3
  # Tests run git (its editor, merges) and a pager on pipes; a minimal
  # Debian has neither less nor, unpacked from a tarball, git.
  [git]=git
  [less]=less
)

add() { case " ${missing[*]-} " in *" $1 "*) ;; *) missing+=("$1") ;; esac; }

for c in "${!cmd[@]}"; do command -v "$c" >/dev/null 2>&1 || add "${cmd[$c]}"; done
if command -v pkg-config >/dev/null 2>&1; then
  for m in "${!pc[@]}"; do pkg-config --exists "$m" 2>/dev/null || add "${pc[$m]}"; done
else
  for m in "${!pc[@]}"; do add "${pc[$m]}"; done
fi
# libFuzzer and the sanitizer runtimes for clang 14 (Debian 12's clang).
if command -v clang >/dev/null 2>&1; then
  # The runtime is named for the machine (fuzzer-x86_64, fuzzer-aarch64...).
  rt=$(clang -print-resource-dir 2>/dev/null)/lib/linux
  compgen -G "$rt/libclang_rt.fuzzer-*.a" >/dev/null || add libclang-rt-14-dev
else
  add libclang-rt-14-dev
fi
# Node and npm run the MCP protocol tests.  These machines ship them from
# another source, and Debian's npm conflicts with it: only when absent.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  add nodejs
  add npm
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ $check_only -eq 1 ]; then
  echo "deps: missing: ${missing[*]}"
  exit 1
fi

sudo=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "deps: need root or sudo to install: ${missing[*]}"; exit 1; }
  sudo=sudo
fi
echo "deps: installing ${missing[*]}"
# Through env, since sudo's env_reset would drop an exported variable; and
# stdin from /dev/null, since under `make serve` it is the MCP client's.
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
$sudo env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null

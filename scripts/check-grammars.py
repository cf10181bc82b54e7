#!/usr/bin/env python3
"""check-grammars.py — validate grammars/*.json and run the fixtures through
a reference classification.

    scripts/check-grammars.py [-v] [--grammars DIR] [--fixtures DIR]
                              [--corpus DIR] [FIXTURE-NAME-SUBSTRING...]

A development aid and a CI check, stdlib only.  It is *not* the squasher:
the C loader and classifier (src/squash/) are the truth.  What it does:

1. Validates every grammar against docs/grammars.md: required fields, types,
   unknown fields, duplicate rule ids, unknown includes (and include
   cycles), the limits (256 KiB file, 256 rules, 4 KiB pattern,
   multiline.max_lines 1..200), and compiles every pattern.  Patterns are
   PCRE2 for rein; here they are translated (`(?<n>` → `(?P<n>`) and
   compiled with Python's `re`, so a pattern outside the common subset
   (\\h, \\R, \\K, \\Q..\\E, (?|, \\p{..}, possessive quantifiers, …) is an
   error too: keep grammars portable.  Non-ASCII characters may appear as
   literals (they match byte for byte with or without PCRE2_UTF) but not
   inside a character class.  Lint (warnings, not errors): a
   pattern not anchored with ^, more than one unbounded `.*`/`.+`, and a
   quantified group that itself ends in a quantifier (the shape of
   catastrophic backtracking); each pattern is also timed on hostile lines.

2. For each fixture (tests/fixtures/<tool>/<name>.out + .json, or a corpus
   folder with `output` + `case.json`) it picks the grammar the way the
   router will (argv[0] basename after sudo/env/time/nice/npx/`python -m X`;
   a grammar whose detect.args matches beats one without args; in a
   compound command the last segment with a grammar wins), VT-strips the
   output with a small column model, and classifies each line:

     - a hazard rule (this grammar's, then each include's, in order) starts
       a hazard; its multiline capture then takes the following lines that
       match `continue` (or everything up to and including `until`), at
       most max_lines (default 50), unless a line starts a new hazard;
       with `excerpt` (clang's gutterless excerpt) also, by position, a
       line no rule matches right after the hazard line or a line matching
       `excerpt` when a caret line (spaces, `~`, `^`) follows it, the caret
       line, and a fix-it after a caret line (no rule matches it, it starts
       no further left than the carets);
     - otherwise the outcome rules, then the noise rules (same order);
       the lines of a noise rule with action `lead` (gcc's include chain)
       that run into a hazard line belong to that hazard, like its
       capture; any others are noise;
     - otherwise the line is unknown (universal rules and heuristics are
       the squasher's business, not a grammar's).

   A fact (`must_keep` regex) is kept when a line it matches is a hazard,
   an outcome, inside a hazard's capture or leading into a hazard; every
   line matching `keep_all_matching` must be.  (Which copies of a hazard
   the squasher folds is not modelled.)  It prints one line per fixture with the
   counts and exits 1 on any grammar error or any fact not kept.
"""
import argparse, json, os, re, shlex, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MAX_FILE = 256 * 1024
MAX_RULES = 256
MAX_PATTERN = 4096
MAX_LINES_MAX = 200
DEFAULT_MAX_LINES = 50
CATEGORIES = {"condense", "narrate", "passthrough", "structured",
              "interactive", "dangerous"}
TOP_KEYS = {"name", "description", "detect", "category", "include",
            "hazard", "outcome", "noise"}
DETECT_KEYS = {"commands", "args"}
RULE_KEYS = {"hazard": {"id", "pattern", "severity", "multiline", "colour"},
             "outcome": {"id", "pattern", "colour"},
             "noise": {"id", "pattern", "action", "colour"}}
MULTI_KEYS = {"continue", "until", "max_lines", "excerpt"}
WRAPPERS = {"sudo", "time", "nice", "env", "npx", "exec", "command", "nohup"}

# PCRE-only syntax that Python's re would reject or read differently.
PCRE_ONLY = [(r"\\[hHRKXQEGCN]", "PCRE-only escape"),
             (r"\(\?\|", "branch reset group"),
             (r"\\[pP]\{", "Unicode property"),
             (r"(?<!\\)[*+?}]\+", "possessive quantifier"),
             (r"\(\?[CR0-9+&]", "PCRE callout/recursion"),
             (r"\(\*[A-Z]", "PCRE verb")]


class Errors:
    def __init__(self):
        self.errors, self.warnings = [], []

    def err(self, msg):
        self.errors.append(msg)

    def warn(self, msg):
        self.warnings.append(msg)


def to_python(pattern):
    """PCRE named groups → Python; the rest must be the common subset."""
    return re.sub(r"\(\?<([A-Za-z_][A-Za-z0-9_]*)>", r"(?P<\1>", pattern)


def compile_pattern(pattern, where, E):
    if not isinstance(pattern, str):
        E.err(f"{where}: pattern is not a string")
        return None
    if len(pattern.encode()) > MAX_PATTERN:
        E.err(f"{where}: pattern longer than {MAX_PATTERN} bytes")
        return None
    for rx, what in PCRE_ONLY:
        m = re.search(rx, pattern)
        if m:
            E.err(f"{where}: pattern offset {m.start()}: {what} is outside "
                  "the PCRE/Python common subset")
            return None
    for m in re.finditer(r"\[(?:\\.|[^\]\\])*\]", pattern):
        if any(ord(c) > 127 for c in m.group()):
            E.err(f"{where}: pattern offset {m.start()}: a character class "
                  "with non-ASCII characters needs PCRE2_UTF; use an "
                  "alternation (?:a|b)")
            return None
    try:
        return re.compile(to_python(pattern))
    except re.error as e:
        E.err(f"{where}: pattern offset {e.pos}: {e.msg}")
        return None


def lint_pattern(pattern, rx, where, E):
    if not pattern.startswith("^"):
        E.warn(f"{where}: pattern not anchored with ^")
    bare = re.sub(r"\[(?:\\.|[^\]\\])*\]", "C", pattern)  # classes
    if len(re.findall(r"(?<!\\)\.[*+]", bare)) > 1:
        E.warn(f"{where}: more than one unbounded .* / .+")
    if re.search(r"[*+]\)[*+{]", bare):
        E.warn(f"{where}: nested quantifier (catastrophic backtracking?)")
    for hostile in ("a" * 4000 + "!", " " * 4000 + "x", ":" * 4000,
                    "a1:" * 1300, "=" * 4000):
        t = time.perf_counter()
        rx.search(hostile)
        dt = time.perf_counter() - t
        if dt > 0.05:
            E.warn(f"{where}: {dt * 1000:.0f} ms on a hostile line")
            break


def check_type(v, t, where, E, what):
    if not isinstance(v, t) or (t is int and isinstance(v, bool)):
        E.err(f"{where}: {what} has the wrong type")
        return False
    return True


def load_grammar(path, name_expected, E):
    where = os.path.relpath(path, ROOT)
    size = os.path.getsize(path)
    if size > MAX_FILE:
        E.err(f"{where}: file larger than {MAX_FILE} bytes")
        return None
    text = open(path, encoding="utf-8").read()
    try:
        g = json.loads(text)
    except json.JSONDecodeError as e:
        E.err(f"{where}: line {e.lineno} col {e.colno}: {e.msg}")
        return None
    if not isinstance(g, dict):
        E.err(f"{where}: line 1 col 1: top level is not an object")
        return None
    for k in g:
        if k not in TOP_KEYS:
            E.err(f"{where}: unknown field '{k}'")
    name = g.get("name")
    if not isinstance(name, str) or not name:
        E.err(f"{where}: 'name' is required and must be a string")
        return None
    if name != name_expected:
        E.err(f"{where}: name '{name}' does not match its file "
              f"('{name_expected}')")
    if "description" in g:
        check_type(g["description"], str, where, E, "description")
    det = g.get("detect")
    g["_cmds"], g["_args"] = [], None
    if det is not None:
        if check_type(det, dict, where, E, "detect"):
            for k in det:
                if k not in DETECT_KEYS:
                    E.err(f"{where}: unknown field 'detect.{k}'")
            cmds = det.get("commands", [])
            if check_type(cmds, list, where, E, "detect.commands"):
                for c in cmds:
                    if check_type(c, str, where, E, "detect.commands[]"):
                        g["_cmds"].append(c)
            a = det.get("args")
            if a is not None:
                g["_args"] = compile_pattern(a, f"{where}: detect.args", E)
    if name.startswith("_shared/") and g["_cmds"]:
        E.err(f"{where}: a shared grammar is only included, never detected")
    cat = g.get("category", "condense")
    if cat not in CATEGORIES:
        E.err(f"{where}: category '{cat}' is not one of "
              + ", ".join(sorted(CATEGORIES)))
    g["_category"] = cat
    inc = g.get("include", [])
    g["_include"] = []
    if check_type(inc, list, where, E, "include"):
        for i in inc:
            if check_type(i, str, where, E, "include[]"):
                g["_include"].append(i)
    ids, total = set(), 0
    g["_rules"] = {}
    for kind in ("hazard", "outcome", "noise"):
        rules = g.get(kind, [])
        g["_rules"][kind] = []
        if not check_type(rules, list, where, E, kind):
            continue
        total += len(rules)
        for n, r in enumerate(rules):
            rw = f"{where}: {kind}[{n}]"
            if not check_type(r, dict, rw, E, "rule"):
                continue
            rid = r.get("id")
            if not isinstance(rid, str) or not rid:
                E.err(f"{rw}: 'id' is required and must be a string")
                continue
            rw = f"{where}: rule {rid}"
            if rid in ids:
                E.err(f"{rw}: duplicate id")
            ids.add(rid)
            for k in r:
                if k not in RULE_KEYS[kind]:
                    E.err(f"{rw}: unknown field '{k}' for a {kind} rule")
            if "pattern" not in r:
                E.err(f"{rw}: 'pattern' is required")
                continue
            rx = compile_pattern(r["pattern"], rw, E)
            if rx is None:
                continue
            lint_pattern(r["pattern"], rx, rw, E)
            rule = {"id": rid, "rx": rx, "kind": kind, "grammar": name,
                    "colour": r.get("colour", "any")}
            if rule["colour"] not in ("red", "yellow", "any"):
                E.err(f"{rw}: colour must be red, yellow or any")
            if kind == "hazard":
                sev = r.get("severity", "error")
                if sev not in ("error", "warning"):
                    E.err(f"{rw}: severity must be error or warning")
                rule["severity"] = sev
                if kind == "hazard" and not re.search(
                        r"\(\?<(?:file|line|col)>", r["pattern"]):
                    pass  # locations are optional: not every hazard has one
                ml = r.get("multiline")
                if ml is not None and check_type(ml, dict, rw, E,
                                                 "multiline"):
                    for k in ml:
                        if k not in MULTI_KEYS:
                            E.err(f"{rw}: unknown field 'multiline.{k}'")
                    if ("continue" in ml) == ("until" in ml):
                        E.err(f"{rw}: multiline needs exactly one of "
                              "continue, until")
                    mx = ml.get("max_lines", DEFAULT_MAX_LINES)
                    if check_type(mx, int, rw, E, "multiline.max_lines") \
                            and not 1 <= mx <= MAX_LINES_MAX:
                        E.err(f"{rw}: multiline.max_lines must be "
                              f"1..{MAX_LINES_MAX}")
                    rule["max_lines"] = mx
                    if "excerpt" in ml and "continue" not in ml:
                        E.err(f"{rw}: multiline.excerpt needs continue")
                    for k in ("continue", "until", "excerpt"):
                        if k in ml:
                            c = compile_pattern(ml[k],
                                                f"{rw}: multiline.{k}", E)
                            if c is not None:
                                lint_pattern(ml[k], c,
                                             f"{rw}: multiline.{k}", E)
                            rule[k] = c
            if kind == "noise":
                act = r.get("action", "strip")
                if act not in ("strip", "dedup", "lead"):
                    E.err(f"{rw}: action must be strip, dedup or lead")
                rule["action"] = act
            g["_rules"][kind].append(rule)
    if total > MAX_RULES:
        E.err(f"{where}: {total} rules (at most {MAX_RULES})")
    g["_path"] = where
    return g


def load_all(gdir, E):
    grammars = {}
    for dirpath, _, files in os.walk(gdir):
        for f in sorted(files):
            if not f.endswith(".json"):
                continue
            path = os.path.join(dirpath, f)
            name = os.path.relpath(path, gdir)[:-5]
            g = load_grammar(path, name, E)
            if g is None:
                continue
            if g["name"] in grammars:
                E.err(f"{g['_path']}: duplicate grammar name '{g['name']}'")
            grammars[g["name"]] = g
    for g in grammars.values():
        for i in g["_include"]:
            if i not in grammars:
                E.err(f"{g['_path']}: unknown include '{i}'")
    # include cycles
    def visit(n, stack):
        if n in stack:
            E.err(f"grammars: include cycle {' -> '.join(stack + [n])}")
            return
        for i in grammars.get(n, {}).get("_include", []):
            visit(i, stack + [n])
    for n in grammars:
        visit(n, [])
    # two grammars claiming a command with the same (or no) args
    seen = {}
    for g in grammars.values():
        for c in g["_cmds"]:
            key = (c, g["_args"].pattern if g["_args"] else None)
            if key in seen:
                E.err(f"{g['_path']}: command '{c}' already detected by "
                      f"{seen[key]} with the same args")
            seen[key] = g["name"]
    return grammars


def effective_rules(grammars, name):
    """Each kind's list: the grammar's own rules, then each include's."""
    out = {"hazard": [], "outcome": [], "noise": []}
    order, seen = [], set()

    def walk(n):
        if n in seen or n not in grammars:
            return
        seen.add(n)
        order.append(n)
        for i in grammars[n]["_include"]:
            walk(i)
    walk(name)
    for n in order:
        for kind in out:
            out[kind] += grammars[n]["_rules"][kind]
    return out


# ----------------------------------------------------------------- detect

def split_segments(cmd):
    try:
        lex = shlex.shlex(cmd, posix=True, punctuation_chars=";&|")
        lex.whitespace_split = True
        toks = list(lex)
    except ValueError:
        toks = cmd.split()
    segs, cur = [], []
    for t in toks:
        if t in (";", "&&", "||", "|", "&"):
            if cur:
                segs.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        segs.append(cur)
    return segs


def unwrap(argv):
    """Strips sudo/env/time/nice/npx and turns `python -m X` into X."""
    argv = [a for a in argv if not re.match(r"^\d?>", a)]
    while argv:
        base = os.path.basename(argv[0])
        if base in WRAPPERS:
            argv = argv[1:]
            while argv and (argv[0].startswith("-") or
                            (base == "env" and "=" in argv[0])):
                argv = argv[1:]
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
            argv = argv[1:]
            continue
        if re.match(r"^python[0-9.]*$", base) and len(argv) > 2 \
                and argv[1] == "-m":
            return [argv[2]] + argv[3:]
        return [base] + argv[1:]
    return argv


def detect(grammars, command):
    command = re.sub(r"  \(.*\)$", "", command)
    for seg in reversed(split_segments(command)):
        argv = unwrap(seg)
        if not argv:
            continue
        rest = " ".join(argv[1:])
        plain = None
        for g in sorted(grammars.values(), key=lambda g: g["name"]):
            if argv[0] not in g["_cmds"]:
                continue
            if g["_args"] is None:
                plain = plain or g
            elif g["_args"].search(rest):
                return g
        if plain:
            return plain
    return None


# --------------------------------------------------------------- VT strip

RED = {31, 91}
YELLOW = {33, 93}


def vt_strip(data):
    """A small column model: CR, BS, LF, CHA, EL, ED (to end of line),
    SGR colours, OSC/DCS/APC dropped, cursor save/CUP/restore treated as
    a write elsewhere (dropped).  Returns [(text, colours)]."""
    text = data.decode("utf-8", errors="replace")
    lines, cells, col, colours = [], [], 0, set()
    cur_colour = None
    divert, saved = False, 0
    i, n = 0, len(text)

    def emit():
        lines.append(("".join(cells), frozenset(colours)))

    while i < n:
        ch = text[i]
        if ch == "\x1b":
            if i + 1 >= n:
                break
            nx = text[i + 1]
            if nx == "[":
                j = i + 2
                while j < n and not ("\x40" <= text[j] <= "\x7e"):
                    j += 1
                params, final = text[i + 2:j], text[j] if j < n else ""
                i = j + 1
                nums = [int(p) if p.isdigit() else 0
                        for p in re.split(r"[;:]", params.lstrip("?"))] \
                    if params else []
                if params.startswith("?"):
                    continue
                if final == "m":
                    k = 0
                    nums = nums or [0]
                    while k < len(nums):
                        v = nums[k]
                        if v in (38, 48):
                            k += 3 if k + 1 < len(nums) and nums[k + 1] == 5 \
                                else 5
                            continue
                        if v in RED:
                            cur_colour = "red"
                        elif v in YELLOW:
                            cur_colour = "yellow"
                        elif v in (0, 39) or 30 <= v <= 37 or 90 <= v <= 97:
                            cur_colour = None
                        k += 1
                elif final == "K" and not divert:
                    mode = nums[0] if nums else 0
                    if mode == 0:
                        del cells[col:]
                    elif mode == 1:
                        for k in range(min(col + 1, len(cells))):
                            cells[k] = " "
                    else:
                        cells.clear()
                elif final == "J" and not divert:
                    if (nums[0] if nums else 0) in (0, 2, 3):
                        del cells[col:]
                elif final == "G" and not divert:
                    col = max(0, (nums[0] if nums else 1) - 1)
                elif final in "Hf":
                    divert = True
                continue
            if nx in "]PX^_":
                j = i + 2
                while j < n:
                    if text[j] == "\x07":
                        j += 1
                        break
                    if text[j] == "\x1b" and j + 1 < n and text[j + 1] == "\\":
                        j += 2
                        break
                    j += 1
                i = j
                continue
            if nx == "7":
                saved = col
            elif nx == "8":
                col, divert = saved, False
            i += 2 if nx not in "()" else 3
            continue
        i += 1
        if divert:
            continue
        if ch == "\n":
            emit()
            cells, col, colours = [], 0, set()
        elif ch == "\r":
            col = 0
        elif ch == "\b":
            col = max(0, col - 1)
        elif ch == "\t":
            # kept as a tab (the squasher emits raw lines, tabs included)
            while len(cells) < col:
                cells.append(" ")
            if col < len(cells):
                cells[col] = ch
            else:
                cells.append(ch)
            col += 1
        elif ord(ch) < 0x20 or ch == "\x7f":
            continue
        else:
            while len(cells) < col:
                cells.append(" ")
            if col < len(cells):
                cells[col] = ch
            else:
                cells.append(ch)
            col += 1
            if cur_colour:
                colours.add(cur_colour)
    if cells:
        emit()
    return lines


# --------------------------------------------------------------- classify

def classify(rules, lines):
    """Returns one label per line: ('hazard', rule) | ('capture', rule) |
    ('outcome', rule) | ('noise', rule) | ('unknown', None)."""
    labels = []
    cap, cap_left, cap_done = None, 0, True
    leads = []  # indices of `lead` lines waiting for the line after them
    # a capture with `excerpt`: what the next line is by position (None,
    # "excerpt", "caret": after a held line, "fixit"), the held line
    expect, held, caret_ind = None, None, 0
    caret_rx = re.compile(r"^[ \t~]*\^[ \t~^]*$")

    def fits(rule, colours):
        c = rule["colour"]
        return c == "any" or c in colours

    def claimed(text, colours):
        return any(fits(r, colours) and r["rx"].search(text)
                   for k in ("hazard", "outcome", "noise") for r in rules[k])

    def indent(text):
        return len(text) - len(text.lstrip(" \t"))

    for text, colours in lines:
        label = None
        for r in rules["hazard"]:
            if fits(r, colours) and r["rx"].search(text):
                label = ("hazard", r)
                cap = r if ("continue" in r or "until" in r) else None
                cap_left = r.get("max_lines", DEFAULT_MAX_LINES)
                cap_done = False
                expect = "excerpt" if r.get("excerpt") is not None else None
                break
        hold = False
        if label is None and cap is not None and not cap_done \
                and cap_left > 0:
            if cap.get("excerpt") is not None:
                ex, expect = expect, None
                if caret_rx.search(text):
                    label = ("capture", cap)
                    expect, caret_ind = "fixit", indent(text)
                    if ex == "caret":
                        labels[held] = ("capture", cap)
                elif ex == "caret":
                    cap_done = True
                elif cap["continue"].search(text):
                    label = ("capture", cap)
                    if cap["excerpt"].search(text):
                        expect = "excerpt"
                elif ex is None or not text.strip() or claimed(text, colours):
                    cap_done = True
                elif ex == "fixit":
                    if indent(text) >= caret_ind:
                        label = ("capture", cap)
                    else:
                        cap_done = True
                else:
                    hold, expect = True, "caret"
                    cap_left -= 1
            elif cap.get("continue") is not None:
                if cap["continue"].search(text):
                    label = ("capture", cap)
                else:
                    cap_done = True
            elif cap.get("until") is not None:
                label = ("capture", cap)
                if cap["until"].search(text):
                    cap_done = True
            if label:
                cap_left -= 1
        if label is None:
            for kind in ("outcome", "noise"):
                for r in rules[kind]:
                    if fits(r, colours) and r["rx"].search(text):
                        label = (kind, r)
                        break
                if label:
                    break
        label = label or ("unknown", None)
        if hold:
            held = len(labels)
        if label[0] == "noise" and label[1]["action"] == "lead":
            leads.append(len(labels))
        else:
            # they lead into a hazard line, or into nothing (noise)
            for k in leads:
                labels[k] = ("capture" if label[0] == "hazard" else "noise",
                             labels[k][1])
            leads = []
        labels.append(label)
    for k in leads:
        labels[k] = ("noise", labels[k][1])
    return labels


def load_fixtures(fdir, corpus):
    out = []
    if fdir and os.path.isdir(fdir):
        for tool in sorted(os.listdir(fdir)):
            td = os.path.join(fdir, tool)
            if not os.path.isdir(td):
                continue
            for f in sorted(os.listdir(td)):
                if f.endswith(".json") and os.path.exists(
                        os.path.join(td, f[:-5] + ".out")):
                    out.append((f"{tool}/{f[:-5]}", os.path.join(td, f),
                                os.path.join(td, f[:-5] + ".out")))
    if corpus and os.path.isdir(corpus):
        for c in sorted(os.listdir(corpus)):
            cj = os.path.join(corpus, c, "case.json")
            if os.path.exists(cj):
                out.append((f"corpus/{c}", cj,
                            os.path.join(corpus, c, "output")))
    return out


def run_fixture(grammars, name, jpath, opath, verbose):
    meta = json.load(open(jpath))
    data = open(opath, "rb").read()
    g = detect(grammars, meta["command"])
    lines = vt_strip(data)
    problems = []
    if g is None:
        return (f"{name:36} no grammar for {meta['command'][:40]!r}",
                problems, None)
    rules = effective_rules(grammars, g["name"])
    labels = classify(rules, lines)
    count = {"hazard": 0, "capture": 0, "outcome": 0, "noise": 0,
             "unknown": 0}
    errs = warns = 0
    for kind, r in labels:
        count[kind] += 1
        if kind == "hazard":
            if r["severity"] == "error":
                errs += 1
            else:
                warns += 1
    kept = {"hazard", "capture", "outcome"}

    for fact in meta.get("must_keep", []):
        try:
            frx = re.compile(to_python(fact))
        except re.error as e:
            problems.append(f"must_keep {fact!r}: bad regex: {e}")
            continue
        hits = [k for k, (t, _) in enumerate(lines) if frx.search(t)]
        if not hits:
            problems.append(f"must_keep {fact!r}: matches no line of the "
                            "stripped output")
        elif not any(labels[k][0] in kept for k in hits):
            problems.append(f"must_keep {fact!r}: line {hits[0] + 1} is "
                            f"{labels[hits[0]][0]}: {lines[hits[0]][0]!r}")
    kam = meta.get("keep_all_matching")
    if kam:
        krx = re.compile(to_python(kam))
        for k, (t, _) in enumerate(lines):
            if krx.search(t) and labels[k][0] not in kept:
                problems.append(f"keep_all_matching: line {k + 1} is "
                                f"{labels[k][0]}: {t!r}")
    summary = (f"{name:36} {g['name']:12} {len(lines):4} lines  "
               f"hazard {count['hazard']:3} (E{errs} W{warns}) "
               f"+{count['capture']:<3} outcome {count['outcome']:2}  "
               f"noise {count['noise']:3}  unknown {count['unknown']:3}  "
               f"facts {len(meta.get('must_keep', [])) - len(problems)}/"
               f"{len(meta.get('must_keep', []))}")
    detail = None
    if verbose:
        detail = []
        for k, ((t, _), (kind, r)) in enumerate(zip(lines, labels)):
            tag = f"{kind[:4]}:{r['grammar']}/{r['id']}" if r else "----"
            detail.append(f"  {k + 1:4} {tag:34.34} {t[:110]}")
    return summary, problems, detail


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print each line with the rule that took it")
    ap.add_argument("-W", "--warnings", action="store_true",
                    help="print lint warnings")
    ap.add_argument("--grammars", default=os.path.join(ROOT, "grammars"))
    ap.add_argument("--fixtures",
                    default=os.path.join(ROOT, "tests", "fixtures"))
    ap.add_argument("--corpus", default=None,
                    help="also run a corpus folder (case.json + output)")
    ap.add_argument("only", nargs="*", help="fixture name substrings")
    a = ap.parse_args()

    E = Errors()
    grammars = load_all(a.grammars, E)
    n_rules = sum(len(r) for g in grammars.values()
                  for r in g["_rules"].values())
    print(f"grammars: {len(grammars)} files, {n_rules} rules, "
          f"{len(E.errors)} errors, {len(E.warnings)} warnings")
    for e in E.errors:
        print("error: " + e)
    if a.warnings:
        for w in E.warnings:
            print("warning: " + w)

    failed = 0
    fixtures = load_fixtures(a.fixtures, a.corpus)
    if a.only:
        fixtures = [f for f in fixtures if any(o in f[0] for o in a.only)]
    for name, jpath, opath in fixtures:
        summary, problems, detail = run_fixture(grammars, name, jpath, opath,
                                                a.verbose)
        print(summary)
        if detail:
            print("\n".join(detail))
        for p in problems:
            print("  FAIL " + p)
        if problems:
            failed += 1
    print(f"fixtures: {len(fixtures) - failed} passed, {failed} failed")
    return 1 if E.errors or failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# ci/helpers/layers.sh: the layering of build.sh's shell library, checked. Bash
# sources every file of lib/ into one namespace, so nothing but this check
# stops a file from calling a function of any other. The rule: a file calls
# only functions of files in layers below its own. A file's layer is the
# number its name starts with (lib/NN-name.sh); common.sh is 0, versions.sh
# 1, commands.sh 98 and build.sh 99 (docs/layout.md draws the layers).
#
# Calls are found by reading the shell as bash would: a word in command
# position (after a newline, ; & | ( { ! $( or a keyword such as then, do,
# if) that names a function defined in another file. Quoted text, comments,
# here-documents (but the $(...) in unquoted ones), arithmetic and ${...}
# are not commands. A function called through a variable ("${cmd}") is not
# seen. The same rule holds for the globals a lib file defines at the start
# of a line (NAME=, readonly NAME=, declare -A NAME=; upper case, as globals
# are named; here-documents skipped): a file reads ($NAME, ${NAME}) only
# those of files below it. build.sh's P2P_* options are set on top for every
# file to read, so build.sh's own globals are not checked.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: ci/helpers/layers.sh [--edges] [ROOT]

Checks that each of ROOT's build.sh and lib/*.sh (ROOT: this checkout)
calls only functions, and reads only globals, of files in lower layers, and
that build.sh sources lib/ in layer order.
  --edges     also print every call between two files on stdout:
              CALLER<TAB>CALLEE<TAB>FUNCTION<TAB>LINE
  -h, --help  this text

Exit status: 0 when the layering holds, 1 with one line per call that goes
up or sideways (and per file out of order) on stderr, 2 on a usage error.
EOF
}

die() {
  printf 'layers.sh: %s\n' "$2" >&2
  exit "$1"
}

# layer FILE: the file's layer (see the header), or nothing for a lib file
# whose name has no number.
layer() {
  local base
  base=$(basename "$1")
  case ${base} in
  common.sh) echo 0 ;;
  versions.sh) echo 1 ;;
  commands.sh) echo 98 ;;
  build.sh) echo 99 ;;
  [0-9][0-9]-*.sh) echo $((10#${base:0:2})) ;;
  esac
}

# definitions FILE...: "FUNCTION<TAB>FILE" for each function defined at the
# start of a line (name() { or name() ().
definitions() {
  awk '
    match($0, /^[A-Za-z_][A-Za-z0-9_]*\(\)[ \t]*[{(]/) {
      name = substr($0, 1, index($0, "(") - 1)
      print name "\t" FILENAME
    }' "$@"
}

# calls FILE...: "FILE<TAB>WORD<TAB>LINE" for each word in command position.
calls() {
  awk '
    function push(c) { st[++sp] = c }
    function pop() { if (sp > 1) sp--; else casearm = 1 }
    function emit(w) { print FILENAME "\t" w "\t" FNR }
    FNR == 1 { sp = 1; st[1] = "c"; cmdpos = 1; hd = ""; inbr = 0 }
    hd != "" {
      if ($0 ~ "^[ \t]*" hd "$") { hd = ""; cmdpos = 1; next }
      if (hdq) next
      # an unquoted here-document: only its $(...) run
      line = $0; n = length(line); base = sp; push("h")
      for (i = 1; i <= n; i++) scan()
      sp = base
      next
    }
    {
      line = $0; n = length(line); newhd = ""
      for (i = 1; i <= n; i++) scan()
      if (newhd != "") { hd = newhd; hdq = newhdq }
      if (substr(line, n, 1) != "\\" && (st[sp] == "c" || st[sp] == "x") && !inbr) cmdpos = 1
    }
    function scan(   c, c2, w, j, d, q) {
      c = substr(line, i, 1); c2 = substr(line, i, 2)
      top = st[sp]
      if (top == "q") { if (c == "\047") pop(); return }
      if (c == "\\") { i++; return }
      if (top == "a") {
        if (c == "(") push("a"); else if (c == ")") pop()
        return
      }
      if (c2 == "$(") {
        if (substr(line, i + 2, 1) == "(") { push("a"); push("a"); i += 2; return }
        push("x"); cmdpos = 1; i++; return
      }
      if (c2 == "${") {
        d = 1
        for (j = i + 2; j <= n && d > 0; j++) {
          if (substr(line, j, 1) == "{") d++
          else if (substr(line, j, 1) == "}") d--
        }
        i = j - 1; return
      }
      if (c == "`") {
        if (top == "k") { pop(); return }
        push("k"); cmdpos = 1; return
      }
      if (top == "h") return
      if (top == "d") { if (c == "\"") pop(); return }
      # command context (c: the file, x: $( or (, k: backticks)
      if (c == "\"") { push("d"); cmdpos = 0; return }
      if (c2 == "$\047" || c == "\047") {
        j = i + (c == "$" ? 2 : 1)
        for (; j <= n; j++) {
          q = substr(line, j, 1)
          if (q == "\\" && c == "$") { j++; continue }
          if (q == "\047") break
        }
        if (j > n) push("q")
        i = j; cmdpos = 0; return
      }
      if (c == "#" && (i == 1 || substr(line, i - 1, 1) ~ /[ \t;(]/)) { i = n; return }
      if (c2 == "<<" && substr(line, i + 2, 1) != "<") {
        w = substr(line, i + 2)
        sub(/^-/, "", w); sub(/^[ \t]*/, "", w)
        newhdq = (w ~ /^[\047"\\]/)
        gsub(/[\047"\\]/, "", w)
        match(w, /^[A-Za-z_][A-Za-z0-9_]*/)
        newhd = substr(w, 1, RLENGTH)
        i++; cmdpos = 0; return
      }
      if (c2 == "[[" && cmdpos) { inbr = 1; cmdpos = 0; i++; return }
      if (c2 == "]]" && inbr) { inbr = 0; i++; return }
      if (c2 == "((" && cmdpos) { push("a"); push("a"); i++; return }
      if (c == "(") { push("x"); cmdpos = 1; return }
      if (c == ")") { pop(); if (casearm) { casearm = 0; cmdpos = 1 } else cmdpos = 0; return }
      if (c ~ /[;&|{!]/) { if (!inbr) cmdpos = 1; return }
      if (c ~ /[ \t}]/) return
      if (c ~ /[A-Za-z_]/) {
        w = substr(line, i)
        match(w, /^[A-Za-z_][A-Za-z0-9_]*/)
        w = substr(w, 1, RLENGTH)
        j = i + RLENGTH
        q = substr(line, j, 1)
        if (cmdpos && q != "=" && q != "[" && !(q == ")" && sp == 1)) {
          if (w ~ /^(then|do|if|elif|else|while|until|time|command|exec|builtin)$/) { i = j - 1; return }
          emit(w)
        }
        i = j - 1; cmdpos = 0; return
      }
      cmdpos = 0
    }' "$@"
}

main() {
  local root edges=0 bad=0
  while [[ $# -gt 0 ]]; do
    case $1 in
    --edges) edges=1 ;;
    -h | --help)
      usage
      return 0
      ;;
    -*) die 2 "unknown option '$1' (see: ci/helpers/layers.sh --help)" ;;
    *) break ;;
    esac
    shift
  done
  [[ $# -le 1 ]] || die 2 "one ROOT at most"
  root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
  [[ -f ${root}/build.sh && -d ${root}/lib ]] || die 2 "${root}: no build.sh and lib/ there"
  cd "${root}"
  check_named || bad=1
  check_calls "${edges}" || bad=1
  check_globals || bad=1
  check_sources || bad=1
  return "${bad}"
}

# check_named: every file has a layer.
check_named() {
  local f bad=0
  for f in build.sh lib/*.sh; do
    [[ -n $(layer "${f}") ]] || {
      printf 'layers.sh: %s has no layer: name it lib/NN-name.sh\n' "${f}" >&2
      bad=1
    }
  done
  return "${bad}"
}

# check_calls EDGES: one line on stderr per call to a file not below the
# caller's layer; EDGES=1 also prints each call.
check_calls() {
  check_refs calls "$1" <(definitions build.sh lib/*.sh) <(calls build.sh lib/*.sh)
}

# globals FILE...: "NAME<TAB>FILE" for each upper-case global a file assigns
# at the start of a line, plain or with readonly, declare or export, outside
# here-documents.
globals() {
  awk '
    FNR == 1 { hd = "" }
    hd != "" { if ($0 ~ "^[ \t]*" hd "$") hd = ""; next }
    match($0, /<<-?[ \t]*[\047"]?[A-Za-z_][A-Za-z0-9_]*/) {
      hd = substr($0, RSTART, RLENGTH)
      sub(/^<<-?[ \t]*[\047"]?/, "", hd)
    }
    match($0, /^((readonly|export|declare( -[A-Za-z]+)*) )?[A-Z_][A-Z0-9_]*(\+)?=/) {
      w = substr($0, 1, RLENGTH)
      sub(/^((readonly|export|declare( -[A-Za-z]+)*) )/, "", w)
      sub(/\+?=$/, "", w)
      print w "\t" FILENAME
    }' "$@"
}

# reads FILE...: "FILE<TAB>NAME<TAB>LINE" for each $NAME or ${NAME (also
# ${#NAME, ${!NAME) outside comment lines.
reads() {
  awk '
    /^[ \t]*#/ { next }
    {
      line = $0
      while (match(line, /\$\{?[#!]?[A-Za-z_][A-Za-z0-9_]*/)) {
        w = substr(line, RSTART, RLENGTH)
        sub(/^\$\{?[#!]?/, "", w)
        print FILENAME "\t" w "\t" FNR
        line = substr(line, RSTART + RLENGTH)
      }
    }' "$@"
}

# check_globals: one line on stderr per read of a global of a lib file not
# below the reader's layer.
check_globals() {
  check_refs reads 0 <(globals lib/*.sh) <(reads build.sh lib/*.sh)
}

# check_refs VERB EDGES OWNERS USES: one line on stderr per use of a name
# that a file not below the user's layer owns (files without a layer are
# check_named's). OWNERS: "NAME<TAB>FILE" lines (the first one counts);
# USES: "FILE<TAB>NAME<TAB>LINE" lines; VERB names the use in the message
# (calls, reads). EDGES=1 also prints each use between two files on stdout.
check_refs() {
  local verb=$1 edges=$2 owners=$3 uses=$4 f bad=0 user word line owner lu lo
  local -A owner_of=() num=()
  while IFS=$'\t' read -r word f; do
    [[ -n ${owner_of[${word}]:-} ]] || owner_of[${word}]=${f}
  done <"${owners}"
  for f in build.sh lib/*.sh; do
    num[${f}]=$(layer "${f}")
  done
  while IFS=$'\t' read -r user word line; do
    owner=${owner_of[${word}]:-}
    [[ -n ${owner} && ${owner} != "${user}" ]] || continue
    [[ ${edges} -eq 0 ]] || printf '%s\t%s\t%s\t%s\n' "${user}" "${owner}" "${word}" "${line}"
    lu=${num[${user}]} lo=${num[${owner}]}
    [[ -n ${lu} && -n ${lo} ]] || continue
    if [[ ${lo} -ge ${lu} ]]; then
      printf 'layers.sh: %s:%s %s %s of %s, which is not below it (layer %s, not below %s)\n' \
        "${user}" "${line}" "${verb}" "${word}" "${owner}" "${lo}" "${lu}" >&2
      bad=1
    fi
  done <"${uses}"
  return "${bad}"
}

# check_sources: build.sh sources every lib file once, in layer order.
check_sources() {
  local f prev=-1 l bad=0
  local -a sourced
  mapfile -t sourced < <(sed -n 's|^source "[$][{]P2P_LIB_DIR[}]/\([^"]*\)"$|lib/\1|p' build.sh)
  for f in "${sourced[@]}"; do
    l=$(layer "${f}")
    if [[ -z ${l} || ${l} -le ${prev} ]]; then
      printf 'layers.sh: build.sh sources %s out of layer order\n' "${f}" >&2
      bad=1
    fi
    prev=${l:-${prev}}
  done
  for f in lib/*.sh; do
    [[ " ${sourced[*]} " == *" ${f} "* ]] || {
      printf 'layers.sh: build.sh does not source %s\n' "${f}" >&2
      bad=1
    }
  done
  return "${bad}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi

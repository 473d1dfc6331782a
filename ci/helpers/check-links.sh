#!/usr/bin/env bash
# ci/helpers/check-links.sh [FILE.md...]: every relative link of the Markdown files
# (default: README.md, CONTRIBUTING.md and docs/*.md of this repository)
# resolves: the file or directory it names exists, and its #anchor, if any, is
# the slug of a heading of the Markdown file it points to (GitHub's rules:
# lowercase, punctuation removed except '-' and '_', each space a '-'; a
# repeated heading gets -1, -2...). Links with a scheme (https:, mailto:) are
# not checked; fenced code blocks and inline code are skipped. Prints each
# broken link as FILE:LINE: TARGET: why, and exits 1 when there is one.
set -euo pipefail

CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
REPO_DIR="$(dirname "${CI_DIR}")"

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/usage.sh"

# links FILE: "LINE<TAB>TARGET" for each link outside code.
links() {
  LC_ALL=C awk '
    /^[[:space:]]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
      line = $0
      gsub(/`[^`]*`/, "", line)
      while (match(line, /\]\([^)[:space:]]+([[:space:]]+"[^"]*")?\)/)) {
        target = substr(line, RSTART + 2, RLENGTH - 3)
        sub(/[[:space:]].*/, "", target)
        print FNR "\t" target
        line = substr(line, RSTART + RLENGTH)
      }
    }' "$1"
}

# slugs FILE: the anchor of each heading of FILE, one a line.
slugs() {
  LC_ALL=C awk '
    /^[[:space:]]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    /^#+[[:space:]]/ {
      h = $0
      sub(/^#+[[:space:]]+/, "", h)
      sub(/[[:space:]]+#+[[:space:]]*$/, "", h)
      h = tolower(h)
      gsub(/[^a-z0-9 _-]/, "", h)
      gsub(/ /, "-", h)
      s = h
      if (h in seen) { s = h "-" seen[h] }
      seen[h]++
      print s
    }' "$1"
}

# check FILE: prints FILE's broken links; fails when there is one.
check() {
  local file=$1 dir line target path anchor resolved bad=0
  dir=$(dirname "${file}")
  while IFS=$'\t' read -r line target; do
    [[ -n ${target} ]] || continue
    [[ ${target} =~ ^[A-Za-z][A-Za-z0-9+.-]*: ]] && continue
    path=${target%%#*}
    anchor=""
    [[ ${target} == *#* ]] && anchor=${target#*#}
    if [[ -z ${path} ]]; then
      resolved=${file}
    else
      resolved="${dir}/${path}"
    fi
    if [[ ! -e ${resolved} ]]; then
      printf '%s:%s: %s: no such file or directory\n' "${file}" "${line}" "${target}"
      bad=1
      continue
    fi
    [[ -n ${anchor} ]] || continue
    if [[ ${resolved} != *.md || ! -f ${resolved} ]]; then
      printf '%s:%s: %s: an anchor into a file that is not Markdown\n' "${file}" "${line}" "${target}"
      bad=1
    elif ! slugs "${resolved}" | grep -q -x -F -- "${anchor}"; then
      printf '%s:%s: %s: no heading with that anchor in %s\n' "${file}" "${line}" "${target}" "${path:-${file}}"
      bad=1
    fi
  done < <(links "${file}")
  return "${bad}"
}

main() {
  help_exit "$@"
  local f rc=0
  local -a files=("$@")
  if [[ $# -eq 0 ]]; then
    files=("${REPO_DIR}/README.md" "${REPO_DIR}/CONTRIBUTING.md" "${REPO_DIR}"/docs/*.md)
  fi
  for f in "${files[@]}"; do
    if [[ ! -f ${f} ]]; then
      printf 'check-links.sh: %s: no such file\n' "${f}" >&2
      return 2
    fi
    check "${f}" || rc=1
  done
  return "${rc}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi

#!/usr/bin/env bash
# ci/workflows/intake.sh: the unattended intake of new upstream releases, run on a
# schedule by .github/workflows/intake.yml (and by hand, or by the tests,
# against local repositories).
#
# A fresh clone of the project's BASE branch (from REMOTE) runs `build.sh
# rebase --new --commit --source UPSTREAM`: every release UPSTREAM has that
# versions.conf lacks, oldest first, one commit each (fits, or a new family
# with its evidence). When that made commits, the clone's HEAD is force-pushed
# to BRANCH of REMOTE (a branch this job owns: never BASE, main or master),
# and with --pr one pull request from BRANCH to BASE is opened, or the open
# one updated, with rebase's summary as its body (gh). Nothing new: nothing is
# pushed. The summary also goes to stdout and --summary FILE.
#
# Usage: ci/workflows/intake.sh --upstream GIT --remote REMOTE [--branch NAME] [--base BRANCH]
#                     [--repo OWNER/NAME] [--cache-dir DIR] [--work-dir DIR]
#                     [--summary FILE] [--pr] [-- MORE build.sh OPTIONS]
#   --upstream GIT   NVIDIA's repository (a clone, a bundle, or https)
#   --remote REMOTE  the project's repository (a URL or a path) to clone and push to
#   --branch NAME    the intake branch (default: intake/upstream)
#   --base BRANCH    the branch the intake starts from and the PR targets (default: main)
#   --repo O/N       the repository gh works on (default: gh's own choice)
#   --pr             open or update the pull request with gh
#   after --         options for build.sh (e.g. --chroot 7.2:DIR --kernel KVER)
# Exit: 0 every new release was added (or none was new), 7 one needs a person
# (what could be added is still pushed), 2 usage, else build.sh's or git's
# failure (nothing pushed): an UPSTREAM whose tags cannot be listed (offline,
# no such path, an empty directory) is build.sh's exit 5, not "nothing new".
set -euo pipefail
shopt -s inherit_errexit

UPSTREAM=""
REMOTE=""
BRANCH=intake/upstream
BASE=main
REPO=""
CACHE_DIR=""
WORK_DIR=""
SUMMARY=""
PR=0
EXTRA=()

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

parse() {
  while [[ $# -gt 0 ]]; do
    case $1 in
    --upstream | --remote | --branch | --base | --repo | --cache-dir | --work-dir | --summary)
      [[ $# -ge 2 && -n $2 ]] || die 2 "$1 needs a value"
      case $1 in
      --upstream) UPSTREAM=$2 ;;
      --remote) REMOTE=$2 ;;
      --branch) BRANCH=$2 ;;
      --base) BASE=$2 ;;
      --repo) REPO=$2 ;;
      --cache-dir) CACHE_DIR=$2 ;;
      --work-dir) WORK_DIR=$2 ;;
      --summary) SUMMARY=$2 ;;
      esac
      shift 2
      ;;
    --pr) PR=1 && shift ;;
    -h | --help) usage && exit 0 ;;
    --) shift && EXTRA=("$@") && break ;;
    *) usage >&2 && die 2 "unknown argument $1" ;;
    esac
  done
  [[ -n ${UPSTREAM} && -n ${REMOTE} ]] || { usage >&2 && die 2 "--upstream and --remote are needed"; }
  case ${BRANCH} in
  "${BASE}" | main | master) die 2 "refusing to push to ${BRANCH}: the intake branch must be one of its own" ;;
  esac
  [[ ${BRANCH} =~ ^[A-Za-z0-9._/-]+$ ]] || die 2 "--branch ${BRANCH}: not a branch name"
}

TMP=""
cleanup() {
  [[ -z ${TMP} ]] || rm -rf -- "${TMP}"
}

main() {
  local tmp rc=0 commits out
  parse "$@"
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/intake.XXXXXX")
  tmp=${TMP}
  trap cleanup EXIT
  git clone -q --single-branch --branch "${BASE}" -- "${REMOTE}" "${tmp}/project" ||
    die 5 "cannot clone ${BASE} of ${REMOTE}"
  out="${tmp}/summary.txt"
  "${tmp}/project/build.sh" ${CACHE_DIR:+--cache-dir "${CACHE_DIR}"} ${WORK_DIR:+--work-dir "${WORK_DIR}"} \
    rebase --new --commit --source "${UPSTREAM}" "${EXTRA[@]+"${EXTRA[@]}"}" >"${out}" || rc=$?
  cat "${out}"
  [[ ${rc} -eq 0 || ${rc} -eq 7 ]] || die "${rc}" "build.sh rebase --new failed (exit ${rc}); nothing was pushed"
  commits=$(git -C "${tmp}/project" rev-list --count "origin/${BASE}..HEAD")
  if [[ ${commits} -eq 0 ]]; then
    printf 'intake: nothing new to push (%s)\n' "$(grep -m 1 -E '^rebase --new: ' "${out}" || echo 'no tag added')"
    write_summary "${out}" ""
    exit "${rc}"
  fi
  git -C "${tmp}/project" push -q --force -- "${REMOTE}" "HEAD:refs/heads/${BRANCH}" ||
    die 5 "cannot push ${BRANCH} to ${REMOTE}"
  printf 'intake: pushed %s (%s commits on %s)\n' "${BRANCH}" "${commits}" "${BASE}"
  write_summary "${out}" "${tmp}/body.md"
  [[ ${PR} -eq 0 ]] || pull_request "${out}" "${tmp}/body.md"
  exit "${rc}"
}

# write_summary OUT BODY: the pull request's body (BODY, when given) and
# --summary FILE from rebase's summary in OUT.
write_summary() {
  local out=$1 body=$2 text
  text=$({
    printf 'New upstream releases, taken in by %s (ci/workflows/intake.sh).\n\n```\n' "\`build.sh rebase --new\`"
    sed -n '/^rebase --new: /,$p' "${out}"
    printf '```\n\nEach commit carries its per-patch table. Nothing here was pushed to %s; a\n' "${BASE}"
    printf 'release that needs a person is listed above and left out of the branch.\n'
  })
  [[ -z ${body} ]] || printf '%s\n' "${text}" >"${body}"
  [[ -z ${SUMMARY} ]] || printf '%s\n' "${text}" >"${SUMMARY}"
}

# pr_title OUT: "Upstream intake: A, B added; C needs a person".
pr_title() {
  local added person
  added=$(awk '$2 == "fits" || ($2 == "new" && $3 == "family") { print $1 }' "$1" | paste -sd, - | sed 's/,/, /g')
  person=$(awk '$2 == "a" && $3 == "person" { print $1 }' "$1" | paste -sd, - | sed 's/,/, /g')
  printf 'Upstream intake: %s added%s' "${added:-nothing}" "${person:+; ${person} needs a person}"
}

# pull_request OUT BODY: open the pull request from BRANCH to BASE, or
# update the open one.
pull_request() {
  local out=$1 body=$2 title number
  local -a gh=(gh)
  command -v gh >/dev/null || die 10 "--pr needs gh (GitHub's CLI); the branch was pushed"
  [[ -z ${REPO} ]] || gh+=(--repo "${REPO}")
  title=$(pr_title "${out}")
  number=$("${gh[@]}" pr list --head "${BRANCH}" --base "${BASE}" --state open --json number --jq '.[0].number // empty')
  if [[ -n ${number} ]]; then
    "${gh[@]}" pr edit "${number}" --title "${title}" --body-file "${body}"
    printf 'intake: pull request #%s updated\n' "${number}"
  else
    "${gh[@]}" pr create --head "${BRANCH}" --base "${BASE}" --title "${title}" --body-file "${body}"
    printf 'intake: pull request opened\n'
  fi
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi

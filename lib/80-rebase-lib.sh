# shellcheck shell=bash
# lib/80-rebase-lib.sh: what rebase's steps share: its lock, the data files
# it writes (and their check for uncommitted changes), versions.conf lines.

# What rebase writes in the data directory: versions.conf, a new family, the
# hosted workflow and the tables generated from versions.conf.
REBASE_WRITES=(versions.conf patches .github/workflows README.md docs/verification-record.md)

# Where rebase and rebase --new fetch upstream's tags without --source.
readonly UPSTREAM_GIT_URL="https://github.com/NVIDIA/open-gpu-kernel-modules.git"

# upstream_git: where upstream's tags come from without --source (the tests
# set NVP2P_UPSTREAM_GIT to a local repository).
upstream_git() { printf '%s\n' "${NVP2P_UPSTREAM_GIT:-${UPSTREAM_GIT_URL}}"; }

# rebase_lock: one rebase at a time may change a data directory (inherited by
# the runs rebase --new starts).
RB_LOCK_FD=""

rebase_lock() {
  [[ ${P2P_DRY_RUN} -eq 1 ]] && return 0
  lock_inherited "${P2P_DATA_DIR}" && return 0
  exec {RB_LOCK_FD}<"${P2P_DATA_DIR}"
  lock_fd "${RB_LOCK_FD}" "${P2P_DATA_DIR}" "another rebase"
  lock_register "${P2P_DATA_DIR}" "${RB_LOCK_FD}"
}

# rebase_clean_data: refuse (EX_PREFLIGHT) when the data directory is a git
# work tree with uncommitted changes where rebase writes: they would be mixed
# with its own. A run that rebase --new started was checked by it.
rebase_clean_data() {
  local dirty
  [[ ${P2P_DRY_RUN} -eq 0 && -z ${NVP2P_REBASE_OUTCOME:-} ]] || return 0
  git -c safe.directory='*' -C "${P2P_DATA_DIR}" rev-parse --is-inside-work-tree >/dev/null 2>&1 || return 0
  dirty=$(git -c safe.directory='*' -C "${P2P_DATA_DIR}" status --porcelain -- "${REBASE_WRITES[@]}" 2>/dev/null | head -n 5)
  [[ -z ${dirty} ]] ||
    die "${EX_PREFLIGHT}" "uncommitted changes where rebase writes (${P2P_DATA_DIR}): ${dirty//$'\n'/; }; commit or stash them first"
}

# rebase_person TAG WHY: a person is needed (exit 7); the reason goes to the
# outcome (rebase --new's summary) too. Nothing was added.
rebase_person() {
  rebase_outcome needs-person "${V_FAMILY[$1]:-}" "$2"
  die "${EX_PATCH}" "$2"
}

# versions_with_line TAG: versions.conf from stdin with TAG's line inserted
# before the first listed tag that sorts after it.
versions_with_line() {
  local tag=$1 line done=0 first
  while IFS= read -r line || [[ -n ${line} ]]; do
    first=${line%%[[:space:]]*}
    if [[ ${done} -eq 0 && -n ${first} && ${first} != \#* ]] && ! version_le "${first}" "${tag}"; then
      versions_line "${tag}"
      done=1
    fi
    printf '%s\n' "${line}"
  done
  [[ ${done} -eq 1 ]] || versions_line "${tag}"
}

# versions_line TAG: the tag's versions.conf line.
versions_line() {
  local t=$1
  printf '%-11s %-8s %s %s %s %-64s %s %s\n' "${t}" "${V_FAMILY[${t}]}" "${V_COMMIT[${t}]}" \
    "${V_TREE[${t}]}" "${V_CORE[${t}]}" "${V_RUN_SHA[${t}]}" "${V_RUN_URL[${t}]}" "${V_TESTED[${t}]}"
}

# rebase_outcome KIND FAMILY DETAIL: for rebase --new, which started this run
# with NVP2P_REBASE_OUTCOME: one line (kind, family, detail; tab-separated),
# then the per-patch table.
rebase_outcome() {
  local file=${NVP2P_REBASE_OUTCOME:-}
  [[ -n ${file} ]] || return 0
  {
    printf '%s\t%s\t%s\n' "$1" "$2" "$3"
    [[ -z ${RB_DIR} || ! -f ${RB_DIR}/table ]] || cat "${RB_DIR}/table"
  } >"${file}"
}

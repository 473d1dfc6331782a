# shellcheck shell=bash
# lib/82-rebase-new.sh: `build.sh rebase --new`, the unattended intake of
# new releases: every tag of the source that versions.conf lacks (newer than
# its oldest tag), oldest first, each rebased by a build.sh run of its own
# (so that one tag's failure ends only that run; it reports its outcome in the
# file NVP2P_REBASE_OUTCOME names), with this run's data-directory lock
# handed down. Each tag sees the versions.conf the tags before it left, so a
# family written for one is the nearest for the next. With --commit, each
# tag's change is committed in the data directory's git work tree. The
# summary goes to stdout: ci/workflows/intake.sh makes it a pull request's body.

# rebase_new: the above; exit 0 when every tag was added, EX_PATCH when one
# needs a person, else the first other failure's status.
rebase_new() {
  local tag rc status=0 source outcome kind family detail n=0 list
  local -a tags=() lines=()
  local -A count=()
  [[ -z ${P2P_FAMILY} && -z ${P2P_RUN_SHA256} ]] ||
    die "${EX_USAGE}" "--family and --run-sha256 name one tag's family and .run; rebase --new takes neither"
  versions_load
  source=${P2P_SOURCE:-$(upstream_git)}
  # not `mapfile < <(...)`: a listing that fails must end this run (exit
  # EX_FETCH), never read as "nothing new"
  list=$(rebase_new_tags "${source}") || exit "$?"
  [[ -z ${list} ]] || mapfile -t tags <<<"${list}"
  if [[ ${#tags[@]} -eq 0 ]]; then
    # with --list on stderr: stdout stays the list (empty)
    printf 'rebase --new: nothing new in %s: versions.conf lists every tag there from %s on\n' \
      "${source}" "$(printf '%s\n' "${V_TAGS[@]}" | sort -V | head -n 1)" >&"$((P2P_REBASE_LIST == 1 ? 2 : 1))"
    return 0
  fi
  if [[ ${P2P_REBASE_LIST} -eq 1 ]]; then
    printf '%s\n' "${tags[@]}"
    return 0
  fi
  rebase_new_preflight
  rebase_lock
  stage rebase "--new: ${#tags[@]} tags of ${source} that versions.conf lacks: ${tags[*]}"
  outcome="${P2P_CACHE_DIR}/.rebase-outcome.$$"
  mkdir -p "${P2P_CACHE_DIR}"
  on_exit rebase_new_cleanup
  for tag in "${tags[@]}"; do
    n=$((n + 1))
    stage rebase "--new: ${tag} (${n} of ${#tags[@]})"
    rm -f -- "${outcome}"
    rc=0
    env "NVP2P_REBASE_OUTCOME=${outcome}" "NVP2P_HELD_LOCKS=$(held_locks_env)" \
      "$(dirname "${P2P_LIB_DIR}")/build.sh" "${RB_NEW_GLOBALS[@]}" rebase "${tag}" "${RB_NEW_ARGS[@]}" || rc=$?
    kind="" family="" detail=""
    [[ ! -s ${outcome} ]] || IFS=$'\t' read -r kind family detail <"${outcome}"
    if [[ ${rc} -eq 0 && ${kind} =~ ^(fits|new-family|listed)$ ]]; then
      [[ ${P2P_REBASE_COMMIT} -eq 0 ]] || rebase_new_commit "${tag}" "${kind}" "${family}" "${outcome}"
    elif [[ ${rc} -eq ${EX_PATCH} && ${kind} == needs-person ]]; then
      [[ ${status} -ne 0 ]] || status=${EX_PATCH}
    else
      kind=error
      detail="exit ${rc}${detail:+: ${detail}}"
      [[ ${status} -ne 0 && ${status} -ne ${EX_PATCH} ]] || status=${rc}
      [[ ${status} -ne 0 ]] || status=${EX_FAIL}
    fi
    count[${kind}]=$((${count[${kind}]:-0} + 1))
    lines+=("$(rebase_new_line "${tag}" "${kind}" "${family}" "${detail}")")
  done
  printf '\nrebase --new: %s tags of %s that versions.conf lacked, oldest first:\n' "${#tags[@]}" "${source}"
  printf '%s\n' "${lines[@]}"
  printf 'fits: %s, new family: %s, needs a person: %s, failed: %s%s\n' "${count[fits]:-0}" "${count[new-family]:-0}" \
    "${count[needs-person]:-0}" "${count[error]:-0}" "$([[ ${P2P_DRY_RUN} -eq 0 ]] || printf ' (dry run: nothing was changed)')"
  [[ ${status} -eq 0 ]] || exit "${status}"
}

rebase_new_cleanup() {
  rm -f -- "${P2P_CACHE_DIR}/.rebase-outcome.$$"
}

# rebase_new_line TAG KIND FAMILY DETAIL: one line of the summary.
rebase_new_line() {
  local tag=$1 kind=$2 family=$3 detail=$4
  case ${kind} in
  fits) printf '  %-11s fits        family %s: %s\n' "${tag}" "${family}" "${detail}" ;;
  new-family) printf '  %-11s new family  %s (%s)\n' "${tag}" "${family}" "${detail}" ;;
  listed) printf '  %-11s listed      family %s (another run added it)\n' "${tag}" "${family}" ;;
  needs-person) printf '  %-11s a person    %s\n' "${tag}" "${detail}" ;;
  *) printf '  %-11s failed      %s\n' "${tag}" "${detail}" ;;
  esac
}

# rebase_new_tags SOURCE: the tags of SOURCE (a git repository, a bundle, or
# a remote) that versions.conf lacks and that sort after its oldest tag,
# oldest first. A source that cannot be listed, or lists no tag at all (a
# clone made without its tags), is EX_FETCH: it says nothing about what is
# new.
rebase_new_tags() {
  local src=$1 oldest t all
  local -A listed=()
  for t in "${V_TAGS[@]}"; do listed[${t}]=1; done
  oldest=$(printf '%s\n' "${V_TAGS[@]}" | sort -V | head -n 1)
  all=$(rebase_source_tags "${src}") || exit "$?"
  [[ -n ${all} ]] || die "${EX_FETCH}" "${src} has no tags to list (a clone made without its tags? pass --source with NVIDIA's repository)"
  while IFS= read -r t; do
    valid_tag_string "${t}" || continue
    [[ -z ${listed[${t}]+x} ]] || continue
    if version_le "${oldest}" "${t}"; then printf '%s\n' "${t}"; fi
  done <<<"${all}" | sort -V -u
}

# rebase_source_tags SOURCE: every tag name of SOURCE.
rebase_source_tags() {
  local src=$1 out
  if is_git_repo "${src}"; then
    git -c safe.directory='*' -C "${src}" for-each-ref --format='%(refname:strip=2)' refs/tags
  elif [[ -f ${src} ]] && git bundle list-heads "${src}" >/dev/null 2>&1; then
    git bundle list-heads "${src}" | sed -n -E 's|^[0-9a-f]+ refs/tags/([^^]+)$|\1|p'
  elif [[ ${src} == https://* || ${src} == /* ]]; then
    [[ ${src} == /* && ! -e ${src} ]] && die "${EX_FETCH}" "--source ${src}: no such file or directory"
    need_cmd git git
    out=$(git ls-remote --tags --refs -- "${src}" 2>/dev/null) ||
      die "${EX_FETCH}" "cannot list the tags of ${src} (offline? pass --source with a git repository or bundle)"
    sed -n -E 's|^[0-9a-f]+[[:space:]]+refs/tags/(.+)$|\1|p' <<<"${out}"
  else
    die "${EX_USAGE}" "--source ${src} is not a git repository or bundle"
  fi
}

# rebase_new_preflight: the data directory is clean where rebase writes (and
# a git work tree, with --commit); RB_NEW_GLOBALS / RB_NEW_ARGS are what each
# tag's run gets.
RB_NEW_GLOBALS=()
RB_NEW_ARGS=()
rebase_new_preflight() {
  local c
  rebase_clean_data
  if [[ ${P2P_REBASE_COMMIT} -eq 1 && ${P2P_DRY_RUN} -eq 0 ]]; then
    git -c safe.directory='*' -C "${P2P_DATA_DIR}" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
      die "${EX_USAGE}" "--commit: ${P2P_DATA_DIR} is not a git work tree"
  fi
  RB_NEW_GLOBALS=(--cache-dir "${P2P_CACHE_DIR}" --work-dir "${P2P_WORK_DIR}")
  [[ -z ${P2P_ROOT} ]] || RB_NEW_GLOBALS+=(--root "${P2P_ROOT}")
  [[ ${P2P_DRY_RUN} -eq 0 ]] || RB_NEW_GLOBALS+=(--dry-run)
  [[ ${P2P_VERBOSE} -eq 0 ]] || RB_NEW_GLOBALS+=(--verbose)
  [[ ${P2P_LOCK_WAIT} -eq 0 ]] || RB_NEW_GLOBALS+=(--lock-wait "${P2P_LOCK_WAIT}")
  RB_NEW_ARGS=()
  [[ -z ${P2P_SOURCE} ]] || RB_NEW_ARGS+=(--source "${P2P_SOURCE}")
  [[ -z ${P2P_KERNEL} ]] || RB_NEW_ARGS+=(--kernel "${P2P_KERNEL}")
  [[ -z ${P2P_KERNEL_SRC} ]] || RB_NEW_ARGS+=(--kernel-src "${P2P_KERNEL_SRC}")
  for c in "${P2P_CHROOTS[@]+"${P2P_CHROOTS[@]}"}"; do RB_NEW_ARGS+=(--chroot "${c}"); done
  [[ ${P2P_UNITS_ONLY} -eq 0 ]] || RB_NEW_ARGS+=(--units-only)
  [[ ${P2P_NO_CCACHE} -eq 0 ]] || RB_NEW_ARGS+=(--no-ccache)
  return 0
}

# rebase_new_commit TAG KIND FAMILY OUTCOME: one commit of what TAG's run
# changed (REBASE_WRITES: versions.conf, patches/, the workflows, the
# generated tables), its per-patch table as the message body. An identity
# is supplied only where git has none.
rebase_new_commit() {
  local tag=$1 kind=$2 family=$3 outcome=$4 subject p
  local -a g=(git -c safe.directory='*' -C "${P2P_DATA_DIR}") paths=()
  [[ ${P2P_DRY_RUN} -eq 0 && ${kind} != listed ]] || return 0
  "${g[@]}" config user.email >/dev/null 2>&1 || g+=(-c "user.email=rebase@nvidia-p2p.invalid")
  "${g[@]}" config user.name >/dev/null 2>&1 || g+=(-c "user.name=build.sh rebase")
  for p in "${REBASE_WRITES[@]}"; do
    [[ ! -e ${P2P_DATA_DIR}/${p} ]] || paths+=("${p}")
  done
  "${g[@]}" add -A -- "${paths[@]}"
  "${g[@]}" diff --cached --quiet && return 0
  case ${kind} in
  fits) subject="versions.conf: ${tag} in family ${family} (build.sh rebase: fits)" ;;
  *) subject="patches/${family}: new family for ${tag} (build.sh rebase)" ;;
  esac
  "${g[@]}" commit -q -m "${subject}" -m "$(tail -n +2 "${outcome}")" \
    -m "Written by build.sh rebase --new --commit; pins computed from the tag." ||
    die "${EX_FAIL}" "git commit of ${tag}'s change failed in ${P2P_DATA_DIR}"
  stage rebase "committed: ${subject}"
}

# shellcheck shell=bash
# lib/80-rebase.sh: `build.sh rebase`, bringing a release that versions.conf
# does not list into support. The tag's source comes from git (pins are
# computed from the tag, so a tarball alone cannot do); the nearest family is
# tried on it and one of three things happens:
#   fits     applies at fuzz 0 (line offsets are fine: every family spans
#            releases whose line numbers differ) and the changed units compile:
#            the tag's line is added to versions.conf
#   fuzz     applies only with fuzz: a new family with the patches refreshed by
#            quilt is written, its diff shown, and it is built; then the line
#   rejects  a quilt work tree with the rejects is left for a manual port, with
#            what moved; versions.conf and patches/ are not touched
# versions.conf and patches/ are only ever changed by renaming complete files
# into place, and an interrupted run undoes what it renamed.

readonly UPSTREAM_GIT_URL="https://github.com/NVIDIA/open-gpu-kernel-modules.git"
readonly RUN_URL_BASE="https://us.download.nvidia.com/XFree86/Linux-x86_64"

help_rebase() {
  cat <<'EOF'
Usage: build.sh rebase <tag> [--source GIT] [--family NAME] [--kernel KVER | --kernel-src DIR]
                       [--run-sha256 HEX] [--units-only] [--no-ccache] [--dry-run]

Bring release <tag>, which versions.conf does not list, into support.

The source must be git: the tag's commit, tree and core ids are computed from
the tag itself (a tarball alone cannot be pinned). --source takes a git
repository (bare or not) or a git bundle holding refs/tags/<tag>; without it
the tag is fetched from GitHub over https into <cache-dir>/upstream.git. The
tag's version.mk must declare <tag>.

The family of the listed tag nearest to <tag> (or --family NAME, e.g. one you
ported by hand) is tried at fuzz 0, together with the checks its modprobe.conf
declares (the registry key numbering it relies on). Then one of:

  fits     it applies at fuzz 0 (line offsets are fine) and every translation
           unit the series changes compiles (build --units-only): the tag's line
           is added to versions.conf, tested "apply,compile".
  fuzz     it applies only with fuzz: a new family patches/<name> is written
           with the patches refreshed by quilt (headers kept, Last-Update and
           X-Refreshed-From updated), the diff to the old family is shown, and
           the tag is built with it (all modules, for the kernel given or the
           running one; only the changed units with --units-only); then the
           family and the line are added. Review its DEP-3 headers and
           modprobe.conf: they speak of the family it came from.
  rejects  a patch does not apply even with fuzz, or the registry keys moved:
           exit 7. The quilt work tree is kept under <work-dir>/rebase-<tag>
           with the rejects; each rejected hunk is shown with its file, the
           function it is in and which of its lines are gone. Nothing is added.

After "fits" or "fuzz", the source is in the verified cache, so
`build.sh build <tag>` works offline, and the hosted workflow is regenerated.
The .run checksum is recorded as unknown unless --run-sha256 gives it.
--dry-run tries the patches in a temporary directory and says which of the
three would happen, changing nothing.
EOF
}

# Set by the steps below.
RB_GITDIR=""
RB_DIR=""
RB_NEW_FAMILY=""
RB_COMMITTED=1

cmd_rebase() {
  local tag="" family outcome kind
  parse_stage_args rebase tag "$@"
  [[ -n ${tag} ]] || die "${EX_USAGE}" "rebase needs a tag (see: build.sh help rebase)"
  valid_tag_string "${tag}" || die "${EX_UNSUPPORTED}" "'${tag}' is not a driver tag (expected digits and dots, like 595.58.03)"
  versions_load
  if [[ -n ${V_FAMILY[${tag}]+x} ]]; then
    note "${tag} is already supported (family ${V_FAMILY[${tag}]}); nothing to do"
    return 0
  fi
  family=$(rebase_family "${tag}")
  [[ ${P2P_DRY_RUN} -eq 1 ]] || cache_lock
  rebase_lock
  rebase_workspace "${tag}"
  rebase_source "${tag}"
  stage rebase "${tag}: trying family ${family} (nearest listed tag $(nearest_tag "${tag}"))"
  V_FAMILY["${tag}"]=${family}
  outcome=$(rebase_try "${tag}" "${family}") || exit "$?"
  kind=${outcome%% *}
  case ${kind} in
  fits)
    printf 'rebase %s: fits family %s: applies at fuzz 0%s\n' "${tag}" "${family}" "${outcome#fits}"
    [[ ${P2P_DRY_RUN} -eq 1 ]] && { printf 'would compile the changed units and add %s to versions.conf (family %s)\n' "${tag}" "${family}"; return 0; }
    rebase_adopt "${tag}" "${family}" "apply,compile"
    ;;
  fuzz)
    RB_NEW_FAMILY=$(new_family_name "${tag}")
    printf 'rebase %s: family %s applies only with fuzz (%s): new family %s\n' "${tag}" "${family}" "${outcome#fuzz }" "${RB_NEW_FAMILY}"
    rebase_refresh "${tag}" "${family}"
    [[ ${P2P_DRY_RUN} -eq 1 ]] && { printf 'would write patches/%s, build %s with it and add it to versions.conf\n' "${RB_NEW_FAMILY}" "${tag}"; return 0; }
    rebase_adopt "${tag}" "${RB_NEW_FAMILY}" "apply,compile"
    ;;
  rejects)
    rebase_rejects "${tag}" "${family}" "${outcome#rejects }"
    ;;
  esac
}

# rebase_family TAG: --family, checked, or the nearest listed tag's family.
rebase_family() {
  local tag=$1 near
  if [[ -n ${P2P_FAMILY} ]]; then
    [[ ${P2P_FAMILY} =~ ${FAMILY_RE} && -d ${P2P_DATA_DIR}/patches/${P2P_FAMILY} ]] ||
      die "${EX_USAGE}" "--family ${P2P_FAMILY}: no such family directory ${P2P_DATA_DIR}/patches/${P2P_FAMILY}"
    printf '%s\n' "${P2P_FAMILY}"
    return 0
  fi
  near=$(nearest_tag "${tag}")
  printf '%s\n' "${V_FAMILY[${near}]}"
}

# rebase_lock: one rebase at a time may change a data directory.
RB_LOCK_FD=""
rebase_lock() {
  [[ ${P2P_DRY_RUN} -eq 1 ]] && return 0
  exec {RB_LOCK_FD}<"${P2P_DATA_DIR}"
  lock_fd "${RB_LOCK_FD}" "${P2P_DATA_DIR}" "another rebase"
}

# rebase_workspace TAG: RB_DIR, empty. Kept after a reject (the work tree for
# the manual port), removed otherwise; a temporary one under --dry-run.
rebase_workspace() {
  local tag=$1
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    mk_temp_dir "${TMPDIR:-/tmp}"
    RB_DIR=${P2P_TMP:?}
    return 0
  fi
  RB_DIR="${P2P_WORK_DIR}/rebase-${tag}"
  rm -rf -- "${RB_DIR}"
  mkdir -p "${RB_DIR}"
}

# rebase_source TAG: RB_DIR/src holds the tag's tree, and V_* its pins.
rebase_source() {
  local tag=$1 pins commit tree core declared
  rebase_gitdir "${tag}"
  pins=$(git_pins "${RB_GITDIR}" "${tag}") ||
    die "${EX_FETCH}" "cannot compute the pins of ${tag} in ${RB_GITDIR}"
  read -r commit tree core <<<"${pins}"
  declared=$(git -c safe.directory='*' --git-dir="${RB_GITDIR}" show "${commit}:version.mk" 2>/dev/null |
    sed -n -E 's/^NVIDIA_VERSION[[:space:]]*=[[:space:]]*([0-9.]+)[[:space:]]*$/\1/p')
  [[ ${declared} == "${tag}" ]] ||
    die "${EX_CHECKSUM}" "tag ${tag} in ${RB_GITDIR} (commit ${commit}) declares version '${declared:-none}' in version.mk, not ${tag}; refusing it"
  V_TAGS+=("${tag}")
  V_COMMIT["${tag}"]=${commit}
  V_TREE["${tag}"]=${tree}
  V_CORE["${tag}"]=${core}
  V_RUN_SHA["${tag}"]=${P2P_RUN_SHA256:-unknown}
  V_RUN_URL["${tag}"]="${RUN_URL_BASE}/${tag}/NVIDIA-Linux-x86_64-${tag}.run"
  V_TESTED["${tag}"]="-"
  stage verify "${tag}: commit ${commit}, tree ${tree}"
  source_from_git "${tag}" "${RB_GITDIR}" "${RB_DIR}"
  verify_tree "${tag}" "${RB_DIR}/tree"
  mv -- "${RB_DIR}/tree" "${RB_DIR}/src"
}

# rebase_gitdir TAG: RB_GITDIR, a git directory holding refs/tags/TAG.
rebase_gitdir() {
  local tag=$1 src=${P2P_SOURCE}
  if [[ -n ${src} ]] && is_git_repo "${src}"; then
    RB_GITDIR=$(git -c safe.directory='*' -C "${src}" rev-parse --absolute-git-dir 2>/dev/null) ||
      die "${EX_FETCH}" "${src}: not a usable git repository"
    git -c safe.directory='*' --git-dir="${RB_GITDIR}" rev-parse -q --verify "refs/tags/${tag}" >/dev/null ||
      die "${EX_FETCH}" "${src} has no tag ${tag}$(newest_tag_hint "${RB_GITDIR}")"
    return 0
  fi
  if [[ -n ${src} && -f ${src} ]] && git bundle list-heads "${src}" >/dev/null 2>&1; then
    git bundle list-heads "${src}" "refs/tags/${tag}" | grep -q . ||
      die "${EX_FETCH}" "bundle ${src} has no tag ${tag}"
    rebase_fetch "${tag}" "${src}"
    return 0
  fi
  if [[ -n ${src} ]]; then
    [[ -e ${src} ]] || die "${EX_FETCH}" "--source ${src}: no such file or directory"
    die "${EX_USAGE}" "--source ${src} is not a git repository or bundle: rebase computes the pins from the git tag, and a tarball or tree alone cannot be pinned (use it with build.sh fetch once the tag is listed)"
  fi
  rebase_fetch "${tag}" "${NVP2P_UPSTREAM_GIT:-${UPSTREAM_GIT_URL}}"
}

# rebase_fetch TAG FROM: fetch the tag (https or a local bundle/repository) into
# <cache-dir>/upstream.git, or a temporary repository under --dry-run.
rebase_fetch() {
  local tag=$1 from=$2
  case ${from} in
  https://* | /*) ;;
  *) die "${EX_USAGE}" "refusing to fetch from '${from}': https:// or a local path only" ;;
  esac
  need_cmd git git
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    RB_GITDIR="${RB_DIR}/upstream.git"
  else
    RB_GITDIR="${P2P_CACHE_DIR}/upstream.git"
  fi
  [[ -d ${RB_GITDIR} ]] || git init -q --bare "${RB_GITDIR}"
  stage fetch "tag ${tag} from ${from}"
  if ! git --git-dir="${RB_GITDIR}" fetch -q --no-tags --depth=1 -- "${from}" \
    "+refs/tags/${tag}:refs/tags/${tag}" 2>>"${P2P_LOG_FILE:-/dev/null}"; then
    if git ls-remote --tags -- "${from}" >/dev/null 2>&1; then
      die "${EX_FETCH}" "tag ${tag} does not exist in ${from}$(newest_remote_tag_hint "${from}")"
    fi
    die "${EX_FETCH}" "cannot reach ${from} (offline? pass --source with a git repository or bundle holding the tag)"
  fi
}

newest_tag_hint() {
  local newest
  newest=$(git -c safe.directory='*' --git-dir="$1" tag -l '[0-9]*' | sort -V | tail -n 1)
  [[ -n ${newest} ]] && printf ' (newest there: %s; not released yet?)' "${newest}"
}

newest_remote_tag_hint() {
  local newest
  newest=$(git ls-remote --tags --refs -- "$1" 2>/dev/null | sed -n -E 's|.*refs/tags/([0-9][0-9.]*)$|\1|p' | sort -V | tail -n 1)
  [[ -n ${newest} ]] && printf ' (newest there: %s; not released yet?)' "${newest}"
}

# rebase_try TAG FAMILY: prints "fits [offsets...]", "fuzz <patches>" or
# "rejects <patch> [why]". Trees are made under RB_DIR.
rebase_try() {
  local tag=$1 family=$2 log rc=0 fuzzy="" name why
  local -a names=()
  V_FAMILY["${tag}"]=${family}
  rebase_series "${tag}"
  mapfile -t names <"${RB_DIR}/series"
  log="${RB_DIR}/fuzz0.log"
  if why=$(family_requires_unmet "${tag}" "${RB_DIR}/src"); [[ -n ${why} ]]; then
    printf 'rejects modprobe.conf %s\n' "${why}"
    return 0
  fi
  rm -rf -- "${RB_DIR}/tree"
  cp -a -- "${RB_DIR}/src" "${RB_DIR}/tree"
  quilt_in "${RB_DIR}/tree" "${tag}" "${RB_DIR}/series" push -a --fuzz=0 >"${log}" 2>&1 || rc=$?
  [[ ${rc} -eq 2 && ! -s ${RB_DIR}/series ]] && rc=0
  if [[ ${rc} -eq 0 ]]; then
    printf 'fits%s\n' "$(grep -q 'offset' "${log}" && printf ' (with line offsets)')"
    return 0
  fi
  # Patch by patch with quilt's default fuzz: which need it, which reject.
  rm -rf -- "${RB_DIR}/tree"
  cp -a -- "${RB_DIR}/src" "${RB_DIR}/tree"
  for name in "${names[@]+"${names[@]}"}"; do
    if ! quilt_in "${RB_DIR}/tree" "${tag}" "${RB_DIR}/series" push --fuzz=2 >"${RB_DIR}/push.log" 2>&1; then
      printf 'rejects %s\n' "${name}"
      return 0
    fi
    grep -q 'with fuzz' "${RB_DIR}/push.log" && fuzzy+="${fuzzy:+, }${name}"
  done
  printf 'fuzz %s\n' "${fuzzy}"
}

# rebase_series TAG: RB_DIR/series, the tag's series for its source in RB_DIR.
rebase_series() {
  local series
  series=$(tag_series "$1" "${RB_DIR}/src") || exit "$?"
  printf '%s\n' "${series}" | grep . >"${RB_DIR}/series" || true
}

# new_family_name TAG: the tag's major version (600), else major.minor
# (600.10), else the tag itself: the first that no family uses yet.
new_family_name() {
  local tag=$1 name
  for name in "${tag%%.*}" "$(cut -d. -f1-2 <<<"${tag}")" "${tag}"; do
    [[ -e ${P2P_DATA_DIR}/patches/${name} ]] || { printf '%s\n' "${name}" && return 0; }
  done
  die "${EX_DATA}" "no free family name for ${tag} under ${P2P_DATA_DIR}/patches"
}

# rebase_refresh TAG FAMILY: RB_DIR/family, FAMILY's files with every patch
# refreshed by quilt against the tag's source; the diff goes to stdout. The
# tag is pointed at it (V_FAMILY_DIR) for the checks that follow.
rebase_refresh() {
  local tag=$1 family=$2 new="${RB_DIR}/family" name today
  local -a names=()
  mapfile -t names <"${RB_DIR}/series"
  rm -rf -- "${new}" "${RB_DIR}/tree"
  cp -a -- "${P2P_DATA_DIR}/patches/${family}" "${new}"
  cp -a -- "${RB_DIR}/src" "${RB_DIR}/tree"
  today=$(date -u +%Y-%m-%d)
  for name in "${names[@]+"${names[@]}"}"; do
    quilt_run "${RB_DIR}/tree" "${new}" "${RB_DIR}/series" push --fuzz=2 >/dev/null 2>&1 ||
      die "${EX_PATCH}" "${name} no longer applies while refreshing (internal error)"
    quilt_run "${RB_DIR}/tree" "${new}" "${RB_DIR}/series" refresh -p ab --no-timestamps --no-index >/dev/null 2>&1 ||
      die "${EX_PATCH}" "quilt refresh of ${name} failed"
    if [[ "$(patch_body "${new}/${name}")" == "$(patch_body "${P2P_DATA_DIR}/patches/${family}/${name}")" ]]; then
      cp -- "${P2P_DATA_DIR}/patches/${family}/${name}" "${new}/${name}"
      continue
    fi
    sed -i -E -e "0,/^--- /s/^Last-Update: .*/Last-Update: ${today}/" \
      -e "0,/^--- /{/^X-Refreshed-From: /d}" "${new}/${name}"
    sed -i "0,/^Last-Update: /s//X-Refreshed-From: family ${family}, by build.sh rebase ${tag}\n&/" "${new}/${name}"
  done
  stage rebase "refreshed patches: diff from family ${family} to ${RB_NEW_FAMILY}"
  for name in "${names[@]+"${names[@]}"}"; do
    diff -u --label "${family}/${name}" --label "${RB_NEW_FAMILY}/${name}" \
      "${P2P_DATA_DIR}/patches/${family}/${name}" "${new}/${name}" || true
  done
  V_FAMILY["${tag}"]=${RB_NEW_FAMILY}
  V_FAMILY_DIR["${tag}"]=${new}
}

# patch_body FILE: a patch without its header (from the first "--- " line).
patch_body() {
  sed -n '/^--- /,$p' "$1"
}

# rebase_adopt TAG FAMILY TESTED: the tag's source into the verified cache,
# the series applied and compiled (built with a new family), then the new
# family and the tag's line renamed into place.
rebase_adopt() {
  local tag=$1 family=$2 tested=$3 dest
  dest=$(cache_src_dir "${tag}")
  rm -rf -- "${dest}"
  mkdir -p "$(dirname "${dest}")"
  mv -- "${RB_DIR}/src" "${dest}"
  printf '%s origin=%s verified=%s\n' "$(tag_info "${tag}")" "${P2P_SOURCE:-${RB_GITDIR}}" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"${dest}.pin"
  patch_tree "${tag}" "$(default_patched_dir "${tag}")"
  compile_units "${tag}" >&2
  if [[ -n ${V_FAMILY_DIR[${tag}]:-} && ${P2P_UNITS_ONLY} -eq 0 ]]; then
    resolve_kernel
    build_modules "${tag}"
    tested+=",build:$(kernel_series "${P2P_KREL}")"
  fi
  V_TESTED["${tag}"]=${tested}
  rebase_commit "${tag}" "${family}"
  rm -rf -- "${RB_DIR}"
  stage finished "${tag} added to versions.conf (family ${family}, tested ${tested}); next: build.sh ${tag}"
}

# rebase_commit TAG FAMILY: rename the new family (if any) and the new
# versions.conf into place; an interrupt in between undoes the first.
rebase_commit() {
  local tag=$1 family=$2 conf tmp
  conf=$(versions_file)
  mk_temp_file "$(dirname "${conf}")"
  tmp=${P2P_TMP:?}
  versions_with_line "${tag}" <"${conf}" >"${tmp}"
  chmod --reference="${conf}" "${tmp}"
  if [[ -n ${V_FAMILY_DIR[${tag}]:-} ]]; then
    RB_COMMITTED=0
    on_exit rebase_undo
    mv -T -- "${V_FAMILY_DIR[${tag}]}" "${P2P_DATA_DIR}/patches/${family}"
  fi
  mv -- "${tmp}" "${conf}"
  RB_COMMITTED=1
  regenerate_workflow
}

rebase_undo() {
  [[ ${RB_COMMITTED} -eq 1 || -z ${RB_NEW_FAMILY} ]] && return 0
  rm -rf -- "${P2P_DATA_DIR:?}/patches/${RB_NEW_FAMILY}"
  printf '%s: interrupted: patches/%s removed again; versions.conf is unchanged\n' "${P2P_PROG}" "${RB_NEW_FAMILY}" >&2
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

# regenerate_workflow: the hosted CI workflow is generated from versions.conf.
regenerate_workflow() {
  local gen="${P2P_DATA_DIR}/ci/gen-workflow.sh"
  [[ -x ${gen} ]] || return 0
  "${gen}" || warn "could not regenerate the hosted workflow; run ci/gen-workflow.sh"
}

# rebase_rejects TAG FAMILY WHAT: keep the work tree, explain, exit 7.
rebase_rejects() {
  local tag=$1 family=$2 what=$3 name rej
  name=${what%% *}
  if [[ ${name} == modprobe.conf ]]; then
    die "${EX_PATCH}" "family ${family} does not fit ${tag}: ${what#modprobe.conf }; port the family by hand (see README.md, \"Adding a release\")"
  fi
  printf 'rebase %s: family %s does not apply: %s is rejected even with fuzz\n' "${tag}" "${family}" "${name}"
  quilt_in "${RB_DIR}/tree" "${tag}" "${RB_DIR}/series" push -f --fuzz=2 >/dev/null 2>&1 || true
  while IFS= read -r rej; do
    reject_report "${rej}" "${rej%.rej}"
  done < <(find "${RB_DIR}/tree" -name '*.rej' -type f | sort)
  if [[ ${P2P_DRY_RUN} -eq 0 ]]; then
    cp -a -- "$(family_dir "${tag}")" "${RB_DIR}/patches"
    rm -f -- "${RB_DIR}/tree/.pc/.quilt_patches" "${RB_DIR}/tree/.pc/.quilt_series"
    cat <<EOF

The work tree is kept for a manual port: ${RB_DIR}/tree
(pristine source in ${RB_DIR}/src). ${name} is force-applied there with its
rejects (*.rej); the patches before it are applied. To port by hand:
  cd ${RB_DIR}/tree
  export QUILT_PATCHES=${RB_DIR}/patches QUILT_SERIES=${RB_DIR}/series QUILT_PC=.pc
  # apply the rejected hunks by hand, then:
  quilt --quiltrc - refresh -p ab --no-timestamps --no-index
  quilt --quiltrc - push --fuzz=0     # the next patches, one by one, refreshing each
Then copy ${RB_DIR}/patches to patches/<new family>/, make each DEP-3 header
and modprobe.conf true for ${tag}'s code, and run:
  build.sh rebase ${tag} --family <new family>
Nothing was added to versions.conf or patches/.
EOF
  fi
  exit "${EX_PATCH}"
}

# reject_report REJ FILE: for each rejected hunk, where it belongs in the new
# source (the function around the first of its lines that is still there)
# and which of its lines, and of their identifiers, are gone.
reject_report() {
  local rej=$1 file=$2 rel hunk=0 line at=0
  local -a lines=()
  rel=${file#"${RB_DIR}/tree/"}
  RJ_DELTA=0
  while IFS= read -r line || [[ -n ${line} ]]; do
    case ${line} in
    '@@ '*)
      [[ ${hunk} -gt 0 ]] && reject_hunk "${rel}" "${file}" "${hunk}" "${at}" "${lines[@]+"${lines[@]}"}"
      hunk=$((hunk + 1))
      lines=()
      at=$(sed -n -E 's/^@@ -([0-9]+).*/\1/p' <<<"${line}")
      at=$((at + RJ_DELTA))
      ;;
    '---'* | '+++'* | '***'*) ;;
    ' '* | '-'*) lines+=("${line:1}") ;;
    esac
  done <"${rej}"
  [[ ${hunk} -gt 0 ]] && reject_hunk "${rel}" "${file}" "${hunk}" "${at}" "${lines[@]+"${lines[@]}"}"
  return 0
}

# RJ_DELTA: how far the file moved at the last hunk anchored on a unique line.
RJ_DELTA=0

# reject_hunk REL FILE N AT LINE...: LINEs are the hunk's context and removed
# lines, as the patch expects them in FILE at line AT of the old source.
reject_hunk() {
  local rel=$1 file=$2 n=$3 at=$4 l where="" fn="" id count unique=0
  shift 4
  local -a gone_lines=() gone_ids=()
  for l in "$@"; do
    [[ -n ${l//[[:space:]]/} ]] || continue
    count=$(grep -c -F -x -- "${l}" "${file}" || true)
    if [[ ${count} -gt 0 ]]; then
      # Anchor on the first line found only once in the file, else on the
      # occurrence of the first line found that is nearest to the old position.
      if [[ ${unique} -eq 0 && (-z ${where} || ${count} -eq 1) ]]; then
        where=$(grep -n -F -x -- "${l}" "${file}" | cut -d: -f1 |
          awk -v at="${at}" '{ d = $1 - at; if (d < 0) d = -d; if (best == "" || d < bd) { best = $1; bd = d } } END { print best }')
        [[ ${count} -eq 1 ]] && unique=1 && RJ_DELTA=$((RJ_DELTA + where - at))
      fi
      continue
    fi
    gone_lines+=("${l}")
    while IFS= read -r id; do
      grep -q -w -- "${id}" "${file}" || gone_ids+=("${id}")
    done < <(grep -o -E '[A-Za-z_][A-Za-z0-9_]{7,}' <<<"${l}")
  done
  if [[ -z ${where} ]]; then
    printf '  %s, hunk %s: none of its lines are in the file any more: the code moved or was rewritten\n' "${rel}" "${n}"
  else
    [[ ${rel} == *.[ch] ]] && fn=$(enclosing_function "${file}" "${where}")
    printf '  %s, hunk %s: belongs near line %s%s\n' "${rel}" "${n}" "${where}" "${fn:+, in ${fn}()}"
    [[ ${#gone_lines[@]} -eq 0 ]] &&
      printf '      all of its lines are still in the file, but no longer together: upstream inserted or reordered lines there\n'
  fi
  for l in "${gone_lines[@]+"${gone_lines[@]}"}"; do
    printf '      no longer in the file: %s\n' "${l}"
  done
  if [[ ${#gone_ids[@]} -gt 0 ]]; then
    printf '      gone from %s: %s\n' "${rel##*/}" "$(printf '%s\n' "${gone_ids[@]}" | sort -u | tr '\n' ' ')"
  fi
}

# enclosing_function FILE LINE: the name of the C function around LINE, found
# by walking up to a definition ("name(" at the start of a line, or NVIDIA's
# style: the name alone on a line, its "(" on the next).
enclosing_function() {
  awk -v stop="$2" '
    NR > stop { exit }
    /^[A-Za-z_][A-Za-z0-9_ *]*[A-Za-z0-9_]+[ ]*\(/ && $0 !~ /;[ ]*$/ {
      s = $0; sub(/[ ]*\(.*/, "", s); n = split(s, w, /[ *]+/); name = w[n]; next
    }
    /^[A-Za-z_][A-Za-z0-9_]*[ ]*$/ { cand = $1; candline = NR; next }
    /^\(/ && NR == candline + 1 { name = cand }
    END { print name }' "$1"
}

# shellcheck shell=bash
# lib/83-rebase.sh: `build.sh rebase`, bringing a release that versions.conf
# does not list into support, without a person where the decision can be
# proven.
#
# Design. The source must be git: the pins are computed from the tag, and the
# three-way merge needs the tree of the family's nearest listed tag (the
# "base": every patch of the family applies to it at fuzz 0, so the base's
# file before and after each patch are known exactly). Before anything is
# written, the family's mechanism is checked on the new tag (the registry
# numbering of modprobe.conf's "# requires:" lines, and that the functions and
# registry keys the P2P patches rely on are still referenced where they were:
# lib/81-rebase-merge.sh). Then every patch, in series order, gets one verdict
# (lib/81-rebase-merge.sh, rebase_classify):
#   applies     quilt push at fuzz 0 (line offsets are fine)
#   left out    the tag already carries the fix (X-Applied-Upstream-If)
#   upstream    the tag already holds the patch's result (it reverse-applies,
#               or the three-way merge changes nothing)
#   merged      a three-way merge (git merge-file, per file: base before the
#               patch, base after it, the new tag) places it; the result is
#               pushed and refreshed by quilt at fuzz 0
#   superseded  a compat patch whose lines upstream changed itself (the merge
#               conflicts): dropped only when the tag, without it, builds all
#               modules for every kernel of the patch's range that is at hand
#               (X-Kernel-Since, or kernels.conf's rules naming it) and the
#               kernels.conf rules pass; otherwise a conflict
#   conflict    a P2P patch that does not merge, or a compat patch that cannot
#               be proven superseded: a person is needed
# All "applies" (and "left out"): the tag joins the family (fits). Anything
# merged, upstream or superseded: a new family is written with the refreshed
# patches and a dropped.conf line per dropped patch, with the evidence. Any
# conflict: exit 7, every patch reported, each conflicting hunk shown with its
# file, function and what moved; the work tree is kept. versions.conf and
# patches/ are only changed by renaming complete files into place, and an
# interrupted run undoes what it renamed. `rebase --new` (lib/82-rebase-new.sh)
# does this for every tag of the source that versions.conf lacks.

readonly RUN_URL_BASE="https://us.download.nvidia.com/XFree86/Linux-x86_64"

help_rebase() {
  usage_synopsis rebase
  cat <<'EOF'
       (global --dry-run: the same per-patch table, nothing changed)

Bring release <tag>, which versions.conf does not list, into support.

The source must be git: the tag's commit, tree and core ids are computed from
the tag itself (a tarball alone cannot be pinned). --source takes a git
repository (bare or not) or a git bundle holding refs/tags/<tag> (and, for
the three-way merge, the base tag below); without it the tags are fetched
from GitHub over https into <cache-dir>/upstream.git. The tag's version.mk
must declare <tag>.

The family of the listed tag nearest to <tag> (or --family NAME, e.g. one you
ported by hand) is tried. Its base is the family's listed tag nearest to <tag>.
First, on <tag>'s source: the registry numbering its modprobe.conf declares
("# requires:"), and that the functions the P2P patches change and the
registry keys they rely on are still referenced in every file that referenced
them in the base. Then each patch, in series order, is one of:

  applies     applies at fuzz 0 (line offsets are fine)
  left out    <tag> already has the fix (the patch's X-Applied-Upstream-If)
  upstream    <tag> already holds the patch's result (it reverse-applies)
  merged      placed by a three-way merge on the base's tree, then pushed and
              refreshed by quilt at fuzz 0
  superseded  a compat patch whose lines upstream changed itself: dropped only
              when <tag> without it builds all five modules for each kernel
              at hand in the patch's range (its X-Kernel-Since header, or the
              kernels.conf rules naming it; the kernels: --kernel or
              --kernel-src, the running kernel's headers, and each --chroot)
              and the kernels.conf rules pass
  conflict    a P2P patch that does not merge, or a compat patch that cannot
              be proven superseded here

Then one of:
  fits        every patch applies: the tag's line is added to versions.conf
              (tested "apply,compile") once every translation unit the series
              changes compiles
  new family  patches were merged or dropped: a new family patches/<name> is
              written (the refreshed patches, with X-Refreshed-From; a
              dropped.conf line per dropped patch, with its evidence; the
              per-patch table at the top of dropped.conf), its diff shown, the
              tag built with it (all modules, for --kernel/--kernel-src or the
              running kernel; only the changed units with --units-only); then
              the family and the line are added
  a person    a conflict (exit 7): the work tree is kept under
              <work-dir>/rebase-<tag> with the conflicting patches' rejects,
              each hunk shown with its file, its function and which of its
              lines are gone. Nothing is added.

  --chroot NAME:DIR   a chroot made by ci/setup/chroot.sh (e.g. 7.2, 7.3 under DIR)
                      whose kernel proves a superseded compat patch (repeatable;
                      needs root)
  --new               every tag of the source that versions.conf lacks and that
                      is newer than its oldest tag, oldest first, each as above
                      (in a run of its own); a summary at the end: fits, new
                      family, or needs a person with the reason. Exit 0 when
                      every tag was added, 7 when one needs a person; 5 when
                      the source's tags cannot be listed (offline, no such
                      path, not a repository, no tags at all): never
                      "nothing new" for a source it could not read.
  --list              with --new: only print those tags
  --commit            with --new: commit each tag's change in the data
                      directory's git work tree (versions.conf, patches/, the
                      generated workflow), the per-patch table as message
  --no-ccache         build without ccache

A git work tree with uncommitted changes to versions.conf, patches/, the
workflows, README.md or docs/verification-record.md is refused (exit 10).
After "fits" or "new family", the source is in the verified cache, so
`build.sh build <tag>` works offline, and the hosted workflow and the tables
made from versions.conf (ci/workflows/readme-table.sh) are regenerated. The .run
checksum is recorded as unknown unless --run-sha256 gives it.
EOF
}

cmd_rebase() {
  local tag=""
  parse_stage_args rebase tag "$@"
  if [[ ${P2P_REBASE_NEW} -eq 1 ]]; then
    [[ -z ${tag} ]] || die "${EX_USAGE}" "rebase --new takes no tag"
    rebase_new
    return 0
  fi
  [[ ${P2P_REBASE_LIST} -eq 0 && ${P2P_REBASE_COMMIT} -eq 0 ]] ||
    die "${EX_USAGE}" "--list and --commit go with --new (see: build.sh help rebase)"
  [[ -n ${tag} ]] || die "${EX_USAGE}" "rebase needs a tag, or --new (see: build.sh help rebase)"
  valid_tag_string "${tag}" || die "${EX_UNSUPPORTED}" "'${tag}' is not a driver tag (expected digits and dots, like 595.58.03)"
  versions_load
  if [[ -n ${V_FAMILY[${tag}]+x} ]]; then
    note "${tag} is already supported (family ${V_FAMILY[${tag}]}); nothing to do"
    rebase_outcome listed "${V_FAMILY[${tag}]}" "already in versions.conf"
    return 0
  fi
  rebase_one "${tag}"
}

# rebase_one TAG: the steps of the design above, for one tag.
rebase_one() {
  local tag=$1 family why
  family=$(rebase_family "${tag}")
  rebase_from "${family}"
  rebase_clean_data
  [[ ${P2P_DRY_RUN} -eq 1 ]] || cache_lock
  rebase_lock
  rebase_workspace "${tag}"
  rebase_source "${tag}"
  RB_BASE=$(rebase_base "${tag}" "${family}")
  stage rebase "${tag}: trying family ${family} (nearest listed tag $(nearest_tag "${tag}"); three-way base ${RB_BASE:-none})"
  rebase_stage_family "${tag}" "${family}"
  if why=$(family_requires_unmet "${tag}" "${RB_DIR}/src"); [[ -n ${why} ]]; then
    rebase_person "${tag}" "family ${family} does not fit ${tag}: ${why//$'\n'/; }; port the family by hand (see CONTRIBUTING.md, \"Add a patch family\")"
  fi
  rebase_snapshots "${tag}" "${family}"
  why=$(rebase_mechanism "${tag}" "${family}")
  if [[ -n ${why} ]]; then
    printf 'rebase %s: the P2P mechanism family %s relies on moved between %s and %s:\n%s\n' \
      "${tag}" "${family}" "${RB_BASE}" "${tag}" "  ${why//$'\n'/$'\n'  }"
    rebase_person "${tag}" "the P2P mechanism of family ${family} moved in ${tag} ($(head -n 1 <<<"${why}")); a person must check the patches' assumptions"
  fi
  rebase_classify "${tag}"
  rebase_table "${tag}" "${family}"
  case $(rebase_verdict) in
  person) rebase_conflicts "${tag}" "${family}" ;;
  fits) rebase_fits "${tag}" "${family}" ;;
  new) rebase_new_family "${tag}" "${family}" ;;
  esac
}

# rebase_fits TAG FAMILY: the tag joins FAMILY.
rebase_fits() {
  local tag=$1 family=$2
  printf 'rebase %s: fits family %s: every patch applies at fuzz 0%s\n' "${tag}" "${family}" \
    "$(grep -q 'offset' "${RB_DIR}/classify.log" 2>/dev/null && printf ' (with line offsets)')"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would compile the changed units and add %s to versions.conf (family %s)\n' "${tag}" "${family}"
    rebase_outcome fits "${family}" "$(rebase_changes_summary)"
    return 0
  fi
  unset 'V_FAMILY_DIR[${tag}]'
  V_FAMILY["${tag}"]=${family}
  rebase_adopt "${tag}" "${family}" "apply,compile" fits
}

# rebase_new_family TAG FAMILY: write the new family, prove what it drops,
# build the tag with it and add both.
rebase_new_family() {
  local tag=$1 family=$2
  RB_NEW_FAMILY=$(new_family_name "${tag}")
  printf 'rebase %s: family %s needs changes for %s (%s): new family %s\n' "${tag}" "${family}" "${tag}" \
    "$(rebase_changes_summary)" "${RB_NEW_FAMILY}"
  rebase_write_family "${tag}" "${family}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    rebase_prove_plan "${tag}"
    printf 'would write patches/%s, build %s with it and add it to versions.conf\n' "${RB_NEW_FAMILY}" "${tag}"
    rebase_outcome new-family "${RB_NEW_FAMILY}" "$(rebase_changes_summary)"
    return 0
  fi
  rebase_cache_source "${tag}"
  rebase_prove "${tag}"
  rebase_adopt "${tag}" "${RB_NEW_FAMILY}" "apply,compile" new-family
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

# rebase_base TAG FAMILY: FAMILY's listed tag nearest to TAG whose commit the
# source holds (the three-way merge's base), or nothing.
rebase_base() {
  local tag=$1 family=$2 t best=""
  for t in "${V_TAGS[@]}"; do
    [[ ${t} != "${tag}" && ${V_FAMILY[${t}]} == "${family}" ]] || continue
    git -c safe.directory='*' --git-dir="${RB_GITDIR}" cat-file -e "${V_COMMIT[${t}]}^{commit}" 2>/dev/null || continue
    if [[ -z ${best} ]] || tag_nearer "${tag}" "${t}" "${best}"; then
      best=${t}
    fi
  done
  printf '%s\n' "${best}"
}

# tag_nearer TAG A B: A is nearer to TAG than B (below TAG before above it,
# then the closer one), as nearest_tag chooses.
tag_nearer() {
  local tag=$1 a=$2 b=$3
  if version_le "${a}" "${tag}"; then
    version_le "${b}" "${tag}" || return 0
    version_le "${b}" "${a}"
  else
    version_le "${b}" "${tag}" && return 1
    version_le "${a}" "${b}"
  fi
}

# rebase_workspace TAG: RB_DIR, empty. Kept after a conflict (the work tree
# for the manual port), removed otherwise; a temporary one under --dry-run.
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
  on_exit rebase_workspace_cleanup
}

# rebase_workspace_cleanup RC: a rebase that failed before the tag's source
# was in (no such tag, unreachable source) leaves no workspace behind.
rebase_workspace_cleanup() {
  [[ $1 -ne 0 && -n ${RB_DIR} && ! -e ${RB_DIR}/src ]] || return 0
  rm -rf -- "${RB_DIR}"
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
  versions_add "${tag}" "${commit}" "${tree}" "${core}" "${P2P_RUN_SHA256:-unknown}" \
    "${RUN_URL_BASE}/${tag}/NVIDIA-Linux-x86_64-${tag}.run" "-"
  stage verify "${tag}: commit ${commit}, tree ${tree}"
  source_from_git "${tag}" "${RB_GITDIR}" "${RB_DIR}"
  verify_tree "${tag}" "${RB_DIR}/tree"
  mv -- "${RB_DIR}/tree" "${RB_DIR}/src"
}

# rebase_gitdir TAG: RB_GITDIR, a git directory holding refs/tags/TAG (and,
# when the source has it, the commit of the three-way base).
rebase_gitdir() {
  local tag=$1 src=${P2P_SOURCE}
  if [[ -n ${src} ]] && is_git_repo "${src}"; then
    RB_GITDIR=$(git -c safe.directory='*' -C "${src}" rev-parse --absolute-git-dir 2>/dev/null) ||
      die "${EX_FETCH}" "${src}: not a usable git repository"
    git -c safe.directory='*' --git-dir="${RB_GITDIR}" rev-parse -q --verify "refs/tags/${tag}" >/dev/null ||
      die "${EX_FETCH}" "${src} has no tag ${tag}$(newest_tag_hint "${RB_GITDIR}" "${tag}")"
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
  rebase_fetch "${tag}" "$(upstream_git)"
}

# rebase_fetch TAG FROM: fetch the tag, and the listed tag nearest to it of
# the same family (the three-way base; quietly skipped when FROM lacks it),
# from https or a local bundle/repository into <cache-dir>/upstream.git, or a
# temporary repository under --dry-run.
rebase_fetch() {
  local tag=$1 from=$2 base
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
      die "${EX_FETCH}" "tag ${tag} does not exist in ${from}$(newest_remote_tag_hint "${from}" "${tag}")"
    fi
    die "${EX_FETCH}" "cannot reach ${from} (offline? pass --source with a git repository or bundle holding the tag)"
  fi
  base=$(family_nearest_listed "${tag}" "$(rebase_family "${tag}")")
  [[ -n ${base} ]] || return 0
  git --git-dir="${RB_GITDIR}" cat-file -e "${V_COMMIT[${base}]}^{commit}" 2>/dev/null && return 0
  git --git-dir="${RB_GITDIR}" fetch -q --no-tags --depth=1 -- "${from}" \
    "+refs/tags/${base}:refs/tags/${base}" 2>>"${P2P_LOG_FILE:-/dev/null}" ||
    git --git-dir="${RB_GITDIR}" fetch -q --no-tags --depth=1 -- "${from}" \
      "${V_COMMIT[${base}]}" 2>>"${P2P_LOG_FILE:-/dev/null}" ||
    warn "could not fetch ${base} (commit ${V_COMMIT[${base}]}), the three-way base, from ${from}"
}

# family_nearest_listed TAG FAMILY: FAMILY's listed tag nearest to TAG.
family_nearest_listed() {
  local tag=$1 family=$2 t best=""
  for t in "${V_TAGS[@]}"; do
    [[ ${t} != "${tag}" && ${V_FAMILY[${t}]} == "${family}" ]] || continue
    if [[ -z ${best} ]] || tag_nearer "${tag}" "${t}" "${best}"; then best=${t}; fi
  done
  printf '%s\n' "${best}"
}

# newest_tag_hint GITDIR TAG, newest_remote_tag_hint URL TAG: after "has no
# tag TAG": the newest tag there, and "not released yet?" only where TAG is
# newer than that.
newest_tag_hint() {
  tag_absent_hint "$2" "$(git -c safe.directory='*' --git-dir="$1" tag -l '[0-9]*' | sort -V | tail -n 1)"
}

newest_remote_tag_hint() {
  tag_absent_hint "$2" "$(git ls-remote --tags --refs -- "$1" 2>/dev/null |
    sed -n -E 's|.*refs/tags/([0-9][0-9.]*)$|\1|p' | sort -V | tail -n 1)"
}

# tag_absent_hint TAG NEWEST: " (newest there: NEWEST; not released yet?)"
# for a TAG above NEWEST, " (newest there: NEWEST; no such release)" below.
tag_absent_hint() {
  local tag=$1 newest=$2
  [[ -n ${newest} ]] || return 0
  if version_le "${newest}" "${tag}"; then
    printf ' (newest there: %s; not released yet?)' "${newest}"
  else
    printf ' (newest there: %s; no release %s among the older ones)' "${newest}" "${tag}"
  fi
}

# rebase_stage_family TAG FAMILY: RB_DIR/family, a copy of FAMILY that the
# merges change; the tag is pointed at it (V_FAMILY_DIR), and RB_DIR/series
# is the tag's series.
rebase_stage_family() {
  local tag=$1 family=$2 series
  rm -rf -- "${RB_DIR}/family"
  cp -a -- "${P2P_DATA_DIR}/patches/${family}" "${RB_DIR}/family"
  V_FAMILY["${tag}"]=${family}
  V_FAMILY_DIR["${tag}"]="${RB_DIR}/family"
  series=$(tag_series "${tag}" "${RB_DIR}/src") || exit "$?"
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

# patch_body FILE: a patch without its header (from the first "--- " line).
patch_body() {
  sed -n '/^--- /,$p' "$1"
}

# rebase_cache_source TAG: the tag's verified source into the cache (the proof
# builds and the adoption use it from there).
rebase_cache_source() {
  local tag=$1 dest
  dest=$(cache_src_dir "${tag}")
  [[ -d ${RB_DIR}/src ]] || return 0
  rm -rf -- "${dest}"
  mkdir -p "$(dirname "${dest}")"
  mv -- "${RB_DIR}/src" "${dest}"
  printf '%s origin=%s verified=%s\n' "$(tag_info "${tag}")" "${P2P_SOURCE:-${RB_GITDIR}}" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"${dest}.pin"
}

# rebase_adopt TAG FAMILY TESTED KIND: the series applied and compiled (built
# with a new family), then the new family and the tag's line renamed into place.
rebase_adopt() {
  local tag=$1 family=$2 tested=$3 kind=$4
  rebase_cache_source "${tag}"
  patch_tree "${tag}" "$(default_patched_dir "${tag}")"
  compile_units "${tag}" >&2
  if [[ -n ${V_FAMILY_DIR[${tag}]:-} && ${P2P_UNITS_ONLY} -eq 0 ]]; then
    resolve_kernel
    build_modules "${tag}"
    tested+=",build:$(kernel_series "${P2P_KREL}")"
  fi
  V_TESTED["${tag}"]=$(rebase_tested "${tested}")
  rebase_commit "${tag}" "${family}"
  rebase_outcome "${kind}" "${family}" "$(rebase_changes_summary)"
  rm -rf -- "${RB_DIR}"
  stage finished "${tag} added to versions.conf (family ${family}, tested ${V_TESTED[${tag}]}); next: build.sh ${tag}"
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
  regenerate_tables
}

rebase_undo() {
  [[ ${RB_COMMITTED} -eq 1 || -z ${RB_NEW_FAMILY} ]] && return 0
  rm -rf -- "${P2P_DATA_DIR:?}/patches/${RB_NEW_FAMILY}"
  printf '%s: interrupted: patches/%s removed again; versions.conf is unchanged\n' "${P2P_PROG}" "${RB_NEW_FAMILY}" >&2
}

# versions_relined TAG...: versions.conf from stdin with the TAGs' lines
# written again from V_*, the rest (comments, other tags) as it was.
versions_relined() {
  local line tag
  local -A only=()
  for tag in "$@"; do only[${tag}]=1; done
  while IFS= read -r line || [[ -n ${line} ]]; do
    tag=${line%%[[:space:]]*}
    if [[ -n ${tag} && -n ${only[${tag}]+x} && -n ${V_FAMILY[${tag}]+x} ]]; then
      versions_line "${tag}"
    else
      printf '%s\n' "${line}"
    fi
  done
}

# regenerate_workflow: the hosted CI workflow is generated from versions.conf.
regenerate_workflow() {
  local gen="${P2P_DATA_DIR}/ci/workflows/gen-workflow.sh"
  [[ -x ${gen} ]] || return 0
  "${gen}" || warn "could not regenerate the hosted workflow; run ci/workflows/gen-workflow.sh"
}

# regenerate_tables: README's families table and the verification record's
# table are generated from versions.conf too (a new family is a new row).
regenerate_tables() {
  local gen="${P2P_DATA_DIR}/ci/workflows/readme-table.sh"
  [[ -x ${gen} ]] || return 0
  NVP2P_DOCS_DIR="${P2P_DATA_DIR}" "${gen}" --update >/dev/null ||
    warn "could not regenerate the tables made from versions.conf; run ci/workflows/readme-table.sh --update"
}

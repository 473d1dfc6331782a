# shellcheck shell=bash
# lib/40-patch.sh: stage 4, patch. Applies the tag's family of the series to a
# copy of the verified source with quilt, at fuzz 0.
#
# `series` (top level) lists every patch name in apply order. A family
# (patches/<family>/, chosen per tag in versions.conf) provides its own variant
# of each patch under the same name, or names it in its dropped.conf with the
# reason (upstream already does it; the family's kernels do not need it), so
# no patch is ever missing by accident. Every file in a family must be named
# in `series`.
#
# A compat-* patch that backports an upstream fix may say where upstream has
# it, in its DEP-3 header:
#   X-Applied-Upstream-If: <file> <string>
# It is then left out for a tag whose pristine source has <string> in <file>
# (release order is not version order: a fix can be in 580.94.16 and not in
# 580.95.05), or has no <file> at all: the code the patch fixes is not there
# (535.54.03 has no libspdm_shash.c for compat-0008 to fix). A compat patch
# whose code exists only in some tags of its family says so with
#   X-Applies-If: <file> <string>
# and is left out for a tag whose pristine source lacks <string> in <file>
# (compat-0011 of 580-590 needs the CDMM pagemap, which 580.65.06 .. 580.82.09
# do not have). p2p-* patches are never left out either way.

readonly PATCH_NAME_RE='^(compat|p2p)-[0-9]{4}-[a-z0-9][a-z0-9.-]*\.patch$'
readonly PATCHED_STAMP=".nvidia-p2p-patched"
readonly DROPPED_FILE="dropped.conf"

help_patch() {
  cat <<'EOF'
Usage: build.sh patch <tag> [--source PATH] [--out DIR]

Apply the patch series to a copy of the verified source of <tag>, with quilt
at fuzz 0. The source comes from the cache (see: build.sh fetch), or from
--source PATH, which is fetched and verified first.

  --out DIR   where to put the patched tree (default: <work-dir>/<tag>/patched)
              DIR must not exist, unless it is a tree this command patched
              (then it is reused when the series is unchanged, else redone).

On failure the rejected hunks are shown and no output directory is left.
Running it again with the same series is a no-op. Prints the patched tree's
directory on stdout.
EOF
}

cmd_patch() {
  local tag=""
  parse_stage_args patch tag "$@"
  require_tag "${tag}"
  cache_lock
  fetch_source "${tag}"
  patch_tree "${tag}" "${P2P_OUT:-$(default_patched_dir "${tag}")}"
  printf '%s\n' "${P2P_PATCHED_DIR}"
}

default_patched_dir() { printf '%s/%s/patched\n' "${P2P_WORK_DIR}" "$1"; }

# Set by rebase only: the patch directory of a family on trial, per tag.
declare -gA V_FAMILY_DIR=()

# family_dir TAG: the tag's patch directory (rebase points a tag at a family
# on trial through V_FAMILY_DIR).
family_dir() {
  if [[ -n ${V_FAMILY_DIR[$1]:-} ]]; then
    printf '%s\n' "${V_FAMILY_DIR[$1]}"
  else
    printf '%s/patches/%s\n' "${P2P_DATA_DIR}" "${V_FAMILY[$1]}"
  fi
}

# family_patches TAG: the family's patches in series order, after checking the
# rules above (EX_DATA when one is broken).
family_patches() {
  local tag=$1 dir master name file drops
  local -A listed=() dropped=()
  dir=$(family_dir "${tag}")
  master="${P2P_DATA_DIR}/series"
  [[ -r ${master} ]] || die "${EX_DATA}" "cannot read ${master}"
  [[ -d ${dir} ]] || die "${EX_DATA}" "no patch directory ${dir} for family ${V_FAMILY[${tag}]} (tag ${tag})"
  drops=$(family_dropped "${dir}") || exit "$?"
  while IFS=$'\t' read -r name _; do
    [[ -n ${name} ]] && dropped[${name}]=1
  done <<<"${drops}"
  while IFS= read -r name || [[ -n ${name} ]]; do
    name=${name%%#*}
    name=${name//[[:space:]]/}
    [[ -z ${name} ]] && continue
    [[ ${name} =~ ${PATCH_NAME_RE} ]] || die "${EX_DATA}" "${master}: bad patch name '${name}'"
    [[ -z ${listed[${name}]+x} ]] || die "${EX_DATA}" "${master}: '${name}' listed twice"
    listed[${name}]=1
    if [[ -f ${dir}/${name} ]]; then
      [[ -z ${dropped[${name}]+x} ]] ||
        die "${EX_DATA}" "family ${V_FAMILY[${tag}]} has ${name} and also names it in ${DROPPED_FILE}"
      applied_upstream_check "${dir}/${name}" >/dev/null
      applies_if_check "${dir}/${name}" >/dev/null
      printf '%s\n' "${name}"
    elif [[ -z ${dropped[${name}]+x} ]]; then
      die "${EX_DATA}" "family ${V_FAMILY[${tag}]} lacks ${name} and does not say why in ${dir}/${DROPPED_FILE}"
    fi
  done <"${master}"
  for name in "${!dropped[@]}"; do
    [[ -n ${listed[${name}]+x} ]] || die "${EX_DATA}" "${dir}/${DROPPED_FILE}: '${name}' is not named in ${master}"
  done
  for file in "${dir}"/*.patch; do
    [[ -e ${file} ]] || continue
    [[ -n ${listed[${file##*/}]+x} ]] || die "${EX_DATA}" "${file} is not named in ${master}"
  done
}

# family_dropped DIR: "<patch>\t<reason>" for each patch the family leaves
# out on purpose (DIR/dropped.conf: a patch name and the reason, per line).
family_dropped() {
  local file="$1/${DROPPED_FILE}" name reason lineno=0
  [[ -e ${file} ]] || return 0
  while read -r name reason || [[ -n ${name} ]]; do
    lineno=$((lineno + 1))
    [[ -z ${name} || ${name} == \#* ]] && continue
    [[ ${name} =~ ${PATCH_NAME_RE} ]] || die "${EX_DATA}" "${file}:${lineno}: bad patch name '${name}'"
    [[ -n ${reason} ]] || die "${EX_DATA}" "${file}:${lineno}: ${name} is dropped without a reason"
    printf '%s\t%s\n' "${name}" "${reason}"
  done <"${file}"
}

# applied_upstream_check PATCHFILE: "<file> <string>" from the patch's
# X-Applied-Upstream-If header field, or nothing.
applied_upstream_check() {
  header_check "$1" X-Applied-Upstream-If
}

# applies_if_check PATCHFILE: "<file> <string>" from the patch's X-Applies-If
# header field, or nothing.
applies_if_check() {
  header_check "$1" X-Applies-If
}

# header_check PATCHFILE FIELD: "<file> <string>" from FIELD of the patch's
# DEP-3 header (compat patches only), or nothing.
header_check() {
  local patch=$1 field=$2 line
  line=$(sed -n -E "/^--- /q; s/^${field}:[[:space:]]*//p" "${patch}" | head -n 1)
  [[ -n ${line} ]] || return 0
  [[ ${patch##*/} == compat-* ]] ||
    die "${EX_DATA}" "${patch}: ${field} is for compat patches only; a p2p patch is never left out silently"
  [[ ${line} =~ ^[A-Za-z0-9._/+-]+[[:space:]]+[^[:space:]]+$ ]] ||
    die "${EX_DATA}" "${patch}: ${field} needs '<file> <string>', found '${line}'"
  printf '%s\n' "${line}"
}

# lacks_code SRC PATCHFILE: true when the patch's X-Applies-If names code SRC
# does not have (the file, or the string in it).
lacks_code() {
  local src=$1 check file string
  check=$(applies_if_check "$2") || exit "$?"
  [[ -n ${check} ]] || return 1
  read -r file string <<<"${check}"
  [[ -e ${src}/${file} ]] || return 0
  ! grep -q -F -- "${string}" "${src}/${file}"
}

# upstream_has SRC PATCHFILE: true when SRC already carries the fix PATCHFILE
# backports (its X-Applied-Upstream-If check matches), or lacks the file the
# check names (nothing there to fix).
upstream_has() {
  local src=$1 check file string
  check=$(applied_upstream_check "$2") || exit "$?"
  [[ -n ${check} ]] || return 1
  read -r file string <<<"${check}"
  [[ -e ${src}/${file} ]] || return 0
  grep -q -F -- "${string}" "${src}/${file}"
}

# tag_series TAG [SRC]: the patches to apply to TAG: its family's, less the
# compat patches SRC (default: the cached source) already carries.
tag_series() {
  local tag=$1 src=${2:-$(cache_src_dir "$1")} dir names name
  dir=$(family_dir "${tag}")
  names=$(family_patches "${tag}") || exit "$?"
  while IFS= read -r name; do
    [[ -n ${name} ]] || continue
    upstream_has "${src}" "${dir}/${name}" || lacks_code "${src}" "${dir}/${name}" || printf '%s\n' "${name}"
  done <<<"${names}"
}

# tag_series_unfetched TAG: the plan's patch list while TAG's source is not
# fetched: every patch of the family; a compat patch whose use depends on the
# source (X-Applied-Upstream-If, X-Applies-If) is marked as decided once the
# source is there.
tag_series_unfetched() {
  local tag=$1 dir names name check
  dir=$(family_dir "${tag}")
  names=$(family_patches "${tag}") || exit "$?"
  while IFS= read -r name; do
    [[ -n ${name} ]] || continue
    check=$(applied_upstream_check "${dir}/${name}")$(applies_if_check "${dir}/${name}") || exit "$?"
    if [[ -n ${check} ]]; then
      printf '%s  (decided once the source is fetched: left out where upstream has the fix)\n' "${name}"
    else
      printf '%s\n' "${name}"
    fi
  done <<<"${names}"
}

# family_files TAG: the files the family's patches and checks read.
family_files() {
  local dir name
  dir=$(family_dir "$1")
  {
    sed -n -E 's|^\+\+\+ b/||p' "${dir}"/*.patch 2>/dev/null
    sed -n -E 's/^X-(Applied-Upstream|Applies)-If:[[:space:]]*([^[:space:]]+).*/\2/p' "${dir}"/*.patch 2>/dev/null
    sed -n -E 's/^#[[:space:]]*requires:[[:space:]]*([^[:space:]]+).*/\1/p' "${dir}/modprobe.conf"
  } | sort -u | while IFS= read -r name; do
    [[ -n ${name} ]] && printf '%s\n' "${name}"
  done
}

# family_requires_unmet TAG SRC: what SRC lacks of the definitions the
# family's modprobe.conf relies on, one per line ("" when all are there). A
# "# requires: <file> <NAME> <VALUE>" comment there says that the registry
# keys only select BAR1 P2P where <file> has "#define <NAME> <VALUE>": a
# renumbered key would otherwise silently give no P2P.
family_requires_unmet() {
  local tag=$1 src=$2 conf file name value
  conf="$(family_dir "${tag}")/modprobe.conf"
  [[ -r ${conf} ]] || die "${EX_DATA}" "missing ${conf}"
  while read -r file name value; do
    [[ -n ${value} && ${file} =~ ^[A-Za-z0-9._/-]+$ && ${name} =~ ^[A-Za-z0-9_]+$ ]] ||
      die "${EX_DATA}" "${conf}: '# requires:' needs <file> <NAME> <VALUE>"
    grep -q -E "^#[[:space:]]*define[[:space:]]+${name}[[:space:]]+\(?${value//./\\.}\)?([[:space:]]|$)" \
      "${src}/${file}" 2>/dev/null ||
      printf '%s has no "#define %s %s" (the registry numbering modprobe.conf relies on)\n' "${file}" "${name}" "${value}"
  done < <(sed -n -E 's/^#[[:space:]]*requires:[[:space:]]*//p' "${conf}")
}

# series_fingerprint TAG: sha256 over the patches applied to the tag (names and
# contents), so a patched tree or a build can tell whether it is current.
series_fingerprint() {
  local tag=$1 dir names name
  dir=$(family_dir "${tag}")
  names=$(tag_series "${tag}") || exit "$?"
  {
    printf 'tag=%s family=%s core=%s\n' "${tag}" "${V_FAMILY[${tag}]}" "${V_CORE[${tag}]}"
    while IFS= read -r name; do
      [[ -n ${name} ]] && printf '%s %s\n' "${name}" "$(sha256_of "${dir}/${name}")"
    done <<<"${names}"
  } | sha256sum | cut -d' ' -f1
}

# quilt_run DIR PATCHDIR SERIESFILE ARGS...: quilt in DIR with explicit
# settings only (no quiltrc, patches from PATCHDIR, the given series file).
# quilt records the patches directory of the first push in .pc/.quilt_patches
# and prefers it to QUILT_PATCHES: a tree patched from another checkout (CI's
# clone, since removed) would look for its patches there, and "pop" would
# fail with "does not remove cleanly". The record is removed first.
quilt_run() {
  local dir=$1 patches=$2 series=$3
  shift 3
  rm -f -- "${dir}/.pc/.quilt_patches"
  (cd "${dir}" && env LC_ALL=C QUILT_PATCHES="${patches}" QUILT_SERIES="${series}" \
    QUILT_PC=.pc quilt --quiltrc - "$@")
}

# quilt_in DIR TAG SERIESFILE ARGS...: quilt_run with the tag's family.
quilt_in() {
  quilt_run "$1" "$(family_dir "$2")" "$3" "${@:4}"
}

# patch_tree TAG OUT: sets P2P_PATCHED_DIR to a tree with the series applied.
P2P_PATCHED_DIR=""
patch_tree() {
  local tag=$1 out=$2 fingerprint series tmp rc=0
  need_cmd quilt quilt
  series=$(tag_series "${tag}") || exit "$?"
  fingerprint=$(series_fingerprint "${tag}") || exit "$?"
  local unmet
  unmet=$(family_requires_unmet "${tag}" "$(cache_src_dir "${tag}")") || exit "$?"
  [[ -z ${unmet} || ${P2P_DRY_RUN} -eq 1 ]] ||
    die "${EX_PATCH}" "family ${V_FAMILY[${tag}]} does not fit ${tag}: ${unmet//$'\n'/; }"
  P2P_PATCHED_DIR=${out}
  if [[ -e ${out} ]]; then
    if [[ -f ${out}/${PATCHED_STAMP} && "$(cat "${out}/${PATCHED_STAMP}")" == "${fingerprint}" ]]; then
      stage patch "${out} is already patched with this series"
      return 0
    fi
    [[ -f ${out}/${PATCHED_STAMP} ]] ||
      die "${EX_USAGE}" "--out ${out} exists and is not a tree patched by build.sh; choose a new directory"
  fi
  if [[ ${P2P_DRY_RUN} -eq 1 && ! -d $(cache_src_dir "${tag}") ]]; then
    # not fetched yet: which compat patches upstream already has is not known
    series=$(tag_series_unfetched "${tag}") || exit "$?"
    stage patch "${tag}: family ${V_FAMILY[${tag}]}, up to $(grep -c . <<<"${series}") patches, fuzz 0"
    printf 'would apply to a copy of %s (not fetched yet), into %s:\n' "$(cache_src_dir "${tag}")" "${out}"
    printf '  %s\n' "${series//$'\n'/$'\n'  }"
    return 0
  fi
  stage patch "${tag}: family ${V_FAMILY[${tag}]}, $(grep -c . <<<"${series}") patches, fuzz 0"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would apply to a copy of %s, into %s:\n' "$(cache_src_dir "${tag}")" "${out}"
    printf '  %s\n' "${series//$'\n'/$'\n'  }"
    return 0
  fi
  mkdir -p "$(dirname "${out}")"
  mk_temp_dir "$(dirname "${out}")"
  tmp=${P2P_TMP}
  printf '%s\n' "${series}" | grep . >"${tmp}/series" || true
  cp -a -- "$(cache_src_dir "${tag}")" "${tmp}/tree"
  quilt_in "${tmp}/tree" "${tag}" "${tmp}/series" push -a --fuzz=0 -q >>"${tmp}/quilt.log" 2>&1 || rc=$?
  if [[ ${rc} -eq 2 && ! -s ${tmp}/series ]]; then
    rc=0 # quilt's "nothing to do": an empty series
  fi
  if [[ ${rc} -ne 0 ]]; then
    patch_failure "${tag}" "${tmp}"
  fi
  # quilt records the series file's path in .pc/.quilt_series and prefers it
  # to QUILT_SERIES; keep the series inside .pc, by a relative name, so quilt
  # keeps working in this tree and in copies of it (build trees, bisect). The
  # patches directory's record (this checkout's path) goes: see quilt_run.
  if [[ -d ${tmp}/tree/.pc ]]; then
    cp -- "${tmp}/series" "${tmp}/tree/.pc/nvidia-p2p.series"
    printf 'nvidia-p2p.series\n' >"${tmp}/tree/.pc/.quilt_series"
    rm -f -- "${tmp}/tree/.pc/.quilt_patches"
  fi
  printf '%s' "${fingerprint}" >"${tmp}/tree/${PATCHED_STAMP}"
  rm -rf -- "${out}"
  mv -- "${tmp}/tree" "${out}"
  verbose "patched tree: ${out}"
}

# patch_failure TAG TMP: show quilt's output and the rejected hunks, then die;
# the temp tree is removed at exit, so no output is left behind.
patch_failure() {
  local tag=$1 tmp=$2 failed rej
  failed=$(quilt_in "${tmp}/tree" "${tag}" "${tmp}/series" next 2>/dev/null || true)
  sed 's/^/  quilt: /' "${tmp}/quilt.log" >&2
  quilt_in "${tmp}/tree" "${tag}" "${tmp}/series" push -f --fuzz=0 -q >/dev/null 2>&1 || true
  while IFS= read -r rej; do
    printf '%s: rejected hunks in %s:\n' "${P2P_PROG}" "${rej#"${tmp}/tree/"}" >&2
    sed 's/^/  /' "${rej}" >&2
  done < <(find "${tmp}/tree" -name '*.rej' -type f | sort)
  die "${EX_PATCH}" "${failed:-a patch} does not apply at fuzz 0 to ${tag} (family ${V_FAMILY[${tag}]}); nothing was written"
}

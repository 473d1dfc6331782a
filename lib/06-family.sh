# shellcheck shell=bash
# lib/06-family.sh: a tag's family and what it says: its patch directory, its
# series (the master list less dropped.conf, less what the tag's source
# already has), and the settings of its modprobe.conf (NVLink mode, ...).

# Set by rebase only: the patch directory of a family on trial, per tag.
declare -gA V_FAMILY_DIR=()

readonly PATCH_NAME_RE='^(compat|p2p)-[0-9]{4}-[a-z0-9][a-z0-9.-]*\.patch$'

readonly DROPPED_FILE="dropped.conf"

default_patched_dir() { printf '%s/%s/patched\n' "${P2P_WORK_DIR}" "$1"; }

# family_dir TAG: the tag's patch directory (rebase points a tag at a family
# on trial through V_FAMILY_DIR).
family_dir() {
  if [[ -n ${V_FAMILY_DIR[$1]:-} ]]; then
    printf '%s\n' "${V_FAMILY_DIR[$1]}"
  else
    printf '%s/patches/%s\n' "${P2P_DATA_DIR}" "${V_FAMILY[$1]}"
  fi
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

# family_requires_unmet TAG SRC: what SRC lacks of the definitions the
# family's modprobe.conf relies on, one per line ("" when all are there). A
# "# requires: <file> <NAME> <VALUE>" comment there says that the registry
# keys only select BAR1 P2P where <file> has "#define <NAME> <VALUE>": a
# renumbered key would otherwise silently give no P2P.
family_requires_unmet() {
  local tag=$1 src=$2 conf text file name value
  conf="$(family_dir "${tag}")/modprobe.conf"
  text=$(family_conf "${tag}") || exit "$?"
  while read -r file name value; do
    [[ -n ${value} && ${file} =~ ^[A-Za-z0-9._/-]+$ && ${name} =~ ^[A-Za-z0-9_]+$ ]] ||
      die "${EX_DATA}" "${conf}: '# requires:' needs <file> <NAME> <VALUE>"
    grep -q -E "^#[[:space:]]*define[[:space:]]+${name}[[:space:]]+\(?${value//./\\.}\)?([[:space:]]|$)" \
      "${src}/${file}" 2>/dev/null ||
      printf '%s has no "#define %s %s" (the registry numbering modprobe.conf relies on)\n' "${file}" "${name}" "${value}"
  done < <(sed -n -E 's/^#[[:space:]]*requires:[[:space:]]*//p' <<<"${text}")
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

# family_setting TAG NAME: the "KEY=VALUE" of the "# NAME:" line of TAG's
# family's modprobe.conf, or nothing; anything else there is a data error.
family_setting() {
  local text v
  text=$(family_conf "$1") || exit "$?"
  v=$(sed -n -E "s/^#[[:space:]]*$2:[[:space:]]*//p" <<<"${text}" | head -n 1)
  [[ -z ${v} || ${v} =~ ^[A-Za-z0-9_]+=(0x)?[0-9A-Fa-f]+$ ]] || die "${EX_DATA}" "$(family_dir "$1")/modprobe.conf: '# $2:' needs KEY=VALUE, not '${v}'"
  printf '%s' "${v}"
}

# The text of each family's modprobe.conf read so far (family_load), by path.
declare -gA FAMILY_CONF=()
# The NVLink mode of each tag loaded (family_load), by tag.
declare -gA NVLINK_MODE=()

# family_conf TAG: the text of TAG's family's modprobe.conf (its options and
# settings); read once per run where family_load read it in the main shell.
family_conf() {
  local src
  src="$(family_dir "$1")/modprobe.conf"
  if [[ -n ${FAMILY_CONF[${src}]+x} ]]; then
    printf '%s\n' "${FAMILY_CONF[${src}]}"
    return 0
  fi
  [[ -r ${src} ]] || die "${EX_DATA}" "missing ${src}"
  cat -- "${src}"
}

# family_load TAG: reads TAG's family's modprobe.conf and decides its NVLink
# mode (nvlink_mode, which refuses --nvlink keep where the family cannot),
# once, in the calling shell: what the run's stages then use. A command calls
# it before its first stage.
family_load() {
  local src text mode
  src="$(family_dir "$1")/modprobe.conf"
  text=$(family_conf "$1") || exit "$?"
  FAMILY_CONF[${src}]=${text}
  mode=$(nvlink_mode "$1") || exit "$?"
  NVLINK_MODE[$1]=${mode}
}

# nvlink_keep_setting TAG: the registry setting that keeps NVLink for bridged
# pairs in TAG's family ("KEY=VALUE" from the "# nvlink-keep:" line of its
# modprobe.conf), or nothing where the family cannot keep it.
nvlink_keep_setting() {
  family_setting "$1" nvlink-keep
}

# nvlink_mode TAG: keep or off: --nvlink, else keep where the family can
# (nvlink_keep_setting), else off. --nvlink keep in a family that cannot is
# refused (exit 3).
nvlink_mode() {
  local keep
  if [[ -n ${NVLINK_MODE[$1]+x} ]]; then
    printf '%s\n' "${NVLINK_MODE[$1]}"
    return 0
  fi
  keep=$(nvlink_keep_setting "$1") || exit "$?"
  case ${P2P_NVLINK:-} in
  off) echo off ;;
  keep)
    [[ -n ${keep} ]] || die "${EX_UNSUPPORTED}" "--nvlink keep: family ${V_FAMILY[$1]} ($1) cannot keep NVLink for bridged pairs: its options have no '# nvlink-keep:' setting (see docs/how-it-works.md, Mixed boxes); use --nvlink off"
    echo keep
    ;;
  *) if [[ -n ${keep} ]]; then echo keep; else echo off; fi ;;
  esac
}

# nvlink_note TAG MODE: the comment lines saying what MODE does for TAG.
nvlink_note() {
  if [[ $2 == keep ]]; then
    printf '# NVLink: kept (--nvlink keep): GPU pairs joined by an NVLink bridge use\n'
    printf '# NVLink, every other pair BAR1 P2P (%s below; the\n' "$(nvlink_keep_setting "$1")"
    printf '# family'"'"'s comment says what --nvlink off writes instead).\n'
  else
    if [[ -n $(nvlink_keep_setting "$1") ]]; then
      printf '# NVLink: off (--nvlink off): BAR1 P2P for every pair, NVLink bridges\n'
      printf '# unused (--nvlink keep writes %s instead).\n' "$(nvlink_keep_setting "$1")"
    else
      printf '# NVLink: off (the only mode of family %s): BAR1 P2P for every pair,\n' "${V_FAMILY[$1]}"
      printf '# NVLink bridges unused.\n'
    fi
  fi
}

# shellcheck shell=bash
# lib/40-patch.sh: stage 4, patch. Applies the tag's family of the series to a
# copy of the verified source with quilt, at fuzz 0.
#
# `series` (top level) lists every patch name in apply order. A family
# (patches/<family>/, chosen per tag in versions.conf) provides its own variant
# of each patch under the same name. Every p2p-* patch is required in every
# family; a compat-* patch may be absent where the family's source does not
# need it. Every file in a family must be named in `series`.

readonly PATCH_NAME_RE='^(compat|p2p)-[0-9]{4}-[a-z0-9][a-z0-9.-]*\.patch$'
readonly PATCHED_STAMP=".nvidia-p2p-patched"

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

family_dir() { printf '%s/patches/%s\n' "${P2P_DATA_DIR}" "${V_FAMILY[$1]}"; }

# family_series TAG: print the tag's family series (the master series filtered
# to the patches the family provides), after checking the rules above.
family_series() {
  local tag=$1 dir master name file
  local -A listed=()
  dir=$(family_dir "${tag}")
  master="${P2P_DATA_DIR}/series"
  [[ -r ${master} ]] || die "${EX_DATA}" "cannot read ${master}"
  [[ -d ${dir} ]] || die "${EX_DATA}" "no patch directory ${dir} for family ${V_FAMILY[${tag}]} (tag ${tag})"
  while IFS= read -r name || [[ -n ${name} ]]; do
    name=${name%%#*}
    name=${name//[[:space:]]/}
    [[ -z ${name} ]] && continue
    [[ ${name} =~ ${PATCH_NAME_RE} ]] || die "${EX_DATA}" "${master}: bad patch name '${name}'"
    [[ -z ${listed[${name}]+x} ]] || die "${EX_DATA}" "${master}: '${name}' listed twice"
    listed[${name}]=1
    if [[ -f ${dir}/${name} ]]; then
      printf '%s\n' "${name}"
    elif [[ ${name} == p2p-* ]]; then
      die "${EX_DATA}" "family ${V_FAMILY[${tag}]} lacks ${name} (every p2p patch is required)"
    fi
  done <"${master}"
  for file in "${dir}"/*.patch; do
    [[ -e ${file} ]] || continue
    [[ -n ${listed[${file##*/}]+x} ]] || die "${EX_DATA}" "${file} is not named in ${master}"
  done
}

# series_fingerprint TAG: sha256 over the family's patch names and contents, so
# a patched tree or a build can tell whether it is current.
series_fingerprint() {
  local tag=$1 dir names name
  dir=$(family_dir "${tag}")
  names=$(family_series "${tag}") || exit "$?"
  {
    printf 'tag=%s family=%s core=%s\n' "${tag}" "${V_FAMILY[${tag}]}" "${V_CORE[${tag}]}"
    while IFS= read -r name; do
      [[ -n ${name} ]] && printf '%s %s\n' "${name}" "$(sha256_of "${dir}/${name}")"
    done <<<"${names}"
  } | sha256sum | cut -d' ' -f1
}

# quilt_in DIR TAG SERIESFILE ARGS...: quilt with explicit settings only.
quilt_in() {
  local dir=$1 tag=$2 series=$3
  shift 3
  (cd "${dir}" && env LC_ALL=C QUILT_PATCHES="$(family_dir "${tag}")" QUILT_SERIES="${series}" \
    QUILT_PC=.pc quilt --quiltrc - "$@")
}

# patch_tree TAG OUT: sets P2P_PATCHED_DIR to a tree with the series applied.
P2P_PATCHED_DIR=""
patch_tree() {
  local tag=$1 out=$2 fingerprint tmp rc=0
  need_cmd quilt quilt
  fingerprint=$(series_fingerprint "${tag}")
  P2P_PATCHED_DIR=${out}
  if [[ -e ${out} ]]; then
    if [[ -f ${out}/${PATCHED_STAMP} && "$(cat "${out}/${PATCHED_STAMP}")" == "${fingerprint}" ]]; then
      stage patch "${out} is already patched with this series"
      return 0
    fi
    [[ -f ${out}/${PATCHED_STAMP} ]] ||
      die "${EX_USAGE}" "--out ${out} exists and is not a tree patched by build.sh; choose a new directory"
  fi
  stage patch "${tag}: family ${V_FAMILY[${tag}]}, $(family_series "${tag}" | wc -l) patches, fuzz 0"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would apply to a copy of %s, into %s:\n' "$(cache_src_dir "${tag}")" "${out}"
    family_series "${tag}" | sed 's/^/  /'
    return 0
  fi
  mkdir -p "$(dirname "${out}")"
  mk_temp_dir "$(dirname "${out}")"
  tmp=${P2P_TMP}
  family_series "${tag}" >"${tmp}/series"
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
  # keeps working in this tree and in copies of it (build trees, bisect).
  if [[ -d ${tmp}/tree/.pc ]]; then
    cp -- "${tmp}/series" "${tmp}/tree/.pc/nvidia-p2p.series"
    printf 'nvidia-p2p.series\n' >"${tmp}/tree/.pc/.quilt_series"
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

# shellcheck shell=bash
# lib/versions.sh: read versions.conf (data: parsed, never sourced) and validate tags.

declare -gA V_FAMILY=() V_COMMIT=() V_TREE=() V_CORE=() V_RUN_SHA=() V_RUN_URL=() V_TESTED=()
declare -ga V_TAGS=()
V_LOADED=""

readonly TAG_RE='^[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?$'
# A family: the major release(s) it covers (580-590), or for one that rebase
# split off inside a release line, major.minor (595.58).
readonly FAMILY_RE='^[0-9]{3}(\.[0-9]+)*(-[0-9]{3}(\.[0-9]+)*)?$'
readonly OID_RE='^[0-9a-f]{40}$'
readonly SHA256_RE='^[0-9a-f]{64}$'
# tested: what passed for the tag, comma-separated: apply (fuzz 0), compile
# (the translation units the series changes), build:<series> (all modules
# against Debian's kernel <series>, e.g. build:6.12), load:<series> (nvidia.ko
# init ran under QEMU), bisect (every patch prefix builds); '-' for none.
readonly TESTED_TOKEN='(apply|compile|bisect|(build|load):[0-9]+\.[0-9]+)'
readonly TESTED_RE="^(-|${TESTED_TOKEN}(,${TESTED_TOKEN})*)\$"

# tested_sorted: the tested tokens on stdin (one per line) in their fixed
# order: apply, compile, build:<k>..., load:<k>..., bisect.
tested_sorted() {
  awk '{ o = ($1 == "apply") ? 1 : ($1 == "compile") ? 2 : ($1 ~ /^build:/) ? 3 : ($1 ~ /^load:/) ? 4 : 5
         print o "\t" $1 }' | sort -t$'\t' -k1,1n -k2,2V | cut -f2
}

# valid_tag_string STRING: a driver tag looks like 565.57.01 or 570.144 and
# nothing else (no '/', '..', spaces or shell metacharacters get further).
valid_tag_string() {
  [[ $1 =~ ${TAG_RE} ]]
}

versions_file() {
  printf '%s/versions.conf\n' "${P2P_DATA_DIR}"
}

# versions_load: parse versions.conf once; EX_DATA on any malformed line.
versions_load() {
  [[ -n ${V_LOADED} ]] && return 0
  local file lineno=0 line
  file=$(versions_file)
  [[ -r ${file} ]] || die "${EX_DATA}" "cannot read ${file}"
  while IFS= read -r line || [[ -n ${line} ]]; do
    lineno=$((lineno + 1))
    line=${line%%#*}
    [[ ${line} =~ ^[[:space:]]*$ ]] && continue
    versions_parse_line "${file##*/}:${lineno}" "${line}"
  done <"${file}"
  [[ ${#V_TAGS[@]} -gt 0 ]] || die "${EX_DATA}" "${file}: no tags"
  V_LOADED=1
}

versions_parse_line() {
  local where=$1 line=$2
  local -a f
  read -r -a f <<<"${line}"
  [[ ${#f[@]} -eq 8 ]] || die "${EX_DATA}" "${where}: expected 8 columns (tag family commit tree core run_sha256 run_url tested), found ${#f[@]}"
  local tag=${f[0]} family=${f[1]} commit=${f[2]} tree=${f[3]} core=${f[4]} sha=${f[5]} url=${f[6]} tested=${f[7]}
  valid_tag_string "${tag}" || die "${EX_DATA}" "${where}: bad tag '${tag}'"
  [[ ${family} =~ ${FAMILY_RE} ]] || die "${EX_DATA}" "${where}: bad family '${family}'"
  [[ ${commit} =~ ${OID_RE} ]] || die "${EX_DATA}" "${where}: bad commit id '${commit}'"
  [[ ${tree} =~ ${OID_RE} ]] || die "${EX_DATA}" "${where}: bad tree id '${tree}'"
  [[ ${core} =~ ${OID_RE} ]] || die "${EX_DATA}" "${where}: bad core tree id '${core}'"
  [[ ${sha} =~ ${SHA256_RE} || ${sha} == unknown ]] || die "${EX_DATA}" "${where}: bad .run sha256 '${sha}' (64 hex digits or 'unknown')"
  [[ ${url} =~ ^https://[A-Za-z0-9./_+-]+$ ]] || die "${EX_DATA}" "${where}: bad .run URL '${url}' (https only)"
  [[ ${tested} =~ ${TESTED_RE} ]] || die "${EX_DATA}" "${where}: bad tested column '${tested}'"
  [[ -z ${V_FAMILY[${tag}]+x} ]] ||
    die "${EX_DATA}" "${where}: tag ${tag} listed twice (families ${V_FAMILY[${tag}]} and ${family}); one tag, one family"
  versions_add "${tag}" "${commit}" "${tree}" "${core}" "${sha}" "${url}" "${tested}"
  V_FAMILY[${tag}]=${family}
}

# versions_add TAG COMMIT TREE CORE RUN_SHA256 RUN_URL TESTED: TAG's entry,
# but its family (a line of versions.conf gives that too; rebase chooses it
# later).
versions_add() {
  V_TAGS+=("$1")
  V_COMMIT[$1]=$2
  V_TREE[$1]=$3
  V_CORE[$1]=$4
  V_RUN_SHA[$1]=$5
  V_RUN_URL[$1]=$6
  V_TESTED[$1]=$7
}

# tag_info TAG: the tag's pins on one line (for .pin files and logs).
tag_info() {
  local t=$1
  printf 'tag=%s family=%s commit=%s tree=%s core=%s run_sha256=%s run_url=%s tested=%s\n' \
    "${t}" "${V_FAMILY[${t}]}" "${V_COMMIT[${t}]}" "${V_TREE[${t}]}" "${V_CORE[${t}]}" \
    "${V_RUN_SHA[${t}]}" "${V_RUN_URL[${t}]}" "${V_TESTED[${t}]}"
}

# require_tag TAG: validate the string, then that versions.conf supports it.
require_tag() {
  local tag=$1
  [[ -n ${tag} ]] || die "${EX_USAGE}" "a driver tag is required (see: build.sh list)"
  valid_tag_string "${tag}" || die "${EX_UNSUPPORTED}" "'${tag}' is not a driver tag (expected digits and dots, like 565.57.01)"
  versions_load
  [[ -n ${V_FAMILY[${tag}]+x} ]] ||
    die "${EX_UNSUPPORTED}" "tag ${tag} is not in versions.conf (see: build.sh list)$(unlisted_tag_hint "${tag}")"
}

# unlisted_tag_hint TAG: what to do about a tag versions.conf does not list:
# the listed tags it abbreviates ("580.95": 580.95.05), that support starts
# later (older than the oldest), or, for a newer one, rebase.
unlisted_tag_hint() {
  local tag=$1 t oldest="" newest=""
  local -a like=()
  for t in "${V_TAGS[@]}"; do
    [[ ${t} == "${tag}".* ]] && like+=("${t}")
    [[ -n ${oldest} ]] && version_le "${oldest}" "${t}" || oldest=${t}
    [[ -n ${newest} ]] && version_le "${t}" "${newest}" || newest=${t}
  done
  if [[ ${#like[@]} -gt 0 ]]; then
    printf '; did you mean %s?' "$(printf '%s\n' "${like[@]}" | sort -V | paste -sd, - | sed 's/,/, /g; s/\(.*\), /\1 or /')"
  elif version_le "${tag}" "${oldest}"; then
    printf '; it is older than %s, the oldest tag this project supports (the series starts there)' "${oldest}"
  elif version_le "${newest}" "${tag}"; then
    printf '; a release newer than %s is brought into support with: build.sh rebase %s' "${newest}" "${tag}"
  else
    printf '; between the listed %s and %s: if NVIDIA released it, build.sh rebase %s' \
      "$(nearest_tag "${tag}")" "$(nearest_above "${tag}")" "${tag}"
  fi
}

# nearest_above TAG: the lowest listed tag above TAG, or nothing.
nearest_above() {
  local tag=$1 t above=""
  for t in "${V_TAGS[@]}"; do
    version_le "${t}" "${tag}" && continue
    if [[ -z ${above} ]] || version_le "${t}" "${above}"; then above=${t}; fi
  done
  printf '%s\n' "${above}"
}

# git_pins GITDIR TAG: "<commit> <tree> <core>" of the tag in a git repository
# (see versions.conf). Nothing is written to GITDIR: the core tree object goes
# to a throw-away object directory. Runs in a subshell; fails when the
# repository has no such tag.
git_pins() (
  local gitdir=$1 tag=$2 commit tree core tmp
  local -a g=(git -c safe.directory='*' --git-dir="${gitdir}")
  commit=$("${g[@]}" rev-parse -q --verify "refs/tags/${tag}^{commit}" 2>/dev/null) || exit 1
  tree=$("${g[@]}" rev-parse -q --verify "${commit}^{tree}") || exit 1
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "${tmp}"' EXIT
  core=$("${g[@]}" ls-tree "${tree}" | grep -v -E $'\t(\\.github|CHANGELOG\\.md)$' |
    GIT_OBJECT_DIRECTORY="${tmp}" GIT_ALTERNATE_OBJECT_DIRECTORIES="$(cd "${gitdir}" && pwd -P)/objects" \
      "${g[@]}" mktree) || exit 1
  [[ ${commit} =~ ${OID_RE} && ${tree} =~ ${OID_RE} && ${core} =~ ${OID_RE} ]] || exit 1
  printf '%s %s %s\n' "${commit}" "${tree}" "${core}"
)

# version_le A B: driver version A sorts before or equal to B.
version_le() {
  [[ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" == "$1" ]]
}

# nearest_tag TAG: the listed tag closest to TAG in version order: the
# highest one below it, else the lowest one above it.
nearest_tag() {
  local tag=$1 t below="" above=""
  versions_load
  for t in "${V_TAGS[@]}"; do
    [[ ${t} == "${tag}" ]] && continue
    if version_le "${t}" "${tag}"; then
      if [[ -z ${below} ]] || version_le "${below}" "${t}"; then below=${t}; fi
    elif [[ -z ${above} ]] || version_le "${t}" "${above}"; then
      above=${t}
    fi
  done
  printf '%s\n' "${below:-${above}}"
}

# family_ends newest|first: that tag of every family (version order).
family_ends() {
  local which=$1 tag
  local -A pick=()
  local -a order=()
  for tag in "${V_TAGS[@]}"; do
    [[ -n ${pick[${V_FAMILY[${tag}]}]+x} ]] || order+=("${V_FAMILY[${tag}]}")
    if [[ -z ${pick[${V_FAMILY[${tag}]}]+x} ]] || { [[ ${which} == newest ]] && version_le "${pick[${V_FAMILY[${tag}]}]}" "${tag}"; } ||
      { [[ ${which} == first ]] && version_le "${tag}" "${pick[${V_FAMILY[${tag}]}]}"; }; then
      pick[${V_FAMILY[${tag}]}]=${tag}
    fi
  done
  for tag in "${order[@]}"; do
    printf '%s\n' "${pick[${tag}]}"
  done
}

# kernel_series KREL: 6.1.0-56-amd64 -> 6.1, 6.12.117+deb12-amd64 -> 6.12.
kernel_series() {
  sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$1"
}

# shellcheck shell=bash
# lib/03-checksums.sh: what may enter the cache. A source tree is accepted only when its git
# tree id equals the pin in versions.conf; a .run only when its sha256 does.
#
# Two tree ids are pinned per tag. "tree" is the tag's tree. "core" is the same
# tree without .github/ and CHANGELOG.md, the only top-level entries in which
# NVIDIA's NVIDIA-kernel-module-source-<tag>.tar.xz and Debian's orig tarball
# differ from the tag. Either id identifies every file that is built.

# tree_ids DIR: print "<tree> <core>" for the content of DIR, computed with a
# throw-away git index (nothing is written to DIR). Runs in a subshell.
tree_ids() (
  local dir=$1 tmp full core
  [[ -d ${dir} && ! -e ${dir}/.git ]] || exit 1
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "${tmp}"' EXIT
  local -a g=(git -c core.autocrlf=false -c core.fileMode=true -c core.symlinks=true
    -c core.excludesFile=/dev/null -c core.ignoreCase=false -c core.precomposeUnicode=false
    -c core.safecrlf=false -c safe.directory='*')
  export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
  git init -q --bare "${tmp}/git" || exit 1
  export GIT_DIR="${tmp}/git" GIT_INDEX_FILE="${tmp}/index" GIT_WORK_TREE="${dir}"
  # Every step is checked explicitly: callers use `tree_ids ... || die`, and
  # errexit does not apply on the left of ||.
  "${g[@]}" add -A -f -- . >/dev/null || exit 1
  full=$("${g[@]}" write-tree) || exit 1
  core=$("${g[@]}" ls-tree "${full}" | grep -v -E $'\t(\\.github|CHANGELOG\\.md)$' | "${g[@]}" mktree) || exit 1
  [[ ${full} =~ ^[0-9a-f]{40}$ && ${core} =~ ^[0-9a-f]{40}$ ]] || exit 1
  printf '%s %s\n' "${full}" "${core}"
)

# verify_tree TAG DIR: EX_CHECKSUM unless DIR holds exactly the pinned source.
verify_tree() {
  local tag=$1 dir=$2 ids full core
  ids=$(tree_ids "${dir}") || die "${EX_FETCH}" "cannot compute the tree id of ${dir} (is git installed? is it a source tree?)"
  read -r full core <<<"${ids}"
  if [[ ${full} == "${V_TREE[${tag}]}" ]]; then
    verbose "source tree ${dir}: tree ${full} = pinned tag tree"
  elif [[ ${core} == "${V_CORE[${tag}]}" ]]; then
    verbose "source tree ${dir}: core tree ${core} = pinned core (release tarball form)"
  else
    die "${EX_CHECKSUM}" "source for ${tag} does not match its pin: tree ${full} (pinned ${V_TREE[${tag}]}), core ${core} (pinned ${V_CORE[${tag}]}); refusing to use it"
  fi
}

# run_expected_sha TAG: the .run sha256 to require, from versions.conf or
# --run-sha256; empty when neither knows it.
run_expected_sha() {
  local tag=$1 pinned
  pinned=${V_RUN_SHA[${tag}]}
  if [[ -n ${P2P_RUN_SHA256} ]]; then
    if [[ ${pinned} != unknown && ${pinned} != "${P2P_RUN_SHA256}" ]]; then
      die "${EX_CHECKSUM}" "--run-sha256 ${P2P_RUN_SHA256} differs from the pin for ${tag} in versions.conf (${pinned})"
    fi
    printf '%s\n' "${P2P_RUN_SHA256}"
  elif [[ ${pinned} != unknown ]]; then
    printf '%s\n' "${pinned}"
  fi
}

# check_run_sha_arg TAG: refuse a --run-sha256 that contradicts the pin before
# anything is downloaded.
check_run_sha_arg() {
  local expected
  if [[ -n ${P2P_RUN_SHA256} ]]; then
    expected=$(run_expected_sha "$1")
    verbose ".run checksum to require: ${expected}"
  fi
}

# verify_run_file TAG FILE EXPECTED_SHA: checksum (when known) and the version
# the installer declares must both match.
verify_run_file() {
  local tag=$1 file=$2 expected=$3 actual declared
  [[ -f ${file} ]] || die "${EX_FETCH}" "${file}: no such file"
  actual=$(sha256_of "${file}")
  if [[ -n ${expected} && ${actual} != "${expected}" ]]; then
    die "${EX_CHECKSUM}" "${file}: sha256 ${actual} does not match ${expected}; refusing to run it"
  fi
  declared=$(run_file_version "${file}")
  if [[ -n ${declared} && ${declared} != "${tag}" ]]; then
    die "${EX_MISMATCH}" "${file} installs driver ${declared}, not ${tag}; the modules and userspace would differ"
  fi
  if [[ -z ${expected} && -z ${declared} ]]; then
    die "${EX_MISMATCH}" "${file}: cannot tell which driver version it installs and no checksum is known; refusing"
  fi
  verbose "${file}: sha256 ${actual}${expected:+ (verified)}, declares ${declared:-no version}"
}

# run_file_version FILE: the driver version in the makeself header's label, e.g.
# label="NVIDIA Accelerated Graphics Driver for Linux-x86_64 565.57.01".
run_file_version() {
  head -c 65536 -- "$1" | tr -d '\000' |
    sed -n -E 's/^label="NVIDIA Accelerated Graphics Driver for Linux-[A-Za-z0-9_]+ ([0-9]+\.[0-9]+(\.[0-9]+)?)"$/\1/p' |
    head -n 1
}

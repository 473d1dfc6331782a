# shellcheck shell=bash
# lib/20-fetch.sh: the fetch stage. Puts the upstream source of a tag, and its
# userspace .run, into the verified cache. Nothing enters the cache before
# lib/03-checksums.sh has accepted it.
#
# Cache layout ($P2P_CACHE_DIR):
#   src/<tag>/                     pristine source tree, verified against its pin
#   src/<tag>.pin                  how it was verified (ids and origin)
#   run/NVIDIA-Linux-x86_64-<tag>.run   userspace installer, verified by sha256
#   logs/                          one log file per build.sh run

readonly UPSTREAM_ARCHIVE_URL="https://github.com/NVIDIA/open-gpu-kernel-modules/archive"

help_fetch() {
  usage_synopsis fetch
  cat <<'EOF'

Put the upstream source of <tag> (and the matching userspace .run) into the
verified cache. Everything is checked against versions.conf before use.

  --source PATH      use a local source instead of downloading it (offline):
                       a git repository (work tree or bare) or a git bundle
                       (git bundle create) holding the tag's commit,
                       a tarball (GitHub archive, NVIDIA-kernel-module-source-<tag>.tar.xz,
                       Debian's nvidia-open-gpu-kernel-modules_<tag>.orig.tar.xz),
                       or an unpacked source tree.
                     Without --source the tag's commit is downloaded from GitHub.
  --run FILE         use a local NVIDIA-Linux-x86_64-<tag>.run (checked like a download)
  --run-sha256 HEX   the .run checksum to require, for tags versions.conf marks 'unknown'
  --no-run           do not fetch the .run (the default with --source and no --run)

A cached source is verified again each time it is used. Prints the cached
source directory on stdout. Refused (exit 17) when the disk of the cache has
less than about 320 MiB free (500 MiB more for the .run); a disk that fills
up anyway also ends in exit 17, with nothing half-made kept.
EOF
}

cmd_fetch() {
  local tag=""
  parse_stage_args fetch tag "$@"
  require_tag "${tag}"
  check_run_sha_arg "${tag}"
  cache_lock
  fetch_source "${tag}"
  fetch_run_if_wanted "${tag}"
  [[ ${P2P_DRY_PROBLEM} -eq 0 ]] || exit "${P2P_DRY_PROBLEM}"
  printf '%s\n' "$(cache_src_dir "${tag}")"
  say_next "$(next_cmd build "${tag}") (it patches first; or only the patched tree: $(next_cmd patch "${tag}"))"
}

# fetch_source TAG: make sure src/<tag> holds the verified source.
fetch_source() {
  local tag=$1 dest tmp tree
  dest=$(cache_src_dir "${tag}")
  # every source is checked against its pinned git tree id (and a git
  # repository is read) with git: without it, say so, not blame the source
  # (the pipeline's preflight said so already)
  if ! command -v git >/dev/null 2>&1 && [[ ${P2P_IN_PIPELINE} -eq 0 ]]; then
    preflight_fail "${EX_PREFLIGHT}" "'git' is required but not installed (Debian package: git): fetch checks every source against its pinned git tree id"
  fi
  if [[ -d ${dest} && -z ${P2P_SOURCE} ]]; then
    stage verify "cached source ${dest}"
    [[ ${P2P_DRY_RUN} -eq 1 ]] && return 0
    verify_tree "${tag}" "${dest}"
    return 0
  fi
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    stage fetch "${tag} from ${P2P_SOURCE:-${UPSTREAM_ARCHIVE_URL}/${V_COMMIT[${tag}]}.tar.gz}"
    printf 'would fetch %s into %s and verify it against tree %s\n' "${tag}" "${dest}" "${V_TREE[${tag}]}"
    space_check "${P2P_CACHE_DIR}" fetch "the source of ${tag}"
    return 0
  fi
  space_check "${P2P_CACHE_DIR}" fetch "the source of ${tag}"
  mk_temp_dir "${P2P_CACHE_DIR}/src"
  tmp=${P2P_TMP}
  tree="${tmp}/tree"
  if [[ -n ${P2P_SOURCE} ]]; then
    stage fetch "${tag} from ${P2P_SOURCE}"
    source_unpack "${tag}" "${P2P_SOURCE}" "${tmp}"
  else
    stage fetch "${tag} from GitHub (commit ${V_COMMIT[${tag}]})"
    download "${UPSTREAM_ARCHIVE_URL}/${V_COMMIT[${tag}]}.tar.gz" "${tmp}/source.tar.gz"
    source_from_tarball "${tmp}/source.tar.gz" "${tmp}"
  fi
  stage verify "${tag} source against tree ${V_TREE[${tag}]}"
  verify_tree "${tag}" "${tree}"
  # the pin is written before the tree moves into place: a full disk leaves
  # neither
  run_captured write_lines "${tmp}/pin" "$(tag_info "${tag}") origin=${P2P_SOURCE:-github} verified=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ||
    write_failed "${tmp}" "writing ${dest}.pin" "${EX_FETCH}" "cannot write ${dest}.pin"
  rm -rf -- "${dest}" "${dest}.pin"
  mv -- "${tree}" "${dest}"
  mv -- "${tmp}/pin" "${dest}.pin"
}

# source_unpack TAG PATH TMP: turn any supported local source into TMP/tree.
source_unpack() {
  local tag=$1 src=$2 tmp=$3 gitdir
  if is_git_repo "${src}"; then
    gitdir=$(git -c safe.directory='*' -C "${src}" rev-parse --absolute-git-dir) ||
      die "${EX_FETCH}" "${src}: not a usable git repository"
    source_from_git "${tag}" "${gitdir}" "${tmp}"
  elif is_git_bundle "${src}"; then
    source_from_bundle "${tag}" "${src}" "${tmp}"
  elif [[ -d ${src} ]]; then
    mkdir -p "${tmp}/tree"
    run_captured cp -a -- "${src}/." "${tmp}/tree/" ||
      write_failed "${tmp}" "copying ${src}" "${EX_FETCH}" "cannot copy ${src}"
  elif [[ -f ${src} ]]; then
    source_from_tarball "${src}" "${tmp}"
  else
    die "${EX_FETCH}" "--source ${src}: no such file or directory"
  fi
}

# is_git_repo DIR: a work tree (DIR/.git) or a bare repository.
is_git_repo() {
  [[ -d $1 ]] && { [[ -e $1/.git ]] || [[ -f $1/HEAD && -d $1/objects && -d $1/refs ]]; }
}

# is_git_bundle FILE: a file that `git bundle create` wrote (its first line
# is "# v2 git bundle" or "# v3 git bundle").
is_git_bundle() {
  [[ -f $1 ]] || return 1
  [[ "$(head -c 16 -- "$1" 2>/dev/null | tr -d '\000')" == "# v"[23]" git bundle" ]]
}

# source_from_bundle TAG BUNDLE TMP: the bundle's objects into a throw-away
# repository TMP/bundle.git (its tag TAG, or every ref when it has no such
# tag), checked complete by git, then exported as from any repository
# (source_from_git): the pinned commit, the tag checked against it, and the
# tree verified against its pin by the caller like any other source.
source_from_bundle() {
  local tag=$1 bundle=$2 tmp=$3 gitdir=$3/bundle.git
  local -a g=(git -c safe.directory='*' --git-dir="${gitdir}") refspec
  need_cmd git git
  git init -q --bare "${gitdir}" || die "${EX_FETCH}" "cannot create a git repository in ${tmp}"
  run_captured "${g[@]}" bundle verify -q -- "${bundle}" ||
    write_failed "${tmp}" "reading ${bundle}" "${EX_FETCH}" "${bundle} is not a complete git bundle (truncated or damaged, or made with prerequisites it lacks)"
  if "${g[@]}" bundle list-heads -- "${bundle}" "refs/tags/${tag}" 2>/dev/null | grep -q .; then
    refspec=("+refs/tags/${tag}:refs/tags/${tag}")
  else
    refspec=("+refs/*:refs/bundle/*")
  fi
  verbose "unbundling ${refspec[*]} from ${bundle}"
  run_captured "${g[@]}" fetch -q --no-tags -- "${bundle}" "${refspec[@]}" ||
    write_failed "${tmp}" "unbundling ${bundle}" "${EX_FETCH}" "cannot read the git bundle ${bundle} (truncated or damaged? git fetch from it failed)"
  source_from_git "${tag}" "${gitdir}" "${tmp}" "bundle ${bundle}"
  rm -rf -- "${gitdir}"
}

# source_from_git TAG GITDIR TMP [NAME]: export the pinned commit (never the
# tag name: a tag can be moved, a commit id cannot). NAME is what the errors
# call the source (default: GITDIR).
source_from_git() {
  local tag=$1 gitdir=$2 tmp=$3 name=${4:-$2} tagged
  local -a g=(git -c safe.directory='*' --git-dir="${gitdir}")
  if ! "${g[@]}" cat-file -e "${V_COMMIT[${tag}]}^{commit}" 2>/dev/null; then
    die "${EX_FETCH}" "${name} does not contain commit ${V_COMMIT[${tag}]} (tag ${tag}); fetch the tag into it first"
  fi
  tagged=$("${g[@]}" rev-parse -q --verify "refs/tags/${tag}^{commit}" 2>/dev/null || true)
  if [[ -n ${tagged} && ${tagged} != "${V_COMMIT[${tag}]}" ]]; then
    die "${EX_CHECKSUM}" "tag ${tag} in ${name} is commit ${tagged}, pinned is ${V_COMMIT[${tag}]}; refusing"
  fi
  mkdir -p "${tmp}/tree"
  run_captured git_export "${gitdir}" "${V_COMMIT[${tag}]}" "${tmp}/tree" ||
    write_failed "${tmp}" "exporting commit ${V_COMMIT[${tag}]} from ${name}" "${EX_FETCH}" "cannot export commit ${V_COMMIT[${tag}]} from ${name}"
}

# git_export GITDIR COMMIT DIR: COMMIT's tree written into DIR.
git_export() {
  git -c safe.directory='*' --git-dir="$1" archive --format=tar "$2" | tar -x -C "$3"
}

# source_from_tarball FILE TMP: unpack into TMP/unpack; TMP/tree is its single
# top-level directory (or the unpack directory itself when there is none).
source_from_tarball() {
  local file=$1 tmp=$2
  local -a top
  mkdir -p "${tmp}/unpack"
  run_captured tar -x --no-same-owner -f "${file}" -C "${tmp}/unpack" ||
    write_failed "${tmp}" "unpacking ${file}" "${EX_FETCH}" "cannot unpack ${file} (truncated or not a tarball?)"
  mapfile -t top < <(find "${tmp}/unpack" -mindepth 1 -maxdepth 1)
  if [[ ${#top[@]} -eq 1 && -d ${top[0]} ]]; then
    mv -- "${top[0]}" "${tmp}/tree"
  else
    mv -- "${tmp}/unpack" "${tmp}/tree"
  fi
}

# download URL DEST: https only, fail on HTTP errors, retry, write to a temp
# name and rename when complete.
download() {
  local url=$1 dest=$2
  [[ ${url} == https://* ]] || die "${EX_FETCH}" "refusing non-https URL ${url}"
  need_cmd curl curl
  verbose "downloading ${url}"
  if ! run_captured curl --fail --location --silent --show-error --retry 3 --retry-delay 2 \
    --proto '=https' --proto-redir '=https' --connect-timeout 30 \
    --output "${dest}.part" -- "${url}"; then
    rm -f -- "${dest}.part"
    write_failed "$(dirname -- "${dest}")" "downloading ${url}" "${EX_FETCH}" "download failed: ${url} (offline? use --source / --run with a local copy)"
  fi
  mv -- "${dest}.part" "${dest}"
}

# fetch_run_if_wanted TAG: fetch the .run unless --no-run, or --source without --run.
fetch_run_if_wanted() {
  local tag=$1
  if [[ ${P2P_NO_RUN} -eq 1 ]] || [[ -n ${P2P_SOURCE} && -z ${P2P_RUN_FILE} ]]; then
    verbose "not fetching the .run for ${tag}"
    return 0
  fi
  fetch_run "${tag}"
}

# fetch_run TAG: set P2P_RUN_PATH to a verified .run for TAG (from --run, the
# cache, or a download into the cache).
P2P_RUN_PATH=""
fetch_run() {
  local tag=$1 dest expected tmp
  [[ -n ${P2P_RUN_PATH} ]] && return 0 # verified earlier in this run
  dest=$(cache_run_file "${tag}")
  expected=$(run_expected_sha "${tag}")
  if [[ -n ${P2P_RUN_FILE} ]]; then
    stage verify "${P2P_RUN_FILE}"
    [[ ${P2P_DRY_RUN} -eq 1 ]] || verify_run_file "${tag}" "${P2P_RUN_FILE}" "${expected}"
    P2P_RUN_PATH=${P2P_RUN_FILE}
    return 0
  fi
  if [[ -z ${expected} ]]; then
    # a dry run says so and goes on: the plan stays whole
    preflight_fail "${EX_CHECKSUM}" "the .run checksum for ${tag} is unknown (versions.conf: unknown), so nothing could verify a download; pass --run-sha256 HEX, --run FILE or --userspace keep"
    P2P_RUN_PATH=${dest}
    return 0
  fi
  P2P_RUN_PATH=${dest}
  if [[ -f ${dest} ]]; then
    stage verify "cached ${dest}"
    [[ ${P2P_DRY_RUN} -eq 1 ]] || verify_run_file "${tag}" "${dest}" "${expected}"
    return 0
  fi
  stage fetch "${V_RUN_URL[${tag}]}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would download %s and require sha256 %s\n' "${V_RUN_URL[${tag}]}" "${expected}"
    space_check "${P2P_CACHE_DIR}" run "the .run of ${tag}"
    return 0
  fi
  space_check "${P2P_CACHE_DIR}" run "the .run of ${tag}"
  mk_temp_dir "${P2P_CACHE_DIR}/run"
  tmp=${P2P_TMP}
  download "${V_RUN_URL[${tag}]}" "${tmp}/file.run"
  stage verify ".run sha256 ${expected}"
  verify_run_file "${tag}" "${tmp}/file.run" "${expected}"
  mv -- "${tmp}/file.run" "${dest}"
  verbose "userspace installer for ${tag}: ${P2P_RUN_PATH}"
}

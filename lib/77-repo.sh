# shellcheck shell=bash
# lib/77-repo.sh: `build.sh repo`: a signed apt repository of nvidia-p2p-dkms
# packages for fleets. apt-ftparchive (apt-utils, maintained with apt itself)
# writes the indexes, gpg signs them; the repository checks itself (gpgv and
# every hash) before it replaces the published indexes.
#
#   <dir>/pool/main/n/nvidia-p2p-dkms/*.deb      the packages, never rewritten
#   <dir>/dists/<suite>/{Release,InRelease,Release.gpg}
#   <dir>/dists/<suite>/main/binary-amd64/Packages{,.xz}
#   <dir>/nvidia-p2p-archive-keyring.gpg         the public key (Signed-By)
#   <dir>/nvidia-p2p.sources                     the client's apt source
#
# The public key in <dir> is the repository's identity: later runs sign with
# the same key (it must be in gpg's secret keyring) and refuse another one,
# which every client would reject.

readonly REPO_KEYRING="nvidia-p2p-archive-keyring.gpg"
readonly REPO_SOURCES="nvidia-p2p.sources"
readonly REPO_POOL_PATH="pool/main/n/${P2P_PKG_NAME}"

help_repo() {
  usage_synopsis repo
  cat <<'EOF'

Make or update a signed apt repository in <dir> holding nvidia-p2p-dkms of
each <tag> (built as `build.sh package` does; a package already in the
repository is kept, never rebuilt) or each given .deb (an nvidia-p2p-dkms
package built elsewhere). Machines that point apt at it install, upgrade to
another tag and remove with plain apt commands; DKMS builds the modules on
each machine, and again for every new kernel.

  --key KEYID      sign with this secret key of gpg's keyring ($GNUPGHOME or
                   ~/.gnupg); needed for a new repository unless --generate-key
  --generate-key   a new repository only: make an ed25519 signing key without
                   a passphrase in gpg's keyring (add one: gpg --passwd <fpr>)
  --suite NAME     the suite (default: the one <dir>/nvidia-p2p.sources
                   names, else stable)
  --url URL        where clients reach <dir>, for the .sources file (default:
                   the one <dir>/nvidia-p2p.sources names, else file:<dir>;
                   e.g. https://apt.example.org/p2p)
  --revision N     Debian revision of the packages built here (default 1)
  --source PATH    the upstream source, as for fetch (a git directory serves
                   every tag)
  --no-ccache      do not use ccache
  --nvlink MODE    the packages' P2P options for NVLink-bridged pairs, as for
                   package (not for a given .deb)

<dir> is a repository this command made, or a new or empty directory; any
other directory is refused (exit 2). Later runs find the key through
<dir>/nvidia-p2p-archive-keyring.gpg and refuse another: clients trust only
that key (exit 16 when it is not in gpg's secret keyring). Publishing a .deb
of a version the repository holds with other content is refused (exit 16:
apt would report a hash mismatch); build it with --revision N+1. A tag that
versions.conf does not list: exit 3, nothing written. Prints the path of
<dir>/nvidia-p2p.sources on stdout. On each client, as root:

  cp nvidia-p2p-archive-keyring.gpg /usr/share/keyrings/
  cp nvidia-p2p.sources /etc/apt/sources.list.d/
  apt update && apt install nvidia-p2p-dkms      # the newest tag
  apt install nvidia-p2p-dkms=<tag>-1            # or one tag
  apt purge nvidia-p2p-dkms                      # back to the distribution's modules

(`apt remove` takes the modules, the P2P options and the install lines
away, leaving only the harmless conffile /etc/depmod.d/nvidia-p2p.conf;
purge removes it too. A copy of the options you made in /etc/modprobe.d
stays: delete it, or modprobe passes its P2P options to the distribution's
module.)

When the distribution moves its nvidia-driver to a new version (Debian
bookworm 535.261.03 to trixie 550.163.01), add the package of that version
to the same repository:

  build.sh repo <dir> <newtag>                   # or <dir> nvidia-p2p-dkms_<newtag>-1_amd64.deb

It keeps every package already there (machines pinned or held on an older
tag still resolve it), signs the new indexes with the repository's own key
(no --key needed) and publishes the suite and URL its nvidia-p2p.sources
names. A package of that tag already there is kept and said; when nothing
is new the run changes nothing (exit 0). Clients then move with the
distribution's driver: apt update && apt full-upgrade. Add the tag before
clients move: without it, apt full-upgrade removes nvidia-p2p-dkms (its
depmod conffile stays) and installs the distribution's kernel module package of
the new version; `apt-mark hold nvidia-p2p-dkms` alone makes full-upgrade
fail (held broken packages): hold or pin the driver's packages with it.

apt picks the highest version of the suite: hold a fleet on one tag with
`apt-mark hold nvidia-p2p-dkms` (with the driver's packages) or an apt
preferences pin.
EOF
}

P2P_REPO_DIR=""
P2P_REPO_ITEMS=()

# repo_parse_args ARGS...: <dir>, then tags or .deb files, and the options
# (repo's synopsis; those it shares with package checked as package checks
# them).
repo_parse_args() {
  local -a operands=()
  parse_stage_args repo operands "$@"
  package_check_args
  if [[ ${#operands[@]} -gt 0 ]]; then
    P2P_REPO_DIR=$(abs_path "${operands[0]}")
    P2P_REPO_ITEMS=("${operands[@]:1}")
  fi
  [[ -n ${P2P_REPO_DIR} ]] || die "${EX_USAGE}" "repo needs a directory and at least one tag or .deb (see: build.sh help repo)"
  [[ ${#P2P_REPO_ITEMS[@]} -gt 0 ]] || die "${EX_USAGE}" "repo needs at least one tag or .deb after the directory"
  [[ -z ${P2P_REPO_KEY} || ${P2P_REPO_GENERATE} -eq 0 ]] || die "${EX_USAGE}" "--key and --generate-key exclude each other"
}

cmd_repo() {
  local item fpr
  repo_parse_args "$@"
  need_cmd apt-ftparchive apt-utils
  need_cmd gpg gnupg
  need_cmd gpgv gpgv
  need_cmd dpkg-deb dpkg
  need_cmd xz xz-utils
  repo_check_items
  repo_classify_dir
  repo_published_defaults
  fpr=$(repo_key)
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    repo_plan "${fpr}"
    return 0
  fi
  mkdir -p "${P2P_REPO_DIR}/${REPO_POOL_PATH}"
  repo_lock
  on_exit repo_rollback
  if [[ -z ${fpr} ]]; then
    fpr=$(repo_generate_key)
  fi
  for item in "${P2P_REPO_ITEMS[@]}"; do
    if [[ ${item} == *.deb ]]; then
      repo_add_deb "$(abs_path "${item}")"
    else
      repo_add_tag "${item}"
    fi
  done
  if [[ ${P2P_REPO_NEW} -eq 0 && ${#P2P_REPO_ADDED[@]} -eq 0 ]] && repo_current; then
    note "nothing new: $(repo_versions "${P2P_REPO_DIR}/dists/${P2P_REPO_SUITE}") published in ${P2P_REPO_DIR}, suite ${P2P_REPO_SUITE}; the repository is unchanged"
  else
    repo_publish "${fpr}"
  fi
  printf '%s\n' "${P2P_REPO_DIR}/${REPO_SOURCES}"
}

# repo_classify_dir: <dir> is a repository of ours (its public key is
# there), or new (P2P_REPO_NEW=1: not there; 2: an empty directory); any
# other directory is refused before anything is written into it.
repo_classify_dir() {
  local d=${P2P_REPO_DIR}
  if [[ ! -e ${d} ]]; then
    P2P_REPO_NEW=1
  elif [[ ! -d ${d} ]]; then
    die "${EX_USAGE}" "${d} exists and is not a directory"
  elif [[ -e ${d}/${REPO_KEYRING} ]]; then
    P2P_REPO_NEW=0
  elif [[ -z "$(find "${d}" -mindepth 1 -maxdepth 1 -print -quit)" ]]; then
    P2P_REPO_NEW=2
  else
    die "${EX_USAGE}" "${d} is not an nvidia-p2p repository (no ${REPO_KEYRING}) and not empty: name the repository's directory, or a new or empty one"
  fi
}

# repo_published_defaults: --suite and --url not given: those the
# repository's published nvidia-p2p.sources names (what its clients read),
# else stable and file:<dir>. A --suite other than the published one is said.
repo_published_defaults() {
  local sources="${P2P_REPO_DIR}/${REPO_SOURCES}" suite="" url=""
  if [[ ${P2P_REPO_NEW} -eq 0 && -f ${sources} ]]; then
    suite=$(sed -n 's/^Suites: *//p' "${sources}" | head -n 1)
    url=$(sed -n 's/^URIs: *//p' "${sources}" | head -n 1)
  fi
  if [[ -n ${P2P_REPO_SUITE} && -n ${suite} && ${P2P_REPO_SUITE} != "${suite}" ]]; then
    note "${sources} names suite ${suite}; this run publishes suite ${P2P_REPO_SUITE} and names it there (clients that keep the old file read ${suite}, which it does not change)"
  fi
  if [[ -z ${P2P_REPO_SUITE} ]]; then
    P2P_REPO_SUITE=${suite:-stable}
    [[ ${P2P_REPO_SUITE} =~ ^[a-z0-9][a-z0-9.+-]*$ ]] || die "${EX_REPO}" "${sources}: suite '${P2P_REPO_SUITE}' is not one this command writes; name one with --suite"
  fi
  [[ -n ${P2P_REPO_URL} ]] || P2P_REPO_URL=${url}
}

# repo_current: the published suite lists exactly the pool's packages and
# the .sources file is what this run would write: publishing again would
# change nothing but the signature's date.
repo_current() {
  local d="${P2P_REPO_DIR}/dists/${P2P_REPO_SUITE}"
  [[ -f ${d}/InRelease && -f ${d}/Release.gpg && -f ${d}/main/binary-amd64/Packages ]] || return 1
  [[ "$(awk '/^Filename: / { print $2 }' "${d}/main/binary-amd64/Packages" | LC_ALL=C sort)" == \
    "$(cd "${P2P_REPO_DIR}" && find pool -type f -name '*.deb' | LC_ALL=C sort)" ]] || return 1
  [[ "$(repo_sources)" == "$(cat "${P2P_REPO_DIR}/${REPO_SOURCES}" 2>/dev/null)" ]]
}

# repo_check_items: every tag is listed and every .deb is a package of ours,
# before anything is built or written.
repo_check_items() {
  local item
  for item in "${P2P_REPO_ITEMS[@]}"; do
    if [[ ${item} == *.deb ]]; then
      repo_check_deb "$(abs_path "${item}")"
    else
      require_tag "${item}"
    fi
  done
}

# repo_check_deb FILE: FILE is an nvidia-p2p-dkms package for amd64 of a tag
# versions.conf lists; dies otherwise.
repo_check_deb() {
  local deb=$1 fields name version arch
  [[ -f ${deb} ]] || die "${EX_USAGE}" "${deb}: no such file"
  fields=$(dpkg-deb -f "${deb}" Package Version Architecture 2>/dev/null) ||
    die "${EX_USAGE}" "${deb}: not a Debian package (dpkg-deb cannot read it)"
  name=$(sed -n 's/^Package: //p' <<<"${fields}")
  version=$(sed -n 's/^Version: //p' <<<"${fields}")
  arch=$(sed -n 's/^Architecture: //p' <<<"${fields}")
  [[ ${name} == "${P2P_PKG_NAME}" && ${arch} == amd64 ]] ||
    die "${EX_USAGE}" "${deb}: package ${name:-?} (${arch:-?}), not ${P2P_PKG_NAME} (amd64)"
  require_tag "${version%-*}"
}

# repo_key: the fingerprint to sign with (nothing when --generate-key makes
# one). The repository's published key decides; --key must name that key.
repo_key() {
  local published="" fpr=""
  [[ -z ${GNUPGHOME:-} || -d ${GNUPGHOME} ]] || die "${EX_REPO}" "GNUPGHOME=${GNUPGHOME} is not a directory (gpg's keyring)"
  if [[ -f ${P2P_REPO_DIR}/${REPO_KEYRING} ]]; then
    published=$(gpg --batch --with-colons --show-keys "${P2P_REPO_DIR}/${REPO_KEYRING}" 2>/dev/null |
      awk -F: '$1 == "pub" { p = 1; next } p && $1 == "fpr" { print $10; exit }') || published=""
    [[ -n ${published} ]] || die "${EX_REPO}" "${P2P_REPO_DIR}/${REPO_KEYRING} holds no public key gpg can read"
    [[ ${P2P_REPO_GENERATE} -eq 0 ]] ||
      die "${EX_USAGE}" "${P2P_REPO_DIR} already has its signing key ${published}; --generate-key is for a new repository"
  fi
  if [[ -n ${P2P_REPO_KEY} ]]; then
    fpr=$(repo_secret_fpr "${P2P_REPO_KEY}") ||
      die "${EX_REPO}" "no secret key '${P2P_REPO_KEY}' in gpg's keyring (${GNUPGHOME:-${HOME}/.gnupg}): gpg --list-secret-keys shows the keys that can sign"
    if [[ -n ${published} && ${fpr} != "${published}" ]]; then
      die "${EX_REPO}" "${P2P_REPO_DIR} is signed by key ${published}, and its clients trust only that one; sign with it (--key ${published}) or make a new repository for key ${fpr}"
    fi
  elif [[ -n ${published} ]]; then
    fpr=$(repo_secret_fpr "${published}") ||
      die "${EX_REPO}" "the repository's key ${published} is not in gpg's secret keyring (${GNUPGHOME:-${HOME}/.gnupg}); import it there (gpg --import) or set GNUPGHOME"
  elif [[ ${P2P_REPO_GENERATE} -eq 0 ]]; then
    die "${EX_USAGE}" "a new repository needs a signing key: --key KEYID (a secret key in gpg's keyring) or --generate-key"
  fi
  printf '%s\n' "${fpr}"
}

# repo_secret_fpr KEY: the primary fingerprint of the one secret key KEY names.
repo_secret_fpr() {
  local out n
  out=$(gpg --batch --with-colons --list-secret-keys -- "$1" 2>/dev/null |
    awk -F: '$1 == "sec" { p = 1; next } p && $1 == "fpr" { print $10; p = 0 }') || return 1
  n=$(grep -c . <<<"${out}") || true
  [[ ${n} -eq 1 ]] || return 1
  printf '%s\n' "${out}"
}

# repo_generate_key: a new ed25519 signing key; prints its fingerprint.
repo_generate_key() {
  local uid fpr host
  host=$(hostname 2>/dev/null || echo localhost)
  uid="nvidia-p2p apt repository (${host}) <nvidia-p2p@${host%%.*}.invalid>"
  stage key "generating an ed25519 signing key: ${uid}"
  fpr=$(gpg --batch --yes --pinentry-mode loopback --passphrase '' --status-fd 1 \
    --quick-generate-key "${uid}" ed25519 sign never 2>>"${P2P_LOG_FILE:-/dev/null}" |
    awk '$2 == "KEY_CREATED" { print $4 }') || fpr=""
  [[ -n ${fpr} ]] || die "${EX_REPO}" "gpg could not generate a key in ${GNUPGHOME:-${HOME}/.gnupg}"
  note "signing key ${fpr} (no passphrase; add one with: gpg --passwd ${fpr}). Keep a copy: gpg --export-secret-keys --armor ${fpr}"
  printf '%s\n' "${fpr}"
}

repo_plan() {
  local fpr=$1 item name
  printf 'Plan for %s repository %s (suite %s), changing nothing:\n' \
    "$([[ ${P2P_REPO_NEW} -eq 0 ]] && echo the || echo a new)" "${P2P_REPO_DIR}" "${P2P_REPO_SUITE}"
  for item in "${P2P_REPO_ITEMS[@]}"; do
    if [[ ${item} == *.deb ]]; then
      name=$(deb_file "$(dpkg-deb -f "$(abs_path "${item}")" Version)")
    else
      name=$(deb_file "$(deb_version "${item}")")
    fi
    if [[ -f ${P2P_REPO_DIR}/${REPO_POOL_PATH}/${name} ]]; then
      printf '%s is in the repository already: kept\n' "${name}"
    elif [[ ${item} == *.deb ]]; then
      printf 'would add %s to %s\n' "$(abs_path "${item}")" "${REPO_POOL_PATH}"
    else
      printf 'would build %s into %s\n' "${name}" "${REPO_POOL_PATH}"
    fi
  done
  printf 'would index with apt-ftparchive and sign with %s (the packages already there stay)\n' "${fpr:-a new ed25519 key (--generate-key)}"
}

# repo_lock: one run per repository (beside the build cache's own lock).
P2P_REPO_LOCK_FD=""
repo_lock() {
  exec {P2P_REPO_LOCK_FD}>"${P2P_REPO_DIR}/.lock"
  lock_fd "${P2P_REPO_LOCK_FD}" "${P2P_REPO_DIR}/.lock" "another build.sh run"
}

# repo_rollback RC: a run that fails takes the packages it added out of the
# pool again: the pool stays what the published indexes list. A repository
# this run began is removed (an empty directory it began in is emptied).
P2P_REPO_ADDED=()
P2P_REPO_NEW=0
repo_rollback() {
  local rc=$1 f
  [[ ${rc} -ne 0 ]] || return 0
  if [[ ${P2P_REPO_NEW} -eq 1 ]]; then
    rm -rf -- "${P2P_REPO_DIR}"
    return 0
  fi
  if [[ ${P2P_REPO_NEW} -eq 2 ]]; then
    find "${P2P_REPO_DIR}" -mindepth 1 -delete
    return 0
  fi
  for f in "${P2P_REPO_ADDED[@]+"${P2P_REPO_ADDED[@]}"}"; do
    rm -f -- "${f}"
  done
}

# repo_add_tag TAG: the package of TAG into the pool, built unless there.
repo_add_tag() {
  local tag=$1 name
  name=$(deb_file "$(deb_version "${tag}")")
  if [[ -f ${P2P_REPO_DIR}/${REPO_POOL_PATH}/${name} ]]; then
    note "${name} is in the repository already: kept (a new build needs --revision)"
    return 0
  fi
  P2P_REPO_ADDED+=("${P2P_REPO_DIR}/${REPO_POOL_PATH}/${name}")
  package_build "${tag}" "${P2P_REPO_DIR}/${REPO_POOL_PATH}"
  # readable by whoever serves the repository (the build's temp file was 0600)
  chmod 0644 "${P2P_DEB}"
  stage repo "${name} added"
}

# repo_add_deb FILE: FILE (checked by repo_check_items) into the pool; the
# same file again is kept, another file of the same name is refused.
repo_add_deb() {
  local deb=$1 name target
  name=$(deb_file "$(dpkg-deb -f "${deb}" Version)")
  target="${P2P_REPO_DIR}/${REPO_POOL_PATH}/${name}"
  if [[ -f ${target} ]]; then
    cmp -s -- "${deb}" "${target}" ||
      die "${EX_REPO}" "${name} is in the repository with other content; apt clients would see a hash mismatch: build the new one with --revision N+1"
    note "${name} is in the repository already: kept"
    return 0
  fi
  mk_temp_file "${P2P_REPO_DIR}/${REPO_POOL_PATH}"
  P2P_REPO_ADDED+=("${target}")
  cp -- "${deb}" "${P2P_TMP}"
  chmod 0644 "${P2P_TMP}"
  mv -f -- "${P2P_TMP}" "${target}"
  stage repo "${name} added"
}

# repo_publish FPR: indexes of the pool, signed with FPR, checked, then put
# in place of the published ones; the public key and the .sources file.
repo_publish() {
  local fpr=$1 new suite="${P2P_REPO_SUITE}" dists="${P2P_REPO_DIR}/dists"
  mkdir -p "${dists}"
  mk_temp_dir "${dists}"
  new=${P2P_TMP}
  stage index "apt-ftparchive: ${P2P_REPO_DIR}, suite ${suite}"
  repo_index "${new}/${suite}"
  stage sign "InRelease and Release.gpg with key ${fpr}"
  repo_sign "${fpr}" "${new}/${suite}"
  gpg --batch --export "${fpr}" >"${new}/keyring.gpg" 2>>"${P2P_LOG_FILE:-/dev/null}" || true
  [[ -s ${new}/keyring.gpg ]] || die "${EX_REPO}" "gpg could not export the public key ${fpr}"
  repo_check "${new}/${suite}" "${new}/keyring.gpg"
  repo_sources >"${new}/sources"
  mv -f -- "${new}/keyring.gpg" "${P2P_REPO_DIR}/${REPO_KEYRING}"
  mv -f -- "${new}/sources" "${P2P_REPO_DIR}/${REPO_SOURCES}"
  chmod 0644 "${P2P_REPO_DIR}/${REPO_KEYRING}" "${P2P_REPO_DIR}/${REPO_SOURCES}"
  chmod -R a+rX "${new}/${suite}"
  if [[ -d ${dists}/${suite} ]]; then
    mv -- "${dists}/${suite}" "${new}/old"
  fi
  mv -- "${new}/${suite}" "${dists}/${suite}"
  stage repo "$(repo_versions "${dists}/${suite}") published in ${P2P_REPO_DIR}, suite ${suite}"
}

# repo_index DIR: DIR/main/binary-amd64/Packages{,.xz} of the pool and DIR/Release.
repo_index() {
  local d=$1 bin="$1/main/binary-amd64"
  mkdir -p "${bin}"
  (cd "${P2P_REPO_DIR}" && apt-ftparchive packages pool) >"${bin}/Packages" 2>>"${P2P_LOG_FILE:-/dev/null}" ||
    die "${EX_REPO}" "apt-ftparchive could not index ${P2P_REPO_DIR}/pool"
  xz -9 -k -- "${bin}/Packages"
  apt-ftparchive \
    -o APT::FTPArchive::Release::Origin=nvidia-p2p \
    -o APT::FTPArchive::Release::Label=nvidia-p2p \
    -o "APT::FTPArchive::Release::Suite=${P2P_REPO_SUITE}" \
    -o "APT::FTPArchive::Release::Codename=${P2P_REPO_SUITE}" \
    -o APT::FTPArchive::Release::Architectures=amd64 \
    -o APT::FTPArchive::Release::Components=main \
    -o "APT::FTPArchive::Release::Description=nvidia-p2p-dkms: NVIDIA open kernel modules with PCIe P2P" \
    release "${d}" >"${d}.Release" 2>>"${P2P_LOG_FILE:-/dev/null}" ||
    die "${EX_REPO}" "apt-ftparchive could not write the Release file"
  mv -f -- "${d}.Release" "${d}/Release"
}

# repo_sign FPR DIR: DIR/InRelease (inline) and DIR/Release.gpg (detached).
repo_sign() {
  local fpr=$1 d=$2
  local -a gpg=(gpg --yes --local-user "${fpr}" --digest-algo SHA512)
  if ! "${gpg[@]}" --clearsign --output "${d}/InRelease" "${d}/Release" 2>>"${P2P_LOG_FILE:-/dev/null}" ||
    ! "${gpg[@]}" --armor --detach-sign --output "${d}/Release.gpg" "${d}/Release" 2>>"${P2P_LOG_FILE:-/dev/null}"; then
    die "${EX_REPO}" "gpg could not sign with key ${fpr} (a passphrase needs gpg-agent and a pinentry; see ${P2P_LOG_FILE:-the output above})"
  fi
}

# repo_check DIR KEYRING: what a client checks, before publishing: both
# signatures verify against the public key, the indexes match the Release
# file's SHA256 sums, every package matches its Packages entry.
repo_check() {
  local d=$1 keyring=$2 sum size file line
  if ! gpgv --keyring "${keyring}" "${d}/InRelease" >/dev/null 2>&1 ||
    ! gpgv --keyring "${keyring}" "${d}/Release.gpg" "${d}/Release" >/dev/null 2>&1; then
    die "${EX_REPO}" "the new signatures do not verify against the exported public key; nothing was published"
  fi
  while read -r sum size file; do
    [[ -f ${d}/${file} ]] || continue
    [[ "$(sha256sum <"${d}/${file}" | cut -d' ' -f1)" == "${sum}" && "$(stat -c %s "${d}/${file}")" == "${size}" ]] ||
      die "${EX_REPO}" "${file} does not match its Release entry; nothing was published"
  done < <(awk '/^SHA256:/ { p = 1; next } /^[^ ]/ { p = 0 } p { print $1, $2, $3 }' "${d}/Release")
  while IFS= read -r line; do
    sum=${line#* }
    file=${line%% *}
    [[ "$(sha256sum <"${P2P_REPO_DIR}/${file}" | cut -d' ' -f1)" == "${sum}" ]] ||
      die "${EX_REPO}" "${file} does not match its Packages entry; nothing was published"
  done < <(awk '/^Filename: / { f = $2 } /^SHA256: / { print f, $2 }' "${d}/main/binary-amd64/Packages")
}

# repo_sources: the client's deb822 source.
repo_sources() {
  cat <<EOF
# nvidia-p2p apt repository: /etc/apt/sources.list.d/${REPO_SOURCES}, with
# ${REPO_KEYRING} in /usr/share/keyrings/ (build.sh help repo).
Types: deb
URIs: ${P2P_REPO_URL:-file:${P2P_REPO_DIR}}
Suites: ${P2P_REPO_SUITE}
Components: main
Architectures: amd64
Signed-By: /usr/share/keyrings/${REPO_KEYRING}
EOF
}

# repo_versions DIR: the versions the suite's Packages lists, comma-separated.
repo_versions() {
  awk '/^Version: / { v = v (v ? ", " : "") $2 } END { print v }' "$1/main/binary-amd64/Packages"
}

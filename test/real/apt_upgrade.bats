#!/usr/bin/env bats
# Debian's nvidia-driver moving to a new version under nvidia-p2p-dkms
# (issue 27, item 2), with the real apt and dpkg in throwaway Debian minbase
# chroots (mmdebstrap): bookworm's nvidia-driver (535.261.03) installed with
# Debian's kernel module package, then nvidia-p2p-dkms of the same version
# from a signed repository that build.sh repo made, in that package's place.
# Then, each in its own copy of that machine:
#   (a) the Debian sources moved to trixie and `apt-get full-upgrade`: with
#       the package of trixie's version (550.163.01) added to the repository
#       (`build.sh repo <dir> <deb>`), apt upgrades ours with the driver and
#       brings back none of Debian's kernel module packages; without it, apt
#       removes ours and installs Debian's nvidia-kernel-dkms of the new
#       version; our conffile stays (removed, not purged: the depmod
#       override), but the options and the install lines went with the
#       package (/usr/lib/modprobe.d, not conffiles): Debian's install line
#       is what `modprobe nvidia` runs, with no P2P option of ours;
#   (b) on bookworm, `apt-get install --reinstall nvidia-driver` keeps ours
#       and brings nothing of Debian's kernel modules; `apt-get remove
#       nvidia-driver` keeps ours, and so does `apt-get autoremove` after it;
#   (c) on bookworm, an upgrade from a package of the old layout (options in
#       the conffile /etc/modprobe.d/nvidia-p2p.conf) removes that conffile
#       (dpkg-maintscript-helper rm_conffile), or keeps it as .dpkg-bak
#       when it was changed, and says so.
# Bad input, each from a copy of the bookworm machine (see the section
# below): (d) a repository whose signature fails, (e) ours of another tag
# than the installed driver, (f) an interrupted dpkg run.
#
# Our packages are stand-ins made by the package's own deb_tree
# (package_standin: control file, maintainer scripts, conffiles, dkms.conf;
# no kernel-open, no objects: no driver build). The chroots have no kernel,
# and apt may install none (linux-image-*, linux-headers-* pinned to -1):
# DKMS registers the modules and builds nothing, which the tests check.
# apt's output of every step is kept in the file's temporary directory and
# printed when a test fails.
#
# Needs root (chroot, mounts), mmdebstrap and unshare, and Debian's archive
# (about 600 MB of packages the first time; NVP2P_TEST_CACHE keeps the
# chroot and apt's downloads between runs). Each of these, or a suite's
# driver at a version versions.conf does not list, SKIPs with the reason.
# Time here (2 cores shared with builds): the chroot 30 s, the bookworm
# machine 1-2 min, each move to trixie 3 min, (d) 20 s, the rest under a
# minute.

load ../test_helper
load debian_pkg

setup_file() {
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  export U_CACHE="${NVP2P_TEST_CACHE:-${BATS_FILE_TMPDIR}/cache}/apt-upgrade"
  export U_DIR="${BATS_FILE_TMPDIR}/u"
  export U_SKIP="${BATS_FILE_TMPDIR}/skip"
  mkdir -p "${U_CACHE}/archives" "${U_DIR}"
  local why
  why=$(can_run) || { printf '%s\n' "${why}" >"${U_SKIP}" && return 0; }
  why=$(base_chroot 2>&1) || { printf 'no bookworm chroot: %s\n' "$(tail -n 1 <<<"${why}")" >"${U_SKIP}" && return 0; }
  why=$(versions 2>&1) || { printf '%s\n' "$(tail -n 1 <<<"${why}")" >"${U_SKIP}" && return 0; }
  why=$(repositories 2>&1) || { printf 'the repositories could not be made: %s\n' "$(tail -n 1 <<<"${why}")" >"${U_SKIP}" && return 0; }
}

teardown_file() {
  rm -rf "${U_DIR:?}/chroots"
  GNUPGHOME="${U_DIR}/gnupg" gpgconf --kill gpg-agent >/dev/null 2>&1 || true
}

setup() {
  [[ ! -s ${U_SKIP} ]] || skip "$(cat "${U_SKIP}")"
  # shellcheck source=/dev/null
  source "${U_DIR}/versions"
}

# can_run: root, mmdebstrap, unshare; else why not.
can_run() {
  [[ "$(id -u)" == 0 ]] || { echo "needs root (chroot, mounts)" && return 1; }
  local tool
  for tool in mmdebstrap unshare dpkg-deb apt-ftparchive gpg gpgv; do
    command -v "${tool}" >/dev/null 2>&1 || { echo "${tool} is not installed" && return 1; }
  done
}

# base_chroot: Debian bookworm, minbase, main contrib non-free
# non-free-firmware, recommendations off (as ci/setup/chroot.sh makes its
# chroots), kept in U_CACHE.
base_chroot() {
  local base="${U_CACHE}/bookworm-base"
  [[ -x ${base}/usr/bin/apt-get ]] && return 0
  rm -rf -- "${base}.new"
  mmdebstrap --quiet --variant=minbase --aptopt='APT::Install-Recommends "false"' \
    --components=main,contrib,non-free,non-free-firmware bookworm "${base}.new" http://deb.debian.org/debian
  mv -- "${base}.new" "${base}"
}

# versions: OLD (bookworm's nvidia-driver) and NEW (trixie's), upstream
# versions, into U_DIR/versions; both must be tags versions.conf lists.
versions() {
  local old new
  old=$(suite_driver bookworm) || return 1
  new=$(suite_driver trixie) || return 1
  package_standin "${old}" "${U_DIR}/debs" >/dev/null || { echo "bookworm's nvidia-driver is ${old}, which versions.conf does not list" && return 1; }
  package_standin "${new}" "${U_DIR}/debs" >/dev/null || { echo "trixie's nvidia-driver is ${new}, which versions.conf does not list" && return 1; }
  printf 'OLD=%s\nNEW=%s\n' "${old}" "${new}" >"${U_DIR}/versions"
}

# suite_driver SUITE: the upstream version of SUITE's nvidia-driver (a
# private apt state on this machine, nothing installed).
suite_driver() {
  local d="${U_DIR}/lists-$1" v
  mkdir -p "${d}/lists/partial" "${d}/cache"
  printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s main contrib non-free non-free-firmware\n' "$1" >"${d}/sources.list"
  local -a opts=(-o "Dir::Etc::SourceList=${d}/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=${d}/lists" -o "Dir::Cache=${d}/cache" -o Dir::State::status=/dev/null
    -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
    -o APT::Architecture=amd64 -o APT::Architectures::=amd64)
  apt-get "${opts[@]}" -q update >"${d}/update.log" 2>&1 || { echo "Debian $1 (offline?): $(tail -n 1 "${d}/update.log")" && return 1; }
  v=$(apt-cache "${opts[@]}" policy nvidia-driver | sed -n 's/^  Candidate: //p')
  [[ -n ${v} && ${v} != "(none)" ]] || { echo "Debian $1 has no nvidia-driver" && return 1; }
  v=${v#*:}
  printf '%s\n' "${v%%-*}"
}

# repositories: U_DIR/repo-old with nvidia-p2p-dkms of OLD (a new key in a
# private GNUPGHOME, clients reach it at file:/srv/p2p), and U_DIR/repo-new:
# a copy to which the documented command adds the package of NEW.
repositories() {
  # shellcheck source=/dev/null
  source "${U_DIR}/versions"
  export GNUPGHOME="${U_DIR}/gnupg"
  mkdir -m 0700 "${GNUPGHOME}"
  "${REPO_ROOT}/build.sh" --cache-dir "${U_DIR}/build-cache" repo "${U_DIR}/repo-old" \
    "${U_DIR}/debs/nvidia-p2p-dkms_${OLD}-1_amd64.deb" --generate-key --url file:/srv/p2p
  cp -a "${U_DIR}/repo-old" "${U_DIR}/repo-new"
  "${REPO_ROOT}/build.sh" --cache-dir "${U_DIR}/build-cache" repo "${U_DIR}/repo-new" \
    "${U_DIR}/debs/nvidia-p2p-dkms_${NEW}-1_amd64.deb"
}

# machine NAME FROM REPO: chroot NAME, a copy of chroot FROM (or of the
# bookworm base: "base"), with the nvidia-p2p source and key of REPO.
machine() {
  local name=$1 from=$2 repo=$3 root="${U_DIR}/chroots/$1"
  rm -rf -- "${root}"
  mkdir -p "${U_DIR}/chroots"
  if [[ ${from} == base ]]; then
    cp -a "${U_CACHE}/bookworm-base" "${root}"
  else
    cp -a "${U_DIR}/chroots/${from}" "${root}"
  fi
  cp "${U_DIR}/${repo}/nvidia-p2p-archive-keyring.gpg" "${root}/usr/share/keyrings/"
  cp "${U_DIR}/${repo}/nvidia-p2p.sources" "${root}/etc/apt/sources.list.d/"
  printf '%s\n' "${repo}" >"${root}.repo"
}

# inside NAME CMD...: CMD in chroot NAME (a private mount namespace: /proc,
# /dev, this repository at /lab/repo, the chroot's repository at /srv/p2p,
# apt's downloads in U_CACHE); its output also into U_DIR/NAME.log.
inside() {
  local name=$1 root="${U_DIR}/chroots/$1" repo
  shift
  repo="${U_DIR}/$(cat "${root}.repo")"
  printf '== %s\n' "$*" >>"${U_DIR}/${name}.log"
  # shellcheck disable=SC2016 # expanded by the inner shell
  unshare -m --propagation private -- bash -c '
    set -euo pipefail
    root=$1 repo=$2 lab=$3 cache=$4
    shift 4
    mount -t proc proc "${root}/proc"
    mount --rbind /dev "${root}/dev"
    mkdir -p "${root}/srv/p2p" "${root}/lab/repo"
    mount --bind "${repo}" "${root}/srv/p2p"
    mount --bind "${lab}" "${root}/lab/repo"
    mount --bind "${cache}" "${root}/var/cache/apt/archives"
    exec chroot "${root}" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
  ' inside "${root}" "${repo}" "$(cd "${REPO_ROOT}" && pwd -P)" "${U_CACHE}/archives" "$@" 2>&1 | tee -a "${U_DIR}/${name}.log"
  return "${PIPESTATUS[0]}"
}

# step NAME CMD...: ci/heavy/debian-userspace.sh CMD... in chroot NAME, with bats' run.
step() {
  local name=$1
  shift
  run inside "${name}" /lab/repo/ci/heavy/debian-userspace.sh "$@"
  [[ ${status} -eq 0 ]] || tail -n 40 "${U_DIR}/${name}.log"
}

# dpkg_i NAME DEB: dpkg -i DEB (a file of U_DIR/debs) in chroot NAME, with
# bats' run.
dpkg_i() {
  cp "${U_DIR}/debs/${2##*/}" "${U_DIR}/chroots/$1/tmp/"
  run inside "$1" env DEBIAN_FRONTEND=noninteractive dpkg -i "/tmp/${2##*/}"
  [[ ${status} -eq 0 ]] || tail -n 40 "${U_DIR}/$1.log"
}

# packages NAME: the state of the packages these paths are about.
packages() {
  step "$1" state nvidia-driver nvidia-p2p-dkms nvidia-kernel-dkms nvidia-open-kernel-dkms \
    nvidia-kernel-support firmware-nvidia-gsp libcuda1
}

# no_dkms_build NAME: DKMS built nothing in chroot NAME.
no_dkms_build() {
  step "$1" dkms-built
  assert_success
  assert_output ""
}

# ours_load NAME: in chroot NAME, `modprobe nvidia` runs our install line,
# with the P2P options, from the package's /usr/lib/modprobe.d file, which
# sorts before Debian's /etc/modprobe.d/nvidia.conf.
ours_load() {
  step "$1" modprobe-install
  assert_success
  assert_line --index 0 --regexp '^install modprobe -i nvidia [$]CMDLINE_OPTS .*NVreg_RegistryDwords="ForceP2P='
  assert_line --index 1 "file: /usr/lib/modprobe.d/nvidia-p2p-load.conf"
  assert_line "file: /etc/modprobe.d/nvidia.conf"
}

# bookworm_machine: the machine every path starts from (made by the first
# test, copied by the others).
bookworm_machine() {
  [[ -f ${U_DIR}/chroots/bookworm.ok ]] || skip "the bookworm machine was not made (the first test failed)"
}

@test "bookworm: nvidia-driver with Debian's nvidia-kernel-dkms, then nvidia-p2p-dkms from the signed repository in its place" {
  machine bookworm base repo-old
  step bookworm machine nvidia-driver
  assert_success
  assert_line --regexp "^Setting up nvidia-kernel-dkms \(${OLD//./\\.}-"
  assert_line --regexp "^Removing nvidia-kernel-dkms \(${OLD//./\\.}-"
  assert_line --regexp "^Setting up nvidia-p2p-dkms \(${OLD//./\\.}-1\)"
  packages bookworm
  assert_line --regexp "^nvidia-driver ii ${OLD//./\\.}-"
  assert_line "nvidia-p2p-dkms ii ${OLD}-1"
  refute_line --regexp '^nvidia-(open-)?kernel-dkms ii '
  assert_line --regexp "^nvidia-kernel-support ii ${OLD//./\\.}-"
  no_dkms_build bookworm
  ours_load bookworm
  touch "${U_DIR}/chroots/bookworm.ok"
}

@test "(a) bookworm -> trixie, the repository holding nvidia-p2p-dkms of trixie's version: apt full-upgrade upgrades ours with the driver" {
  bookworm_machine
  machine up-with bookworm repo-new
  step up-with move trixie
  assert_success
  printf '%s\n' "${output}" >"${U_DIR}/up-with.summary"
  assert_line --regexp "^Get:[0-9]+ file:/srv/p2p stable/main amd64 nvidia-p2p-dkms amd64 ${NEW//./\\.}-1 "
  assert_line --regexp "^Setting up nvidia-p2p-dkms \(${NEW//./\\.}-1\)"
  refute_line --regexp '^Setting up nvidia-(open-)?kernel-dkms '
  packages up-with
  assert_line --regexp "^nvidia-driver ii ${NEW//./\\.}-"
  assert_line "nvidia-p2p-dkms ii ${NEW}-1"
  refute_line --regexp '^nvidia-(open-)?kernel-dkms ii '
  assert_line --regexp "^firmware-nvidia-gsp ii ${NEW//./\\.}-"
  step up-with apt check
  assert_success
  no_dkms_build up-with
  ours_load up-with
}

@test "(a) bookworm -> trixie, the repository without trixie's version: apt full-upgrade removes ours and installs Debian's nvidia-kernel-dkms of the new version" {
  bookworm_machine
  machine up-without bookworm repo-old
  step up-without move trixie
  assert_success
  printf '%s\n' "${output}" >"${U_DIR}/up-without.summary"
  assert_line --regexp "^Removing nvidia-p2p-dkms \(${OLD//./\\.}-1\)"
  assert_line --regexp "^Setting up nvidia-kernel-dkms \(${NEW//./\\.}-"
  packages up-without
  assert_line --regexp "^nvidia-driver ii ${NEW//./\\.}-"
  assert_line --regexp "^nvidia-kernel-dkms ii ${NEW//./\\.}-"
  # removed, not purged: the conffile (the depmod override) stays; the
  # options and the install lines were not conffiles and went with the
  # package
  assert_line "nvidia-p2p-dkms rc ${OLD}-1"
  local root="${U_DIR}/chroots/up-without"
  assert_file_exist "${root}/etc/depmod.d/nvidia-p2p.conf"
  assert_file_not_exist "${root}/etc/modprobe.d/nvidia-p2p.conf"
  assert_file_not_exist "${root}/usr/lib/modprobe.d/nvidia-p2p.conf"
  assert_file_not_exist "${root}/usr/lib/modprobe.d/nvidia-p2p-load.conf"
  step up-without apt check
  assert_success
  no_dkms_build up-without
  # Debian's modules are nvidia-current*.ko, loaded by its install line
  # (modprobe -i nvidia-current): no install line of ours is left before
  # it, and no option of module nvidia that modprobe would hand to it
  # ($CMDLINE_OPTS): the stock module gets no P2P key.
  step up-without modprobe-install
  assert_success
  printf '%s\n' "${output}" >"${U_DIR}/up-without.modprobe-removed"
  assert_line --index 0 --regexp '^install modprobe -i nvidia-current [$]CMDLINE_OPTS *$'
  refute_output --regexp '^install modprobe -i nvidia [$]CMDLINE_OPTS'
  assert_line "file: /etc/modprobe.d/nvidia.conf"
  refute_output --partial "nvidia-p2p"
  refute_output --partial "NVreg_RegistryDwords"
  step up-without apt purge nvidia-p2p-dkms
  assert_success
  assert_file_not_exist "${root}/etc/depmod.d/nvidia-p2p.conf"
  step up-without modprobe-install
  assert_success
  printf '%s\n' "${output}" >"${U_DIR}/up-without.modprobe-purged"
  assert_line --index 0 --regexp '^install modprobe -i nvidia-current [$]CMDLINE_OPTS *$'
  refute_output --partial 'NVreg_RegistryDwords'
}

@test "(b) apt-get install --reinstall nvidia-driver: ours stays, Debian's kernel module package stays out" {
  bookworm_machine
  machine reinstall bookworm repo-old
  step reinstall apt install --reinstall nvidia-driver
  assert_success
  assert_line --regexp "^Setting up nvidia-driver \(${OLD//./\\.}-"
  refute_line --regexp '^(Setting up|Unpacking) nvidia-(open-)?kernel-dkms '
  refute_line --regexp '^Removing nvidia-p2p-dkms '
  packages reinstall
  assert_line --regexp "^nvidia-driver ii ${OLD//./\\.}-"
  assert_line "nvidia-p2p-dkms ii ${OLD}-1"
  refute_line --regexp '^nvidia-(open-)?kernel-dkms ii '
  no_dkms_build reinstall
}

@test "(b) apt-get remove nvidia-driver: ours stays, also after apt-get autoremove" {
  bookworm_machine
  machine remove bookworm repo-old
  step remove apt remove nvidia-driver
  assert_success
  assert_line --regexp "^Removing nvidia-driver \(${OLD//./\\.}-"
  refute_line --regexp '^Removing nvidia-p2p-dkms '
  step remove apt autoremove
  assert_success
  printf '%s\n' "${output}" >"${U_DIR}/remove.autoremove"
  refute_line --regexp '^Removing nvidia-p2p-dkms '
  packages remove
  assert_line --regexp "^nvidia-driver (rc|un) "
  assert_line "nvidia-p2p-dkms ii ${OLD}-1"
  refute_line --regexp '^nvidia-(open-)?kernel-dkms ii '
  step remove apt check
  assert_success
}

@test "(c) an upgrade from a package with the options in the conffile /etc/modprobe.d/nvidia-p2p.conf removes it (changed: kept as .dpkg-bak, and said)" {
  bookworm_machine
  machine layout bookworm repo-old
  local root="${U_DIR}/chroots/layout" old_deb new_deb="${U_DIR}/debs/nvidia-p2p-dkms_${OLD}-1_amd64.deb" conf=etc/modprobe.d/nvidia-p2p.conf
  old_deb=$(package_standin_old_layout "${OLD}" "${U_DIR}/debs")
  # the old layout (a downgrade to OLD-0): the options are a conffile
  dpkg_i layout "${old_deb}"
  assert_success
  # shellcheck disable=SC2016 # dpkg-query's format, not the shell's
  run inside layout dpkg-query -W -f '${Conffiles}\n' nvidia-p2p-dkms
  assert_output --partial "/${conf} "
  assert_file_exist "${root}/${conf}"
  # unchanged: the upgrade removes it; the options now come from /usr/lib
  dpkg_i layout "${new_deb}"
  assert_success
  printf '%s\n' "${output}" >"${U_DIR}/layout.upgrade"
  assert_line "Removing obsolete conffile /${conf} ..."
  assert_file_not_exist "${root}/${conf}"
  assert_file_not_exist "${root}/${conf}.dpkg-bak"
  # shellcheck disable=SC2016 # dpkg-query's format, not the shell's
  run inside layout dpkg-query -W -f '${Conffiles}\n' nvidia-p2p-dkms
  refute_output --partial "/${conf}"
  ours_load layout
  # changed by the admin (P2P off): kept as .dpkg-bak, which modprobe does
  # not read, and postinst says how to keep the changes
  dpkg_i layout "${old_deb}"
  assert_success
  sed -i 's/^options /# options /' "${root}/${conf}"
  dpkg_i layout "${new_deb}"
  assert_success
  printf '%s\n' "${output}" >"${U_DIR}/layout.upgrade-changed"
  assert_line "Obsolete conffile /${conf} has been modified by you."
  assert_output --partial "nvidia-p2p-dkms: your changes to /${conf} are in /${conf}.dpkg-bak"
  assert_file_not_exist "${root}/${conf}"
  assert_file_exist "${root}/${conf}.dpkg-bak"
  ours_load layout
  # removed: Debian's install line (nvidia-kernel-support's, for
  # nvidia-current) runs, and nothing of ours reaches it; purge takes the
  # .dpkg-bak too
  step layout apt remove nvidia-p2p-dkms
  assert_success
  step layout modprobe-install
  printf '%s\n' "${output}" >"${U_DIR}/layout.modprobe-removed"
  assert_line --index 0 --regexp '^install modprobe -i nvidia-current [$]CMDLINE_OPTS *$'
  refute_output --partial "nvidia-p2p"
  refute_output --partial "NVreg_RegistryDwords"
  step layout apt purge nvidia-p2p-dkms
  assert_success
  assert_file_not_exist "${root}/${conf}.dpkg-bak"
}

# --- bad input (issue 27) --------------------------------------------------
# Each from a copy of the bookworm machine (driver OLD, ours OLD-1 from
# repo-old, DKMS: nvidia-p2p/OLD added), with apt's own messages kept in
# U_DIR/<name>.* and printed when a test fails:
#   (d) a repository whose signature fails (InRelease altered after
#       signing; signed by a key the client does not have; not signed):
#       apt-get update errors, the lists of before stay, nothing of ours
#       changes;
#   (e) ours of NEW offered where nvidia-driver is OLD (no nvidia-driver of
#       NEW in bookworm): apt keeps it back, will only take it by removing
#       the driver, and with --no-remove refuses; nothing changes;
#   (f) an interrupted dpkg run (our postinst fails; dpkg killed in our
#       postinst; dpkg --unpack alone): dpkg --configure -a finishes it,
#       DKMS has the module added once, nothing is left half-done.

# dkms_state NAME: what DKMS and the module trees hold in chroot NAME
# (dkms status, the files of /var/lib/dkms, /lib/modules and our /usr/src),
# and what dpkg has left unfinished (dpkg --audit, its journal).
dkms_state() {
  # shellcheck disable=SC2016 # expanded in the chroot
  run inside "$1" bash -c 'set -euo pipefail
    echo "dkms status:"; dkms status
    echo "files:"; { find /var/lib/dkms /lib/modules /usr/src -path "*nvidia*" 2>/dev/null || true; } | LC_ALL=C sort
    echo "audit:"; dpkg --audit || true
    echo "journal:"; find /var/lib/dpkg/updates -type f'
}

# consistent NAME VERSION: in chroot NAME, ours is configured at VERSION
# (OLD-1, OLD-2), DKMS has nvidia-p2p/OLD added (and built nothing), dpkg
# has nothing unfinished and apt no broken dependency.
consistent() {
  packages "$1"
  assert_line "nvidia-p2p-dkms ii $2"
  assert_line --regexp "^nvidia-driver ii ${OLD//./\\.}-"
  dkms_state "$1"
  assert_success
  assert_line --index 1 "nvidia-p2p/${OLD}: added"
  assert_line "/var/lib/dkms/nvidia-p2p/${OLD}/source"
  assert_line "/usr/src/nvidia-p2p-${OLD}/dkms.conf"
  refute_output --partial "${NEW}"
  # dpkg --audit and dpkg's journal empty
  assert_output --regexp $'\naudit:\njournal:$'

  no_dkms_build "$1"
  step "$1" apt check
  assert_success
}

# bad_repo NAME HOW: U_DIR/NAME, repo-new (ours of OLD and NEW) whose
# signature fails: HOW tampered (InRelease and Release changed after
# signing), otherkey (signed by a new key), unsigned (no InRelease, no
# Release.gpg).
bad_repo() {
  local d="${U_DIR}/$1" rel
  rm -rf -- "${d}"
  case $2 in
  otherkey)
    rm -rf -- "${U_DIR}/gnupg-other"
    mkdir -m 0700 "${U_DIR}/gnupg-other"
    GNUPGHOME="${U_DIR}/gnupg-other" "${REPO_ROOT}/build.sh" --cache-dir "${U_DIR}/build-cache" repo "${d}" \
      "${U_DIR}/debs/nvidia-p2p-dkms_${OLD}-1_amd64.deb" "${U_DIR}/debs/nvidia-p2p-dkms_${NEW}-1_amd64.deb" \
      --generate-key --url file:/srv/p2p >/dev/null 2>&1
    GNUPGHOME="${U_DIR}/gnupg-other" gpgconf --kill gpg-agent >/dev/null 2>&1 || true
    ;;
  tampered)
    cp -a "${U_DIR}/repo-new" "${d}"
    rel="${d}/dists/stable"
    sed -i 's/^Origin: nvidia-p2p$/Origin: nvidia-p2q/' "${rel}/InRelease" "${rel}/Release"
    grep -q '^Origin: nvidia-p2q$' "${rel}/InRelease"
    ;;
  unsigned)
    cp -a "${U_DIR}/repo-new" "${d}"
    rm -- "${d}/dists/stable/InRelease" "${d}/dists/stable/Release.gpg"
    ;;
  esac
}

@test "(d) a repository whose signature fails: apt-get update warns (errors with --error-on=any, or with no lists of before), keeps the lists of before; nothing of ours changes" {
  bookworm_machine
  local root="${U_DIR}/chroots/sig" fresh="${U_DIR}/chroots/sigfresh" how before
  machine sig bookworm repo-old
  machine sigfresh base repo-old
  dkms_state sig
  before=${output}
  for how in tampered otherkey unsigned; do
    bad_repo "repo-${how}" "${how}"
    # the clients keep their keyring (repo-old's key); the repository changes
    printf '%s\n' "repo-${how}" >"${root}.repo"
    printf '%s\n' "repo-${how}" >"${fresh}.repo"
    # with the lists of an update before: a warning, exit 0, those lists stay
    run inside sig apt-get -q update
    printf '%s\n' "${output}" >"${U_DIR}/sig.${how}"
    case ${how} in
    tampered)
      assert_success
      assert_line --regexp "^W: An error occurred during the signature verification\. The repository is not updated and the previous index files will be used\. GPG error: file:/srv/p2p stable InRelease: The following signatures were invalid: BADSIG [0-9A-F]{16} "
      ;;
    otherkey)
      assert_success
      assert_line --regexp "^W: An error occurred during the signature verification\. The repository is not updated and the previous index files will be used\. GPG error: file:/srv/p2p stable InRelease: The following signatures couldn't be verified because the public key is not available: NO_PUBKEY [0-9A-F]{16}$"
      ;;
    unsigned)
      assert_failure 100
      assert_line "E: The repository 'file:/srv/p2p stable Release' is no longer signed."
      ;;
    esac
    # --error-on=any: an error (exit 100)
    run inside sig apt-get -q --error-on=any update
    printf '%s\n' "${output}" >"${U_DIR}/sig.${how}.error-on"
    assert_failure 100
    [[ ${how} == unsigned ]] || assert_line --regexp "^E: Failed to fetch file:/srv/p2p/dists/stable/InRelease  The following signatures "
    # no lists before (a new machine): an error
    run inside sigfresh apt-get -q update
    printf '%s\n' "${output}" >"${U_DIR}/sigfresh.${how}"
    printf 'status %s\n' "${status}" >>"${U_DIR}/sigfresh.${how}"
    assert_failure 100
    case ${how} in
    tampered | otherkey) assert_line --regexp "^E: The repository 'file:/srv/p2p stable InRelease' is not signed\.$" ;;
    unsigned) assert_line --regexp "^E: The repository 'file:/srv/p2p stable Release' is not signed\.$" ;;
    esac
    run inside sigfresh apt-get -q -s install nvidia-p2p-dkms
    assert_failure 100
    assert_line "E: Unable to locate package nvidia-p2p-dkms"
    assert_file_not_exist "${fresh}/usr/src/nvidia-p2p-${OLD}"
    assert_file_not_exist "${fresh}/var/lib/dkms"
    # the lists of repo-old stay: ours of NEW is not seen, nothing to do
    run inside sig apt-cache policy nvidia-p2p-dkms
    assert_line --regexp "^  Candidate: ${OLD//./\\.}-1$"
    refute_output --partial "${NEW}"
    step sig apt full-upgrade
    assert_success
    assert_line --regexp '^0 upgraded, 0 newly installed, 0 to remove'
    run inside sig apt-get -q -s install "nvidia-p2p-dkms=${NEW}-1"
    assert_failure 100
    assert_line "E: Version '${NEW}-1' for 'nvidia-p2p-dkms' was not found"
    consistent sig "${OLD}-1"
    dkms_state sig
    assert_equal "${output}" "${before}"
  done
}

@test "(e) ours of trixie's version offered on bookworm (nvidia-driver of the old one): apt keeps it back, takes it only by removing the driver, refuses with --no-remove; nothing changes" {
  bookworm_machine
  local before
  machine tag bookworm repo-new
  dkms_state tag
  before=${output}
  run inside tag apt-get -q update
  assert_success
  run inside tag apt-cache policy nvidia-p2p-dkms
  assert_line --regexp "^  Candidate: ${NEW//./\\.}-1$"
  # apt-get upgrade: kept back
  step tag apt upgrade
  assert_success
  printf '%s\n' "${output}" >"${U_DIR}/tag.upgrade"
  assert_line "The following packages have been kept back:"
  assert_line --regexp '^  nvidia-p2p-dkms$'
  assert_line --regexp '^0 upgraded, 0 newly installed, 0 to remove and 1 not upgraded\.$'
  # apt-get install: only by removing the driver (simulated)
  run inside tag apt-get -q -s install nvidia-p2p-dkms
  assert_success
  printf '%s\n' "${output}" >"${U_DIR}/tag.install-s"
  assert_line --regexp "^Remv nvidia-driver \[${OLD//./\\.}-"
  assert_line --regexp "^Inst nvidia-p2p-dkms \[${OLD//./\\.}-1\] \(${NEW//./\\.}-1 "
  # --no-remove: refused
  run inside tag env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-remove install nvidia-p2p-dkms
  printf '%s\n' "${output}" >"${U_DIR}/tag.install-no-remove"
  assert_failure 100
  assert_line "E: Packages need to be removed but remove is disabled."
  consistent tag "${OLD}-1"
  dkms_state tag
  assert_equal "${output}" "${before}"
  # apt-get -y install: apt does it, the userspace of OLD stays beside ours
  # of NEW (nothing in ours depends on the driver's version)
  step tag apt install nvidia-p2p-dkms
  assert_success
  printf '%s\n' "${output}" >"${U_DIR}/tag.install"
  assert_line --regexp "^Removing nvidia-driver \(${OLD//./\\.}-"
  assert_line --regexp "^Setting up nvidia-p2p-dkms \(${NEW//./\\.}-1\)"
  packages tag
  assert_line "nvidia-p2p-dkms ii ${NEW}-1"
  assert_line --regexp "^nvidia-driver (rc|un) "
  assert_line --regexp "^nvidia-kernel-support ii ${OLD//./\\.}-"
  dkms_state tag
  printf '%s\n' "${output}" >"${U_DIR}/tag.install.state"
  assert_line --index 1 "nvidia-p2p/${NEW}: added"
  refute_output --partial "nvidia-p2p/${OLD}"
  refute_output --partial "nvidia-p2p-${OLD}"
  assert_output --regexp $'\naudit:\njournal:$'
  no_dkms_build tag
}

# package_standin_failing TAG OUT: nvidia-p2p-dkms_TAG-2_amd64.deb in OUT,
# package_standin's, whose postinst, after its work and before its exit 0,
# exits 1 when /tmp/nvidia-p2p-fail exists, or kills dpkg (its parent)
# when that file says "kill". Prints its path.
package_standin_failing() {
  package_standin "$1" "$2" 2 failing_postinst
}

# failing_postinst DIR: the postinst of package_standin's tree DIR fails as
# package_standin_failing says.
failing_postinst() {
  # shellcheck disable=SC2016 # the postinst's shell expands it
  sed -i '$i\
if [ -e /tmp/nvidia-p2p-fail ]; then\
	if [ "$(cat /tmp/nvidia-p2p-fail)" = kill ]; then kill -9 "$PPID"; fi\
	echo "nvidia-p2p-dkms: failing as the test asked" >&2\
	exit 1\
fi' "$1/DEBIAN/postinst"
  grep -q '^exit 0$' <(tail -n 1 "$1/DEBIAN/postinst")
}

@test "(f) an interrupted dpkg run (postinst fails, dpkg killed in postinst, unpack alone): dpkg --configure -a finishes it, DKMS consistent" {
  bookworm_machine
  local root="${U_DIR}/chroots/cut" deb how
  deb=$(package_standin_failing "${OLD}" "${U_DIR}/debs")
  machine cut bookworm repo-old
  for how in fail kill; do
    printf '%s\n' "${how}" >"${root}/tmp/nvidia-p2p-fail"
    dpkg_i cut "${deb}"
    printf '%s\n' "${output}" >"${U_DIR}/cut.${how}"
    if [[ ${how} == fail ]]; then
      assert_failure 1
      assert_line "nvidia-p2p-dkms: failing as the test asked"
      assert_line --regexp "^dpkg: error processing package nvidia-p2p-dkms \(--install\):$"
    else
      assert_failure 137
    fi
    packages cut
    assert_line "nvidia-p2p-dkms iF ${OLD}-2"
    dkms_state cut
    printf '%s\n' "${output}" >"${U_DIR}/cut.${how}.state"
    assert_line --index 1 "nvidia-p2p/${OLD}: added"
    assert_line --regexp "^The following packages are only half configured"
    # apt's own word on it: dpkg's journal (kill) stops it before it does
    # anything; a failed postinst is configured again with what apt does
    if [[ ${how} == kill ]]; then
      run inside cut env DEBIAN_FRONTEND=noninteractive apt-get -q -y install hello
      printf '%s\n' "${output}" >"${U_DIR}/cut.${how}.apt"
      assert_failure 100
      assert_line --regexp "^E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem\."
      assert_file_not_exist "${root}/usr/bin/hello"
    else
      run inside cut apt-get -q -s install hello
      printf '%s\n' "${output}" >"${U_DIR}/cut.${how}.apt"
      assert_success
      assert_line "1 not fully installed or removed."
      assert_line --regexp "^Conf nvidia-p2p-dkms \(${OLD//./\\.}-2 "
    fi
    rm -- "${root}/tmp/nvidia-p2p-fail"
    run inside cut dpkg --configure -a
    printf '%s\n' "${output}" >"${U_DIR}/cut.${how}.configure"
    assert_success
    assert_line --regexp "^Setting up nvidia-p2p-dkms \(${OLD//./\\.}-2\)"
    consistent cut "${OLD}-2"
    # back to OLD-1 for the next round
    dpkg_i cut "${U_DIR}/debs/nvidia-p2p-dkms_${OLD}-1_amd64.deb"
    assert_success
  done
  # dpkg --unpack alone: OLD-1's prerm took the registration away, the
  # files are in; dpkg --configure -a adds the module again
  cp "${deb}" "${root}/tmp/"
  run inside cut dpkg --unpack "/tmp/${deb##*/}"
  assert_success
  packages cut
  assert_line "nvidia-p2p-dkms iU ${OLD}-2"
  dkms_state cut
  printf '%s\n' "${output}" >"${U_DIR}/cut.unpack.state"
  assert_line --regexp "^The following packages have been unpacked but not yet configured"
  # OLD-1's prerm took the module out of DKMS; the files are in /usr/src
  assert_line --index 1 "files:"
  assert_line "/usr/src/nvidia-p2p-${OLD}/dkms.conf"
  run inside cut dpkg --configure -a
  printf '%s\n' "${output}" >"${U_DIR}/cut.unpack.configure"
  assert_success
  consistent cut "${OLD}-2"
}

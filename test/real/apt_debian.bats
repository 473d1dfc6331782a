#!/usr/bin/env bats
# Debian's real driver packages against nvidia-p2p-dkms's control fields,
# resolved by the real apt with Debian's real package lists (bookworm and
# trixie: main, contrib, non-free, non-free-firmware), in a private apt
# directory (nothing on this machine changes; apt only simulates). The
# package is a stand-in carrying the control file `build.sh package` writes
# (deb_control), so no driver build is needed. For each userspace -
# nvidia-driver of bookworm and of trixie, nvidia-tesla-535-driver of trixie,
# at the version the suite offers today - apt must take our package for the
# kernel modules (none of Debian's kernel module packages), and bring the GSP
# firmware of that version. Without our package apt picks Debian's kernel
# module package (the dependency is real, the test can fail). A version that
# versions.conf does not list is SKIPped, naming it; no network SKIPs.
#
# Fast (package lists: about 10 MB a suite, seconds); it needs no time from
# the matrix's budget.

load ../test_helper
load debian_pkg

setup_file() {
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  export APT_BASE="${BATS_FILE_TMPDIR}/apt"
  local suite
  for suite in bookworm trixie; do
    apt_dir "${suite}" >"${BATS_FILE_TMPDIR}/update-${suite}.log" 2>&1 || true
  done
}

# apt_dir SUITE: a private apt state for SUITE's four components, updated.
apt_dir() {
  local d="${APT_BASE}/$1"
  mkdir -p "${d}/lists/partial" "${d}/cache/archives/partial" "${d}/preferences.d"
  : >"${d}/status"
  printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] https://deb.debian.org/debian %s main contrib non-free non-free-firmware\n' "$1" >"${d}/sources.list"
  # shellcheck disable=SC2046 # one option word per line
  apt-get $(apt_opts "$1") -q update
}

# apt_opts SUITE: apt's options for its private state (one word each).
apt_opts() {
  local d="${APT_BASE}/$1"
  printf '%s\n' -o "Dir::Etc::SourceList=${d}/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o "Dir::State::Lists=${d}/lists" -o "Dir::Cache=${d}/cache" -o "Dir::State::status=${d}/status" \
    -o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=${d}/preferences.d" \
    -o APT::Architecture=amd64 -o APT::Architectures::=amd64
}

# suite_ready SUITE: its lists are there, else skip with apt's last line.
suite_ready() {
  command -v apt-get >/dev/null 2>&1 || skip "apt-get is not installed"
  compgen -G "${APT_BASE}/$1/lists/*_Packages*" >/dev/null ||
    skip "no package lists of Debian $1 (offline?): $(tail -n 1 "${BATS_FILE_TMPDIR}/update-$1.log")"
}

# driver_tag SUITE PACKAGE: the upstream version of PACKAGE in SUITE.
driver_tag() {
  local v
  # shellcheck disable=SC2046 # one option word per line
  v=$(apt-cache $(apt_opts "$1") policy "$2" | sed -n 's/^  Candidate: //p')
  [[ -n ${v} && ${v} != "(none)" ]] || return 1
  v=${v#*:}
  printf '%s\n' "${v%%-*}"
}

# standin_deb TAG: nvidia-p2p-dkms_TAG-1_amd64.deb with the real control file.
standin_deb() {
  local tag=$1 pkg="${BATS_TEST_TMPDIR}/pkg" text
  local out="${BATS_TEST_TMPDIR}/nvidia-p2p-dkms_${tag}-1_amd64.deb"
  mkdir -p "${pkg}/DEBIAN"
  text=$(control_text "${tag}" "${pkg}") || return $?
  printf '%s\n' "${text}" >"${pkg}/DEBIAN/control"
  dpkg-deb --root-owner-group --build "${pkg}" "${out}" >/dev/null
  printf '%s\n' "${out}"
}

# resolves SUITE DRIVER KMOD FIRMWARE: apt installs DRIVER at the suite's
# version with our package for the modules (no KMOD) and FIRMWARE of it.
resolves() {
  local suite=$1 driver=$2 kmod=$3 firmware=$4 tag deb rc=0
  suite_ready "${suite}"
  tag=$(driver_tag "${suite}" "${driver}") || skip "Debian ${suite} has no ${driver}"
  deb=$(standin_deb "${tag}") || rc=$?
  [[ ${rc} -ne 3 ]] || skip "Debian ${suite}'s ${driver} is ${tag}, which versions.conf does not list"
  [[ ${rc} -eq 0 ]] || fail "the stand-in package of ${tag} could not be made"
  # shellcheck disable=SC2046 # one option word per line
  run apt-get $(apt_opts "${suite}") -s install "${driver}" "${deb}"
  assert_success
  assert_line --regexp "^Inst ${driver} \(${tag}-"
  assert_line --regexp "^Inst nvidia-p2p-dkms \(${tag}-1 "
  assert_line --regexp "^Inst ${firmware} \(${tag}-"
  refute_line --regexp "^Inst ${kmod} "
  refute_line --regexp "^Inst nvidia-(open-)?kernel-dkms "
  # without ours, Debian's kernel module package is what apt takes
  # shellcheck disable=SC2046 # one option word per line
  run apt-get $(apt_opts "${suite}") -s install "${driver}"
  assert_success
  assert_line --regexp "^Inst (${kmod}|nvidia-open-kernel-dkms|nvidia-tesla-535-open-kernel-dkms) "
}

@test "apt: bookworm's nvidia-driver takes nvidia-p2p-dkms of its version for the modules, and firmware-nvidia-gsp" {
  resolves bookworm nvidia-driver nvidia-kernel-dkms firmware-nvidia-gsp
}

@test "apt: trixie's nvidia-driver takes nvidia-p2p-dkms of its version for the modules, and firmware-nvidia-gsp" {
  resolves trixie nvidia-driver nvidia-kernel-dkms firmware-nvidia-gsp
}

@test "apt: trixie's nvidia-tesla-535-driver takes nvidia-p2p-dkms of its version, and the tesla GSP firmware" {
  resolves trixie nvidia-tesla-535-driver nvidia-tesla-535-kernel-dkms firmware-nvidia-tesla-535-gsp
}

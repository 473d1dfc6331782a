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
# module package (the dependency is real, the test can fail). Then the swap
# on a machine that has the driver (issue 27): apt's simulations go on from
# a dpkg status and apt's auto marks as apt would leave them (apt_applied):
# the driver installed as apt installs it (its kernel module package, the
# support package and what they need marked automatic), ours in place of the
# kernel module package, then `apt-get autoremove` must remove nothing; with
# a control file that lacks the support relation it removes
# nvidia-kernel-support, nvidia-kernel-common and nvidia-modprobe. And the
# .run userspace: ours alone takes no Debian NVIDIA package but the GSP
# firmware (no nvidia-installer-cleanup, whose hook stops NVIDIA's
# installer). A version that versions.conf does not list is SKIPped, naming
# it; no network SKIPs.
#
# No build, no root (package lists: about 10 MB a suite, seconds; each
# simulation resolves a whole driver: here, on 2 cores busy with kernel
# builds, about 15 s a test, 2 minutes in all); it needs no time from the
# matrix's budget.

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

# apt_opts SUITE [STATE]: apt's options for its private state (one word
# each); dpkg's status and apt's auto marks in STATE (default: the suite's
# directory, where nothing is installed).
apt_opts() {
  local d="${APT_BASE}/$1" s=${2:-${APT_BASE}/$1}
  printf '%s\n' -o "Dir::Etc::SourceList=${d}/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o "Dir::State::Lists=${d}/lists" -o "Dir::Cache=${d}/cache" \
    -o "Dir::State::status=${s}/status" -o "Dir::State::extended_states=${s}/extended_states" \
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

# marked STATE: the packages installed in STATE and marked automatic, then
# "manual:" and those installed by hand (dpkg's status, apt's marks).
marked() {
  awk 'BEGIN { RS = ""; FS = "\n" }
    FILENAME ~ /extended_states$/ { if ($0 ~ /\nAuto-Installed: 1/) { split($1, p, ": "); auto[p[2]] = 1 }; next }
    { split($1, p, ": "); if (p[2] in auto) print p[2]; else manual = manual " " p[2] }
    END { print "manual:" manual }' "$1/extended_states" "$1/status"
}

# swap_keeps SUITE STATE DEB KMOD DRIVER: on (a copy of) the machine in
# STATE, apt installs DEB in KMOD's place and keeps DRIVER; after that,
# apt-get autoremove removes nothing.
swap_keeps() {
  local suite=$1 state=$2 deb=$3 kmod=$4 driver=$5 tag swap="$2.swap"
  local -a opts
  tag=$(dpkg-deb -f "${deb}" Version)
  rm -rf "${swap}"
  cp -a "${state}" "${swap}"
  mapfile -t opts < <(apt_opts "${suite}" "${swap}")
  run apt-get "${opts[@]}" -s install "${deb}"
  assert_success
  assert_line --regexp "^Remv ${kmod} "
  assert_line --regexp "^Inst nvidia-p2p-dkms \(${tag} "
  refute_line --regexp "^Remv ${driver} "
  printf '%s\n' "${output}" >"${swap}/swap.sim"
  apt_applied "${swap}" "${swap}/swap.sim" nvidia-p2p-dkms "${deb}" "${opts[@]}"
  run apt-get "${opts[@]}" -s autoremove
  assert_success
  refute_line --regexp '^Remv '
}

# keeps SUITE DRIVER KMOD: a machine where apt installed DRIVER with KMOD,
# KMOD's support package and the rest automatically (its recommendations
# left out: faster, and what only KMOD kept comes with its Depends), then
# ours in KMOD's place: apt-get autoremove removes nothing. Then the same
# machine as `apt install KMOD` leaves it (KMOD by hand, DRIVER as its
# recommendation), and the same swap.
keeps() {
  local suite=$1 driver=$2 kmod=$3 tag deb rc=0 state="${BATS_TEST_TMPDIR}/state"
  local -a opts
  suite_ready "${suite}"
  tag=$(driver_tag "${suite}" "${driver}") || skip "Debian ${suite} has no ${driver}"
  deb=$(standin_deb "${tag}") || rc=$?
  [[ ${rc} -ne 3 ]] || skip "Debian ${suite}'s ${driver} is ${tag}, which versions.conf does not list"
  [[ ${rc} -eq 0 ]] || fail "the stand-in package of ${tag} could not be made"
  mkdir -p "${state}"
  : >"${state}/status"
  : >"${state}/extended_states"
  mapfile -t opts < <(apt_opts "${suite}" "${state}")
  apt-get "${opts[@]}" -o APT::Install-Recommends=false -s install "${driver}" >"${state}/first.sim"
  apt_applied "${state}" "${state}/first.sim" "${driver}" "" "${opts[@]}"
  # the machine the issue describes: the kernel module package, its support
  # package and the helpers that came with them, marked automatic
  run marked "${state}"
  assert_line "${kmod}"
  assert_line --regexp '^nvidia-(tesla-[0-9]+-)?kernel-support$'
  assert_line nvidia-kernel-common
  assert_line nvidia-modprobe
  assert_line "manual: ${driver}"
  swap_keeps "${suite}" "${state}" "${deb}" "${kmod}" "${driver}"
  # `apt install KMOD`: KMOD by hand, the driver automatic
  awk -v d="${driver}" -v k="${kmod}" 'BEGIN { RS = ""; FS = "\n"; ORS = "\n\n" }
    $1 != "Package: " k { print }
    END { printf "Package: %s\nArchitecture: amd64\nAuto-Installed: 1\n\n", d }' \
    "${state}/extended_states" >"${state}/marks"
  mv "${state}/marks" "${state}/extended_states"
  run marked "${state}"
  assert_line "${driver}"
  assert_line "manual: ${kmod}"
  swap_keeps "${suite}" "${state}" "${deb}" "${kmod}" "${driver}"
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

@test "apt: bookworm's nvidia-driver with nvidia-kernel-dkms, then nvidia-p2p-dkms in its place: apt-get autoremove removes nothing" {
  keeps bookworm nvidia-driver nvidia-kernel-dkms
}

@test "apt: trixie's nvidia-driver with nvidia-kernel-dkms, then nvidia-p2p-dkms in its place: apt-get autoremove removes nothing" {
  keeps trixie nvidia-driver nvidia-kernel-dkms
}

@test "apt: trixie's nvidia-tesla-535-driver with its kernel module package, then nvidia-p2p-dkms: apt-get autoremove removes nothing" {
  keeps trixie nvidia-tesla-535-driver nvidia-tesla-535-kernel-dkms
}

@test "apt: the .run userspace: nvidia-p2p-dkms alone on bookworm takes dkms and the GSP firmware, no other Debian NVIDIA package" {
  local tag deb rc=0
  suite_ready bookworm
  tag=$(driver_tag bookworm nvidia-driver) || skip "Debian bookworm has no nvidia-driver"
  deb=$(standin_deb "${tag}") || rc=$?
  [[ ${rc} -ne 3 ]] || skip "Debian bookworm's nvidia-driver is ${tag}, which versions.conf does not list"
  [[ ${rc} -eq 0 ]] || fail "the stand-in package of ${tag} could not be made"
  # the worst case: Debian has every package of this version (recommendations on)
  # shellcheck disable=SC2046 # one option word per line
  run apt-get $(apt_opts bookworm) -o APT::Install-Recommends=true -s install "${deb}"
  assert_success
  assert_line --regexp "^Inst nvidia-p2p-dkms \(${tag}-1 "
  assert_line --regexp '^Inst dkms '
  assert_line --regexp "^Inst firmware-nvidia-gsp \(${tag}-"
  refute_line --regexp '^Inst (nvidia-installer-cleanup|glx-diversions|nvidia-alternative|nvidia-kernel-support|nvidia-kernel-common|nvidia-modprobe|nvidia-driver|libcuda1) '
}

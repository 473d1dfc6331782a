#!/usr/bin/env bats
# install --no-dkms and uninstall: what they write, the transaction (rollback
# on failure and on signals), root, Secure Boot, version agreement. The DKMS
# install (the default) is in dkms.bats, signing in sign.bats.

load ../test_helper

setup() {
  prepared_setup install_env install_state
}

install_env() {
  export STANDIN_ROOT="${ROOT}"
  RUNFILE="${FIX}/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  MODDIR="${ROOT}/lib/modules/${FIXTURE_KREL}/updates/nvidia-p2p"
}

# Fetched and built, as root; a previous state to be preserved: another
# install's options, an index, an initramfs.
install_state() {
  fetch_and_build
  as_root
  mkdir -p "${ROOT}/etc/modprobe.d" "${ROOT}/boot"
  printf 'options nvidia previous=1\n' >"${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  printf 'old index\n' >"${ROOT}/lib/modules/${FIXTURE_KREL}/modules.dep"
  printf 'old initrd\n' >"${ROOT}/boot/initrd.img-${FIXTURE_KREL}"
}

install_fixture() {
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}"
}

assert_previous_state() {
  assert_not_exist "${MODDIR}"
  assert_not_exist "${ROOT}/etc/depmod.d/nvidia-p2p.conf"
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_output 'options nvidia previous=1'
  run cat "${ROOT}/lib/modules/${FIXTURE_KREL}/modules.dep"
  assert_output 'old index'
  run cat "${ROOT}/boot/initrd.img-${FIXTURE_KREL}"
  assert_output 'old initrd'
  assert_not_exist "${ROOT}/var/lib/nvidia-p2p/installed-${FIXTURE_KREL}"
  assert_equal "$(find "${ROOT}/var/lib/nvidia-p2p" -name 'txn.*' 2>/dev/null | wc -l)" 0
}

@test "install puts modules, depmod override, P2P options and the userspace driver in place" {
  install_fixture
  assert_success
  local m
  for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
    assert_file_exist "${MODDIR}/${m}.ko"
  done
  run cat "${ROOT}/etc/depmod.d/nvidia-p2p.conf"
  assert_line 'override nvidia * updates/nvidia-p2p'
  assert_line 'override nvidia_uvm * updates/nvidia-p2p'
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_output --partial 'options nvidia NVreg_RegistryDwords="RMForceP2PType=2"'
  assert_output --partial "for driver ${FIXTURE_TAG}"
  assert_file_exist "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${FIXTURE_TAG}"
  assert_file_exist "${ROOT}/var/lib/nvidia-p2p/installed-${FIXTURE_KREL}"
  run cat "${STUB_LOG}"
  assert_line "depmod -a -b ${ROOT} -C ${ROOT}/etc/depmod.d ${FIXTURE_KREL}"
  assert_line "update-initramfs -u -k ${FIXTURE_KREL}"
  assert_line "standin.run --silent --no-kernel-modules"
  assert_equal "$(find "${ROOT}/var/lib/nvidia-p2p" -name 'txn.*' | wc -l)" 0
}

@test "the .run runs after the modules are in place and the index rebuilt" {
  install_fixture
  assert_success
  run grep -n -E '^(depmod|update-initramfs|standin.run)' "${STUB_LOG}"
  assert_line --index 0 --partial "depmod"
  assert_line --index 1 --partial "update-initramfs"
  assert_line --index 2 --partial "standin.run"
}

@test "install as a normal user is refused (10) and changes nothing" {
  as_user
  install_fixture
  assert_failure 10
  assert_output --partial "install needs root"
  assert_previous_state
}

@test "install holds the cache's lock: a build of the cache waits for it, and it waits for a build (11 at once)" {
  hold_lock "${CACHE}/build.lock" 20
  install_fixture
  release_lock
  assert_failure 11
  assert_output --partial "another build.sh run holds the lock ${CACHE}/build.lock"
  assert_previous_state
}

@test "install creates no lock file in a cache that has none (root writes nothing into a user's cache)" {
  rm -f "${CACHE}/build.lock"
  install_fixture
  assert_success
  assert_not_exist "${CACHE}/build.lock"
}

@test "install of a tag that was not built is refused (10)" {
  rm -rf "${WORK}/${FIXTURE_TAG}/modules-${FIXTURE_KREL}"
  install_fixture
  assert_failure 10
  assert_output --partial "run: build.sh build ${FIXTURE_TAG}"
  assert_previous_state
}

@test "Secure Boot enabled with no key to sign is refused (10), naming the ways out" {
  stub mokutil - <<<'echo "SecureBoot enabled"'
  install_fixture
  assert_failure 10
  assert_output --partial "Secure Boot is enabled and no key would sign the modules"
  assert_output --partial "--sign-key FILE --sign-cert FILE, or --sign-generate"
  assert_previous_state
}

@test "Secure Boot is read from efivars when mokutil is missing" {
  local efi="${BATS_TEST_TMPDIR}/sys/firmware/efi/efivars"
  mkdir -p "${efi}"
  printf '\x06\x00\x00\x00\x01' >"${efi}/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
  NVP2P_SYSFS="${BATS_TEST_TMPDIR}/sys" PATH="$(path_without mokutil)" install_fixture
  assert_failure 10
  assert_output --partial "Secure Boot is enabled"
}

@test "a failing .run installer rolls everything back (9)" {
  STANDIN_FAIL=1 install_fixture
  assert_failure 9
  assert_output --partial "userspace installer"
  assert_output --partial "rolled back"
  assert_previous_state
}

@test "a rollback removes what the install made where nothing was: directories, depmod's index files" {
  local k="${ROOT}/lib/modules/${FIXTURE_KREL}"
  rm -rf "${ROOT}/etc/modprobe.d" "${ROOT}/etc/depmod.d" "${k}/updates" "${k}"/modules.*
  local before
  before=$(cd "${ROOT}" && find . | LC_ALL=C sort)
  FAKE_DEPMOD_INDEX=1 STANDIN_FAIL=1 install_fixture
  assert_failure 9
  assert_output --partial "rolled back"
  # The state directory stays, with the install lock in it (and /var/lib).
  local -a state=(-e ./var -e ./var/lib -e ./var/lib/nvidia-p2p -e ./var/lib/nvidia-p2p/build.lock)
  assert_equal "$(cd "${ROOT}" && find . | LC_ALL=C sort | grep -v -x -F "${state[@]}")" \
    "$(grep -v -x -F "${state[@]}" <<<"${before}")"
}

@test "a .run that installs another userspace version rolls back (12): no version mismatch is left" {
  STANDIN_VERSION=999.10.02 install_fixture
  assert_failure 12
  assert_output --partial "Driver/library version mismatch"
  assert_output --partial "rolled back"
  assert_output --partial "was not undone"
  assert_previous_state
}

@test "a failing depmod rolls back (9)" {
  FAKE_DEPMOD_FAIL=1 install_fixture
  assert_failure 9
  assert_output --partial "depmod failed"
  assert_previous_state
  run grep -c standin.run "${STUB_LOG}"
  assert_output 0
}

@test "a failing initramfs update rolls back (9) before the userspace step" {
  FAKE_INITRAMFS_FAIL=1 install_fixture
  assert_failure 9
  assert_previous_state
  run grep -c standin.run "${STUB_LOG}"
  assert_output 0
}

@test "SIGTERM during the install rolls back (130)" {
  STANDIN_SLEEP=3 "${BUILD_SH}" --cache-dir "${CACHE}" --work-dir "${WORK}" --root "${ROOT}" \
    --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" >"${BATS_TEST_TMPDIR}/out" 2>&1 &
  local pid=$!
  for _ in $(seq 1 100); do
    grep -q standin.run "${STUB_LOG}" && break
    sleep 0.1
  done
  kill -TERM "${pid}"
  local rc=0
  wait "${pid}" || rc=$?
  assert_equal "${rc}" 130
  run cat "${BATS_TEST_TMPDIR}/out"
  assert_output --partial "interrupted"
  assert_output --partial "rolled back"
  assert_previous_state
}

@test "real modprobe: with Debian's redirect to nvidia-current installed, modprobe nvidia still loads ours" {
  local modprobe
  modprobe=$(PATH="/usr/sbin:/sbin:${PATH}" command -v modprobe) || skip "modprobe (kmod) is not installed"
  install_fixture
  assert_success
  # The shape of Debian's nvidia-kernel-support modprobe file (535.261.03),
  # active as /etc/modprobe.d/nvidia.conf through its alternatives.
  printf 'install nvidia modprobe -i nvidia-current %s\n' "\$CMDLINE_OPTS" >"${ROOT}/etc/modprobe.d/nvidia.conf"
  printf 'install nvidia-uvm modprobe nvidia ; modprobe -i nvidia-current-uvm %s\n' "\$CMDLINE_OPTS" >>"${ROOT}/etc/modprobe.d/nvidia.conf"
  printf 'alias pci:v000010DEd*sv*sd*bc03sc00i00* nvidia\n' >>"${ROOT}/etc/modprobe.d/nvidia.conf"
  run "${modprobe}" -C "${ROOT}/etc/modprobe.d" -d "${ROOT}" -S "${FIXTURE_KREL}" --show-depends nvidia
  assert_output --partial "install modprobe -i nvidia \$CMDLINE_OPTS NVreg_RegistryDwords=\"RMForceP2PType=2\""
  run "${modprobe}" -C "${ROOT}/etc/modprobe.d" -d "${ROOT}" -S "${FIXTURE_KREL}" --show-depends nvidia-uvm
  assert_output --partial "install modprobe -i nvidia-uvm \$CMDLINE_OPTS"
  # without our file, Debian's redirect wins: the check above can fail
  rm "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  run "${modprobe}" -C "${ROOT}/etc/modprobe.d" -d "${ROOT}" -S "${FIXTURE_KREL}" --show-depends nvidia
  assert_output --partial 'install modprobe -i nvidia-current'
}

@test "--no-userspace requires the installed userspace to be the same version (12)" {
  mkdir -p "${ROOT}/usr/lib/x86_64-linux-gnu"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --no-userspace
  assert_failure 12
  assert_output --partial "userspace driver version is '550.54.14'"
  assert_previous_state
}

@test "--no-userspace with the matching userspace installs the modules only" {
  mkdir -p "${ROOT}/usr/lib/x86_64-linux-gnu"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${FIXTURE_TAG}"
  gsp_firmware "${FIXTURE_TAG}"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --no-userspace
  assert_success
  assert_file_exist "${MODDIR}/nvidia.ko"
  run grep -c standin.run "${STUB_LOG}"
  assert_output 0
}

@test "two userspace versions side by side count as a mismatch (12)" {
  mkdir -p "${ROOT}/usr/lib64"
  touch "${ROOT}/usr/lib64/libcuda.so.535.261.03"
  install_fixture
  assert_failure 12
  assert_output --partial "535.261.03 ${FIXTURE_TAG}"
  assert_previous_state
}

# debian_userspace VERSION: dpkg answers as with Debian's libnvidia-ml1 and
# libcuda1 of VERSION installed (their files in nvidia/current, as the real
# 535.261.03 packages ship them).
debian_userspace() {
  export DEB_VERSION=$1
  local d="${ROOT}/usr/lib/x86_64-linux-gnu/nvidia/current"
  mkdir -p "${d}"
  touch "${d}/libnvidia-ml.so.${1%-*}" "${d}/libcuda.so.${1%-*}"
  stub dpkg-query - <<'STUB'
case " $* " in
*" -S "*)
  printf 'libnvidia-ml1:amd64: /usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1\n'
  printf 'libcuda1:amd64: /usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1\n'
  ;;
*" -W "*) printf '%s\n' "${DEB_VERSION}" ;;
*) exit 1 ;;
esac
STUB
}

@test "--userspace run: packaged NVIDIA userspace libraries are refused up front (10) with the removal command" {
  debian_userspace "${FIXTURE_TAG}-1"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --userspace run
  assert_failure 10
  assert_output --partial "installed by packages (libcuda1 libnvidia-ml1)"
  assert_output --partial "sudo apt-get purge libcuda1 libnvidia-ml1"
  assert_previous_state
}

@test "Debian's packaged userspace of the same version is kept (auto): no .run, the modules installed" {
  debian_userspace "${FIXTURE_TAG}-1"
  gsp_firmware "${FIXTURE_TAG}"
  install_fixture
  assert_success
  assert_output --partial "userspace driver: kept: packages libcuda1 libnvidia-ml1 (${FIXTURE_TAG})"
  assert_file_exist "${MODDIR}/nvidia.ko"
  run grep -c standin.run "${STUB_LOG}"
  assert_output 0
}

@test "a kept userspace without its GSP firmware is refused (10), naming the firmware packages" {
  debian_userspace "${FIXTURE_TAG}-1"
  install_fixture
  assert_failure 10
  assert_output --partial "no GSP firmware of ${FIXTURE_TAG} in /lib/firmware/nvidia/${FIXTURE_TAG}"
  assert_output --partial "sudo apt-get install firmware-nvidia-gsp-${FIXTURE_TAG}"
  assert_output --partial "nvidia-firmware-${FIXTURE_TAG%%.*}-server-${FIXTURE_TAG} beside the -server driver"
  assert_output --partial "nvidia-firmware-999-${FIXTURE_TAG}"
  assert_previous_state
}

@test "packages of another supported version are refused (12) before anything changes: install their tag, or the .run" {
  debian_userspace "999.20.01-1~deb12u1"
  gsp_firmware "${FIXTURE_TAG}"
  install_fixture
  assert_failure 12
  assert_output --partial "installed by packages (libcuda1 libnvidia-ml1) of version 999.20.01, not ${FIXTURE_TAG}"
  assert_output --partial "Install their version instead: build.sh install 999.20.01"
  assert_output --partial "sudo apt-get purge libcuda1 libnvidia-ml1, then build.sh install ${FIXTURE_TAG} --userspace run"
  assert_previous_state
}

@test "packages of an unsupported version (Ubuntu's version form) are refused (12) with the .run path" {
  debian_userspace "550.120-0ubuntu0.24.04.1"
  install_fixture
  assert_failure 12
  assert_output --partial "of version 550.120, not ${FIXTURE_TAG}"
  refute_output --partial "build.sh install 550.120"
  assert_output --partial "Either replace them with NVIDIA's .run of ${FIXTURE_TAG}"
  assert_previous_state
}

@test "--userspace takes auto, keep or run (2)" {
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --userspace packaged
  assert_failure 2
  assert_output --partial "--userspace takes auto, keep or run, not 'packaged'"
}

@test "install --nvlink keep in a family that cannot keep NVLink is refused (3) before anything changes; off writes the options" {
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --nvlink keep
  assert_failure 3
  assert_output --partial "--nvlink keep: family 999 (${FIXTURE_TAG}) cannot keep NVLink for bridged pairs"
  assert_previous_state
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --nvlink off
  assert_success
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_line 'options nvidia NVreg_RegistryDwords="RMForceP2PType=2"'
  assert_line "# NVLink: off (the only mode of family 999): BAR1 P2P for every pair,"
}

@test "install in a family that can keep NVLink: kept by default, --nvlink off writes the forcing value" {
  printf '# nvlink-keep: RMForceP2PType=0\n' >>"${NVP2P_DATA_DIR}/patches/999/modprobe.conf"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}"
  assert_success
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_line 'options nvidia NVreg_RegistryDwords="RMForceP2PType=0"'
  assert_line --partial "# NVLink: kept (--nvlink keep)"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --nvlink off
  assert_success
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_line 'options nvidia NVreg_RegistryDwords="RMForceP2PType=2"'
  assert_line "# unused (--nvlink keep writes RMForceP2PType=0 instead)."
}

@test "install keeping NVLink with p2p-0006's key (families 535-570) warns once of its open GSP risk; --nvlink off and 575+ do not" {
  sed -i 's/"RMForceP2PType=2"/"RMForceP2PType=2;RMBar1P2PKeepNvlink=0"/' "${NVP2P_DATA_DIR}/patches/999/modprobe.conf"
  printf '# nvlink-keep: RMBar1P2PKeepNvlink=1\n' >>"${NVP2P_DATA_DIR}/patches/999/modprobe.conf"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}"
  assert_success
  run grep -c "warning: NVLink kept for bridged pairs (--nvlink keep, RMBar1P2PKeepNvlink=1): in family 999 GSP firmware also gets RMForceP2PType=2" <<<"${output}"
  assert_output 1
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_line 'options nvidia NVreg_RegistryDwords="RMForceP2PType=2;RMBar1P2PKeepNvlink=1"'
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --nvlink off
  assert_success
  refute_output --partial "GSP firmware"
  sed -i 's/^# nvlink-keep: .*/# nvlink-keep: RMForceP2PType=0/' "${NVP2P_DATA_DIR}/patches/999/modprobe.conf"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}"
  assert_success
  refute_output --partial "GSP firmware"
}

@test "install --dry-run lists every step and changes nothing" {
  run_build --root "${ROOT}" --dry-run install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}"
  assert_success
  assert_output --partial "would run: install -m 0644"
  assert_output --partial "would write ${ROOT}/etc/depmod.d/nvidia-p2p.conf"
  assert_output --partial 'NVreg_RegistryDwords="RMForceP2PType=2"'
  assert_output --partial "would run: depmod -a -b ${ROOT} -C ${ROOT}/etc/depmod.d ${FIXTURE_KREL}"
  assert_output --partial "would run: sh ${RUNFILE} --silent --no-kernel-modules"
  assert_previous_state
}

@test "a second install is a clean replacement" {
  install_fixture
  assert_success
  install_fixture
  assert_success
  assert_file_exist "${MODDIR}/nvidia.ko"
}

@test "uninstall restores the state from before the install" {
  rm -f "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  install_fixture
  assert_success
  run_build --root "${ROOT}" --yes uninstall
  assert_success
  assert_output --partial "reboot to load the previous driver"
  assert_not_exist "${MODDIR}"
  assert_not_exist "${ROOT}/etc/depmod.d/nvidia-p2p.conf"
  assert_not_exist "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_not_exist "${ROOT}/var/lib/nvidia-p2p/installed-${FIXTURE_KREL}"
  run grep -c "^depmod -a -b ${ROOT} -C ${ROOT}/etc/depmod.d ${FIXTURE_KREL}$" "${STUB_LOG}"
  assert_output 2
}

@test "uninstall says whose userspace driver stays: the .run's, or the packages' with the way back to stock" {
  install_fixture
  assert_success
  run_build --root "${ROOT}" --yes uninstall
  assert_success
  assert_output --partial "the userspace driver from the .run stays installed (sudo nvidia-uninstall removes it"
  debian_userspace "${FIXTURE_TAG}-1"
  gsp_firmware "${FIXTURE_TAG}"
  install_fixture
  assert_success
  run_build --root "${ROOT}" --yes uninstall
  assert_success
  assert_output --partial "the userspace driver of the packages libcuda1 libnvidia-ml1 stays installed"
  assert_output --partial "sudo apt-get install nvidia-kernel-dkms"
  refute_output --partial "from the .run"
}

@test "uninstall with nothing installed says so, changes nothing and succeeds (0), as a normal user too" {
  run_build --root "${ROOT}" --yes uninstall
  assert_success
  assert_output --partial "build.sh: nothing to uninstall: no nvidia-p2p install recorded in ${ROOT}/var/lib/nvidia-p2p and no DKMS module nvidia-p2p; nothing was changed"
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_output 'options nvidia previous=1'
  as_user
  run_build --root "${ROOT}" uninstall
  assert_success
  assert_output --partial "nothing to uninstall"
}

@test "a failed uninstall rolls back (9) and the install stays whole" {
  install_fixture
  assert_success
  FAKE_DEPMOD_FAIL=1 run_build --root "${ROOT}" --yes uninstall
  assert_failure 9
  assert_output --partial "rolled back"
  assert_file_exist "${MODDIR}/nvidia.ko"
  assert_file_exist "${ROOT}/etc/depmod.d/nvidia-p2p.conf"
  assert_file_exist "${ROOT}/var/lib/nvidia-p2p/installed-${FIXTURE_KREL}"
}

@test "uninstall as a normal user is refused (10)" {
  install_fixture
  assert_success
  as_user
  run_build --root "${ROOT}" --yes uninstall
  assert_failure 10
  assert_file_exist "${MODDIR}/nvidia.ko"
}

@test "install without --yes and without a terminal refuses (10) and changes nothing" {
  run_build --root "${ROOT}" install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" </dev/null
  assert_failure 10
  assert_output --partial "pass --yes to proceed"
  assert_previous_state
}

@test "the .run is verified again right before it runs: a swap after the first check is refused (6)" {
  cp "${RUNFILE}" "${BATS_TEST_TMPDIR}/late.run"
  # depmod swaps the file, after install's preflight verified it
  stub depmod - <<STUB
printf '# swapped\n' >>"${BATS_TEST_TMPDIR}/late.run"
STUB
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${BATS_TEST_TMPDIR}/late.run"
  assert_failure 6
  assert_output --partial "refusing to run it"
  assert_previous_state
  run grep -c standin.run "${STUB_LOG}"
  assert_output 0
}

# static_bar1_box BAR1_MIB: a fixture sysfs with one NVIDIA GPU at
# 0000:01:00.0 (BAR0 16 MiB, BAR1 of BAR1_MIB) and one other device.
static_bar1_box() {
  local sys="${BATS_TEST_TMPDIR}/sys" dev
  dev="${sys}/bus/pci/devices/0000:01:00.0"
  mkdir -p "${dev}" "${sys}/bus/pci/devices/0000:00:14.0"
  printf '0x10de\n' >"${dev}/vendor"
  printf '0x030000\n' >"${dev}/class"
  printf '0\n' >"${dev}/boot_vga"
  printf '0x%016x 0x%016x 0x0000000000040200\n' $((0xf0000000)) $((0xf0ffffff)) \
    $((0x4000000000)) $((0x4000000000 + ($1 << 20) - 1)) >"${dev}/resource"
  printf '0x8086\n' >"${sys}/bus/pci/devices/0000:00:14.0/vendor"
  printf '0x0c0330\n' >"${sys}/bus/pci/devices/0000:00:14.0/class"
  export NVP2P_SYSFS="${sys}"
  printf '# static-bar1-force: RMForceStaticBar1=1\n' >>"${NVP2P_DATA_DIR}/patches/999/modprobe.conf"
}

# smi_reports VRAM_MIB DISPLAY_ACTIVE: nvidia-smi's query for that GPU.
smi_reports() {
  printf '#!/bin/sh\ncase "$*" in *--query-gpu=pci.bus_id,memory.total,display_active*) echo "00000000:01:00.0, %s, %s" ;; esac\n' \
    "$1" "$2" >"${STUBS}/nvidia-smi"
}

@test "install --force-static-bar1: a GPU whose BAR1 holds its VRAM gets RMForceStaticBar1=1 for itself only" {
  static_bar1_box 16384
  smi_reports 16303 Disabled
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --force-static-bar1 01:00.0
  assert_success
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_line 'options nvidia NVreg_RegistryDwords="RMForceP2PType=2"'
  assert_line 'options nvidia NVreg_RegistryDwordsPerDevice="pci=0000:01:00.0;RMForceStaticBar1=1"'
  assert_line --partial '# Static BAR1 forced (--force-static-bar1)'
  # without the option: no per-device line
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}"
  assert_success
  run grep -c 'RegistryDwordsPerDevice' "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_output 0
}

@test "install --force-static-bar1 is refused (10) before anything changes where the GPU would fail its init" {
  static_bar1_box 16384
  smi_reports 24564 Disabled
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --force-static-bar1 0000:01:00.0
  assert_failure 10
  assert_output --partial "0000:01:00.0's BAR1 (16384 MiB) is smaller than its VRAM (24564 MiB)"
  assert_previous_state
  smi_reports 16303 Enabled
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --force-static-bar1 0000:01:00.0
  assert_failure 10
  assert_output --partial "0000:01:00.0 drives a display"
  smi_reports 16303 Disabled
  printf '1\n' >"${NVP2P_SYSFS}/bus/pci/devices/0000:01:00.0/boot_vga"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --force-static-bar1 0000:01:00.0
  assert_failure 10
  assert_output --partial "0000:01:00.0 is the boot (console) GPU"
  printf '0\n' >"${NVP2P_SYSFS}/bus/pci/devices/0000:01:00.0/boot_vga"
  mv "${NVP2P_SYSFS}/bus/pci/devices/0000:01:00.0/resource" "${BATS_TEST_TMPDIR}/resource"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --force-static-bar1 0000:01:00.0
  assert_failure 10
  assert_output --partial "cannot read the BAR1 size of 0000:01:00.0"
  mv "${BATS_TEST_TMPDIR}/resource" "${NVP2P_SYSFS}/bus/pci/devices/0000:01:00.0/resource"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --force-static-bar1 0000:00:14.0
  assert_failure 10
  assert_output --partial "no NVIDIA GPU at 0000:00:14.0"
  printf '#!/bin/sh\nexit 0\n' >"${STUBS}/nvidia-smi"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --force-static-bar1 0000:01:00.0
  assert_failure 10
  assert_output --partial "cannot read the VRAM of 0000:01:00.0"
  assert_previous_state
}

@test "--force-static-bar1: a family without the setting refuses it (3); malformed addresses (2); not for package" {
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}" --force-static-bar1 0000:01:00.0
  assert_failure 3
  assert_output --partial "--force-static-bar1: family 999 (${FIXTURE_TAG}) has no '# static-bar1-force:' setting"
  assert_previous_state
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --force-static-bar1 1:0.0
  assert_failure 2
  assert_output --partial "'1:0.0' is not a PCI address"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --force-static-bar1 ','
  assert_failure 2
  run_build package "${FIXTURE_TAG}" --force-static-bar1 0000:01:00.0
  assert_failure 2
  assert_output --partial "option --force-static-bar1 does not apply to package"
}

@test "install --dry-run predicts the real install's refusals: nothing built, dkms missing (PROBLEM lines, then 10)" {
  rm -rf "${WORK:?}/${FIXTURE_TAG}"
  run_build --root "${ROOT}" --dry-run install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}"
  assert_failure 10
  assert_output --partial "PROBLEM: no modules of ${FIXTURE_TAG} built for ${FIXTURE_KREL}"
  assert_output --regexp "end: the real run would stop at the first PROBLEM above \(1 in all\), exit 10"
  refute_output --partial "finished"
  rm -f "${STUBS}/dkms"
  PATH="$(path_hiding dkms)" run_build --root "${ROOT}" --dry-run install "${FIXTURE_TAG}" --run "${RUNFILE}"
  assert_failure 10
  assert_output --partial "PROBLEM: no DKMS source of ${FIXTURE_TAG}"
  assert_output --partial "PROBLEM: dkms is not installed: install it (Debian/Ubuntu: apt-get install dkms), or pass --no-dkms"
  assert_output --regexp "\(2 in all\), exit 10"
  # the real install refuses the same way
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}"
  assert_failure 10
  assert_output --partial "no modules of ${FIXTURE_TAG} built for ${FIXTURE_KREL}"
}

@test "install ends with a next: line: reboot, then verify" {
  install_fixture
  assert_success
  assert_line "build.sh: next: reboot (or reload the modules: docs/install.md), then: ${BUILD_SH} verify"
}

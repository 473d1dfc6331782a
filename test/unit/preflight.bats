#!/usr/bin/env bats
# preflight: facts read from fixture sysfs trees; changes nothing.

load ../test_helper

setup() {
  common_setup
  make_fixture
  SYS="${BATS_TEST_TMPDIR}/sys"
  export NVP2P_SYSFS="${SYS}"
  mkdir -p "${SYS}/bus/pci/devices"
  # the machine has what the pipeline needs (pipeline_problems): dkms too
  stub_dkms
}

# gpu ADDR BAR0 BAR1-LINES...: an NVIDIA display controller with resource lines.
gpu() {
  local dev="${SYS}/bus/pci/devices/$1"
  shift
  mkdir -p "${dev}"
  echo 0x10de >"${dev}/vendor"
  echo 0x030000 >"${dev}/class"
  printf '%s\n' "$@" >"${dev}/resource"
}

Z="0x0000000000000000 0x0000000000000000 0x0000000000000000"

@test "doctor lists each GPU's BAR1; 256 MiB is a warning to enable Resizable BAR, not a refusal" {
  gpu 0000:01:00.0 "0x00000000b2000000 0x00000000b2ffffff 0x0000000000040200" \
    "0x0000028800000000 0x0000028fffffffff 0x000000000014220c" "${Z}" \
    "0x0000028400000000 0x0000028401ffffff 0x000000000014220c" "${Z}" "${Z}"
  gpu 0000:02:00.0 "0x00000000c2000000 0x00000000c2ffffff 0x0000000000040200" \
    "0x00000000d0000000 0x00000000dfffffff 0x000000000014220c" "${Z}" "${Z}" "${Z}" "${Z}"
  run_build --root "${ROOT}" preflight
  assert_success
  assert_line "info  doctor: GPU0 0000:01:00.0, -: BAR1 32768 MiB"
  assert_line "info  doctor: GPU1 0000:02:00.0, -: BAR1 256 MiB"
  assert_line --partial "warn  doctor: rebar-off (GPU1) [blocks, certain]: GPU1's BAR1 is 256 MiB"
  assert_output --partial "Resizable BAR"
  refute_output --partial "rebar-off (GPU0)"
}

@test "with a 64-bit BAR0, BAR1 is found on the third line" {
  gpu 0000:00:06.0 "0x0000380000000000 0x0000380003ffffff 0x000000000014220c" "${Z}" \
    "0x0000300000000000 0x0000303fffffffff 0x000000000014220c" "${Z}" "${Z}" "${Z}"
  run_build --root "${ROOT}" preflight
  assert_line "info  doctor: GPU0 0000:00:06.0, -: BAR1 262144 MiB"
}

@test "nouveau loaded and an IOMMU translating a GPU's DMA are doctor's warnings; missing headers fail (10)" {
  mkdir -p "${SYS}/class/iommu/dmar0" "${SYS}/module/nouveau" "${SYS}/kernel/iommu_groups/7"
  echo DMA-FQ >"${SYS}/kernel/iommu_groups/7/type"
  gpu 0000:01:00.0 "0x00000000b2000000 0x00000000b2ffffff 0x0000000000040200" \
    "0x0000028800000000 0x0000028fffffffff 0x000000000014220c" "${Z}" "${Z}" "${Z}" "${Z}"
  ln -s "${SYS}/kernel/iommu_groups/7" "${SYS}/bus/pci/devices/0000:01:00.0/iommu_group"
  run_build --root "${ROOT}" preflight --kernel 6.1.0-77-amd64
  assert_failure 10
  assert_line --partial "fail  no kernel headers for 6.1.0-77-amd64"
  assert_line --partial "warn  doctor: nouveau-loaded [blocks, certain]"
  assert_line --partial "info  doctor: iommu-translated [blocks, possible]: the IOMMU translates DMA"
  refute_output --partial "doctor: nothing found"
}

@test "an IOMMU in passthrough is no finding" {
  mkdir -p "${SYS}/class/iommu/dmar0" "${SYS}/kernel/iommu_groups/7"
  echo identity >"${SYS}/kernel/iommu_groups/7/type"
  gpu 0000:01:00.0 "0x00000000b2000000 0x00000000b2ffffff 0x0000000000040200" \
    "0x0000028800000000 0x0000028fffffffff 0x000000000014220c" "${Z}" "${Z}" "${Z}" "${Z}"
  ln -s "${SYS}/kernel/iommu_groups/7" "${SYS}/bus/pci/devices/0000:01:00.0/iommu_group"
  run_build --root "${ROOT}" preflight
  refute_output --partial "iommu-translated"
}

# p2p_rw CELL: a stand-in nvidia-smi whose topo -p2p r and w show CELL between two GPUs.
p2p_rw() {
  stub nvidia-smi - <<STUB
case "\$*" in
  "topo -p2p r"|"topo -p2p w") printf ' \tGPU0\tGPU1\n GPU0\tX\t$1\n GPU1\t$1\tX\n' ;;
esac
STUB
}

@test "preflight says first when the loaded driver already gives every GPU pair P2P (topo -p2p r and w OK)" {
  local bar="0x0000028800000000 0x0000028fffffffff 0x000000000014220c"
  gpu 0000:01:00.0 "0x00000000b2000000 0x00000000b2ffffff 0x0000000000040200" "${bar}" "${Z}" "${Z}" "${Z}" "${Z}"
  gpu 0000:41:00.0 "0x00000000c2000000 0x00000000c2ffffff 0x0000000000040200" "${bar}" "${Z}" "${Z}" "${Z}" "${Z}"
  mkdir -p "${NVP2P_PROCFS}/driver/nvidia"
  printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n' \
    >"${NVP2P_PROCFS}/driver/nvidia/version"
  p2p_rw OK
  run_build --root "${ROOT}" preflight
  assert_success
  assert_equal "${lines[0]}" "ok    doctor: P2P already works here with the loaded driver 580.159.04: nvidia-smi topo -p2p r and w report OK for all 2 GPU pairs and nothing found stops it (build.sh verify checks that every byte arrives)"
  assert_equal "$(grep -c 'already works' <<<"${output}")" 1
  # one pair not OK: not said
  p2p_rw NS
  run_build --root "${ROOT}" preflight
  refute_output --partial "already works"
}

@test "preflight shows the loaded module and userspace versions, and changes nothing" {
  mkdir -p "${SYS}/module/nvidia" "${ROOT}/usr/lib/x86_64-linux-gnu"
  echo 550.54.14 >"${SYS}/module/nvidia/version"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14"
  run_build --root "${ROOT}" preflight
  assert_success
  assert_line "info  loaded nvidia module: 550.54.14"
  assert_line "info  userspace driver: 550.54.14 (no package owns it: NVIDIA's .run)"
  assert_not_exist "${CACHE}"
}

@test "preflight names the packages in charge of the userspace driver" {
  mkdir -p "${ROOT}/usr/lib/x86_64-linux-gnu/nvidia/current"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.535.261.03"
  stub dpkg-query - <<'STUB'
case " $* " in
*" -S "*) echo "libnvidia-ml1:amd64: /usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1" ;;
*" -W "*" libnvidia-ml1 "*) echo "535.261.03-1" ;;
*) exit 1 ;;
esac
STUB
  run_build --root "${ROOT}" preflight
  assert_line "info  userspace driver: 535.261.03 (packages: libnvidia-ml1 535.261.03; build.sh install keeps them when they are the tag)"
}

@test "Secure Boot enabled with no key and no dkms fails preflight (10)" {
  stub mokutil - <<<'echo "SecureBoot enabled"'
  rm "${STUBS}/dkms"
  PATH="$(path_hiding dkms)" run_build --root "${ROOT}" preflight
  assert_failure 10
  assert_line --partial "fail  Secure Boot is enabled and no key would sign the modules"
}

@test "Secure Boot enabled with dkms and no key yet is a warning: DKMS makes its pair" {
  stub mokutil - <<<'echo "SecureBoot enabled"'
  stub_dkms
  run_build --root "${ROOT}" preflight
  assert_success
  assert_line --partial "warn  Secure Boot is enabled: DKMS makes its key pair /var/lib/dkms/mok.pub"
}

@test "Secure Boot with DKMS's certificate not enrolled fails (10) with the mokutil command; enrolled is ok" {
  make_key_pair "${ROOT}/var/lib/dkms" mok
  mv "${ROOT}/var/lib/dkms/mok.der" "${ROOT}/var/lib/dkms/mok.pub"
  stub mokutil - <<'STUB'
case $1 in
--sb-state) echo "SecureBoot enabled" ;;
--test-key) [[ -n ${FAKE_ENROLLED:-} ]] && echo "$2 is already enrolled" || echo "$2 is not enrolled" ;;
esac
STUB
  run_build --root "${ROOT}" preflight
  assert_failure 10
  assert_line --partial "is NOT enrolled: sudo mokutil --import /var/lib/dkms/mok.pub, reboot"
  FAKE_ENROLLED=1 run_build --root "${ROOT}" preflight
  assert_success
  assert_line --partial "ok    Secure Boot is enabled; the signing certificate ${ROOT}/var/lib/dkms/mok.pub is enrolled"
}

@test "preflight reports userspace that differs from the installed nvidia-p2p modules (10)" {
  mkdir -p "${ROOT}/var/lib/nvidia-p2p" "${ROOT}/usr/lib/x86_64-linux-gnu"
  printf 'tag=%s kernels=%s family=999 cert=none date=x\n' "${FIXTURE_TAG}" "${FIXTURE_KREL}" >"${ROOT}/var/lib/nvidia-p2p/dkms-${FIXTURE_TAG}"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14"
  run_build --root "${ROOT}" preflight
  assert_failure 10
  assert_line "info  nvidia-p2p modules installed: ${FIXTURE_TAG}"
  assert_line --partial "fail  userspace driver 550.54.14 differs from the nvidia-p2p modules ${FIXTURE_TAG}"
  rm "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${FIXTURE_TAG}"
  run_build --root "${ROOT}" preflight
  assert_success
}

@test "preflight reads the nvidia-p2p-dkms package's version for the comparison" {
  stub dpkg-query - <<'STUB'
[[ " $* " == *" nvidia-p2p-dkms "* ]] && { echo "ii  999.10.01-2"; exit 0; }
exit 1
STUB
  mkdir -p "${ROOT}/usr/lib/x86_64-linux-gnu"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14"
  run_build --root "${ROOT}" preflight
  assert_failure 10
  assert_line --partial "fail  userspace driver 550.54.14 differs from the nvidia-p2p modules 999.10.01"
}

@test "preflight refuses (10) what the pipeline refuses before any work: no dkms, no g++; --no-dkms does without dkms" {
  rm "${STUBS}/dkms"
  PATH="$(path_hiding dkms)" run_build --root "${ROOT}" preflight --kernel "${FIXTURE_KREL}"
  assert_failure 10
  assert_line "fail  dkms is not installed: install it (Debian/Ubuntu: apt-get install dkms), or pass --no-dkms for a single-kernel install without it"
  assert_line "ok    kernel headers for ${FIXTURE_KREL}"
  # the pipeline stops with the same words (one function, pipeline_problems)
  PATH="$(path_hiding dkms)" run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}"
  assert_failure 10
  assert_output --partial "build.sh: dkms is not installed: install it (Debian/Ubuntu: apt-get install dkms), or pass --no-dkms"
  # --no-dkms, as the pipeline's: dkms is not needed
  PATH="$(path_hiding dkms)" run_build --root "${ROOT}" preflight --kernel "${FIXTURE_KREL}" --no-dkms
  assert_success
  refute_output --partial "dkms is not installed"
  PATH="$(path_hiding dkms g++)" run_build --root "${ROOT}" preflight --kernel "${FIXTURE_KREL}" --no-dkms
  assert_failure 10
  assert_line "fail  'g++' is required but not installed (Debian package: g++)"
}

@test "preflight as a user without sudo fails (10): the install step needs root, as in the pipeline" {
  as_user
  PATH="$(path_hiding sudo)" run_build --root "${ROOT}" preflight --kernel "${FIXTURE_KREL}"
  assert_failure 10
  assert_line "fail  the install step needs root: run as root (sudo is not installed)"
}

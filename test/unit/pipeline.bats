#!/usr/bin/env bats
# `build.sh <tag>`: the whole pipeline, its dry-run plan, root and sudo.

load ../test_helper

setup() {
  common_setup
  make_fixture
  export STANDIN_ROOT="${ROOT}"
  RUNFILE="${FIX}/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  stub_dkms
}

@test "the pipeline as root: fetch, verify, patch, build, install, userspace, next steps" {
  as_root
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${FIX}/release.tar.xz" --run "${RUNFILE}" --no-ccache
  assert_success
  local s
  for s in preflight fetch verify patch build check payload dkms depmod initramfs userspace finished; do
    assert_output --regexp "\[[0-9]{2}:[0-9]{2}\] ${s} "
  done
  assert_output --partial "./build.sh verify"
  assert_output --partial "Reboot"
  assert_file_exist "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/dkms/nvidia.ko"
  assert_file_exist "${ROOT}/usr/src/nvidia-p2p-${FIXTURE_TAG}/dkms.conf"
  assert_file_exist "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${FIXTURE_TAG}"
}

@test "the pipeline's stages run in order" {
  as_root
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${RUNFILE}" --no-ccache
  assert_success
  run grep -o -E '^\[[0-9:]+\] [a-z]+' <<<"${output}"
  local order
  order=$(sed -E 's/^\[[0-9:]+\] //' <<<"${output}" | uniq | tr '\n' ' ')
  assert_equal "${order}" "preflight fetch verify patch build check payload preflight dkms depmod initramfs userspace verify finished "
}

@test "the pipeline from a git bundle (offline): fetched, verified against its pin, built, installed" {
  as_root
  git -C "${FIX}/upstream" bundle create -q "${BATS_TEST_TMPDIR}/upstream.bundle" --all
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/upstream.bundle" --run "${RUNFILE}" --no-ccache
  assert_success
  assert_output --partial "fetch     ${FIXTURE_TAG} from ${BATS_TEST_TMPDIR}/upstream.bundle"
  assert_file_exist "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/dkms/nvidia.ko"
}

@test "--dry-run prints the full plan and changes nothing" {
  as_user
  stub sudo
  run_build --root "${ROOT}" --dry-run "${FIXTURE_TAG}" --no-ccache
  assert_success
  assert_output --partial "Plan for driver ${FIXTURE_TAG} (family 999), changing nothing"
  assert_output --partial "would fetch ${FIXTURE_TAG}"
  assert_output --partial "would download https://example.invalid/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  assert_output --partial "compat-0001-resize.patch"
  assert_output --partial "would run: make -C ${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL} modules"
  assert_output --partial "would run the install step as root, through sudo"
  assert_output --partial "would assemble ${WORK}/${FIXTURE_TAG}/dkms-src"
  assert_output --partial "would run: dkms add -m nvidia-p2p -v ${FIXTURE_TAG}"
  assert_output --partial "would run: dkms install -m nvidia-p2p -v ${FIXTURE_TAG} -k ${FIXTURE_KREL}"
  assert_output --partial "would run: depmod -a -b ${ROOT} -C ${ROOT}/etc/depmod.d ${FIXTURE_KREL}"
  assert_output --partial "--silent --no-kernel-modules"
  assert_output --partial "end: driver ${FIXTURE_TAG} with PCIe P2P would be registered with DKMS and installed for: ${FIXTURE_KREL}; nothing was changed"
  refute_output --partial "finished"
  assert_output --partial "Next steps"
  assert_not_exist "${CACHE}"
  assert_not_exist "${WORK}"
  assert_equal "$(find "${ROOT}" -newer "${STUB_LOG}" | wc -l)" 0
}

@test "--dry-run says first, in its preflight, when the loaded driver already gives every GPU pair P2P" {
  as_user
  stub sudo
  local dev
  export NVP2P_SYSFS="${BATS_TEST_TMPDIR}/sys"
  for dev in 0000:01:00.0 0000:41:00.0; do
    mkdir -p "${NVP2P_SYSFS}/bus/pci/devices/${dev}"
    echo 0x10de >"${NVP2P_SYSFS}/bus/pci/devices/${dev}/vendor"
    echo 0x030000 >"${NVP2P_SYSFS}/bus/pci/devices/${dev}/class"
    printf '%s\n' "0x00000000b2000000 0x00000000b2ffffff 0x0000000000040200" \
      "0x0000028800000000 0x0000028fffffffff 0x000000000014220c" >"${NVP2P_SYSFS}/bus/pci/devices/${dev}/resource"
  done
  stub nvidia-smi - <<'STUB'
case "$*" in
  "topo -p2p r"|"topo -p2p w") printf ' \tGPU0\tGPU1\n GPU0\tX\tOK\n GPU1\tOK\tX\n' ;;
esac
STUB
  run_build --root "${ROOT}" --dry-run "${FIXTURE_TAG}" --no-ccache
  assert_success
  local pre works
  pre=$(grep -n '] preflight ' <<<"${output}" | head -n 1 | cut -d: -f1)
  works=$(grep -n 'doctor: P2P already works here with the loaded driver: nvidia-smi topo -p2p r and w report OK for all 2 GPU pairs' <<<"${output}" | cut -d: -f1)
  assert_equal "${works}" "$((pre + 1))"
}

@test "--dry-run reports a problem (missing headers) and still prints the whole plan, then exits 10" {
  as_user
  run_build --root "${ROOT}" --dry-run "${FIXTURE_TAG}" --kernel 6.1.0-77-amd64
  assert_failure 10
  assert_output --partial "PROBLEM: no kernel headers for 6.1.0-77-amd64"
  # the plan goes on to its end, which says the real run would not get there
  assert_output --partial "would run: dkms add -m nvidia-p2p -v ${FIXTURE_TAG}"
  assert_output --regexp "end: the real run would stop at the first PROBLEM above \([0-9]+ in all\), exit 10; nothing was changed"
  refute_output --partial "would be installed"
  refute_output --partial "Next steps"
  refute_output --partial "finished"
  assert_not_exist "${CACHE}"
}

@test "--dry-run with Debian's userspace packages of another version: PROBLEM with the fix, no .run planned, exit 12" {
  as_user
  stub sudo
  mkdir -p "${ROOT}/usr/lib/x86_64-linux-gnu/nvidia/current"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.999.20.01"
  stub dpkg-query - <<'STUB'
case " $* " in
*" -S "*) echo "libnvidia-ml1:amd64: /usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1" ;;
*" -W "*" libnvidia-ml1 "*) echo "999.20.01-1" ;;
*) exit 1 ;;
esac
STUB
  run_build --root "${ROOT}" --dry-run "${FIXTURE_TAG}" --no-ccache
  assert_failure 12
  assert_output --partial "PROBLEM: the NVIDIA userspace driver is installed by packages (libnvidia-ml1) of version 999.20.01, not ${FIXTURE_TAG}"
  assert_output --partial "Install their version instead: build.sh install 999.20.01"
  refute_output --partial "would download https://example.invalid/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  refute_output --partial "--silent --no-kernel-modules"
  refute_output --partial "no GSP firmware"
  assert_not_exist "${CACHE}"
}

@test "--no-dkms: the pipeline installs this kernel's modules only" {
  as_root
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --no-dkms --source "${FIX}/upstream" --run "${RUNFILE}" --no-ccache
  assert_success
  assert_file_exist "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/nvidia-p2p/nvidia.ko"
  assert_not_exist "${ROOT}/usr/src/nvidia-p2p-${FIXTURE_TAG}"
  run grep -c '^dkms ' "${STUB_LOG}"
  assert_output 0
}

@test "as a normal user the install step goes through sudo, with the cache lock handed over, into the same --root" {
  as_user
  stub sudo - <<<'shift; exec "$@"'
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${RUNFILE}" --no-ccache
  # The sudo stub runs the child as the same (non-root) user, so the child's
  # root check refuses: what matters here is the hand-over.
  assert_failure 10
  run grep '^sudo ' "${STUB_LOG}"
  # No --kernel was given: DKMS builds for every kernel with headers, as the
  # pipeline as root does, not for the running kernel only.
  # install's options in the order of its synopsis (lib/02-cli.sh)
  assert_output --partial "-- ${BUILD_SH} install ${FIXTURE_TAG} --cache-dir ${CACHE} --work-dir ${WORK} --root ${ROOT} --run ${RUNFILE} --userspace run --yes"
  refute_output --partial "--kernel"
  # The password is asked for first (sudo -v), while the cache is still locked.
  assert_line --index 0 "sudo -v"
}

@test "through sudo: a sudo that refuses stops before the hand-over (10), naming the command" {
  as_user
  stub sudo - <<'STUB'
[ "$1" = -v ] && exit 1
shift
exec "$@"
STUB
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${RUNFILE}" --no-ccache
  assert_failure 10
  assert_output --partial "sudo refused; the install step needs root: sudo ${BUILD_SH} install ${FIXTURE_TAG}"
  run grep -c -- '^sudo -- ' "${STUB_LOG}"
  assert_output 0
}

@test "through sudo, a --kernel given to the pipeline is handed on" {
  as_user
  stub sudo - <<<'shift; exec "$@"'
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${RUNFILE}" --no-ccache --kernel "${FIXTURE_KREL}"
  assert_failure 10
  run grep '^sudo ' "${STUB_LOG}"
  assert_output --partial "--root ${ROOT} --kernel ${FIXTURE_KREL} --run ${RUNFILE} --userspace run"
}

@test "through sudo, --no-dkms, --nvlink, the signing options and --lock-wait are handed to the install step" {
  as_user
  stub sudo - <<<'shift; exec "$@"'
  make_key_pair "${BATS_TEST_TMPDIR}/keys" user
  run_build --root "${ROOT}" --yes --lock-wait 60 "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${RUNFILE}" --no-ccache \
    --no-dkms --nvlink off --sign-key "${BATS_TEST_TMPDIR}/keys/user.key" --sign-cert "${BATS_TEST_TMPDIR}/keys/user.der"
  assert_failure 10
  run grep '^sudo ' "${STUB_LOG}"
  # --no-dkms installs the modules built for this kernel: it is named.
  assert_output --partial "--root ${ROOT} --kernel ${FIXTURE_KREL} --no-dkms --run ${RUNFILE} --userspace run --nvlink off --sign-key ${BATS_TEST_TMPDIR}/keys/user.key --sign-cert ${BATS_TEST_TMPDIR}/keys/user.der --yes --lock-wait 60"
}

@test "the pipeline as root takes the install state's lock too, beside the cache's (11 while another install holds it)" {
  as_root
  hold_lock "${ROOT}/var/lib/nvidia-p2p/build.lock" 20
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --no-dkms --source "${FIX}/upstream" --run "${RUNFILE}" --no-ccache
  release_lock
  assert_failure 11
  assert_output --partial "another build.sh run holds the lock ${ROOT}/var/lib/nvidia-p2p/build.lock"
  assert_not_exist "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/nvidia-p2p"
}

@test "a normal user without sudo is refused before any work (10)" {
  as_user
  PATH="$(path_without sudo)" run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_failure 10
  assert_output --partial "the install step needs root"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
}

@test "a pipeline with a failing build installs nothing (8)" {
  as_root
  FAKE_MAKE_FAIL=1 run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${RUNFILE}" --no-ccache
  assert_failure 8
  assert_not_exist "${ROOT}/lib/modules/${FIXTURE_KREL}/updates"
  assert_not_exist "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  run grep -c standin.run "${STUB_LOG}"
  assert_output 0
}

@test "the pipeline's real .run pin is enforced before any build work (6)" {
  as_root
  cp "${RUNFILE}" "${BATS_TEST_TMPDIR}/wrong.run"
  echo "# tampered" >>"${BATS_TEST_TMPDIR}/wrong.run"
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${BATS_TEST_TMPDIR}/wrong.run" --no-ccache
  assert_failure 6
  run grep -c '^make ' "${STUB_LOG}"
  assert_output 0
}

@test "the real headline tag plans end to end with --dry-run" {
  unset NVP2P_DATA_DIR
  as_user
  stub sudo
  # The kernel's headers come from the fixture root, never from the host: the
  # host may have none, or another kernel's (Debian moves 6.1.0-N on).
  fixture_kernel "${ROOT}" 6.1.0-56-amd64
  run_build --root "${ROOT}" --dry-run 565.57.01 --kernel 6.1.0-56-amd64
  assert_success
  refute_output --partial "PROBLEM"
  assert_output --partial "Plan for driver 565.57.01 (family 565)"
  assert_output --partial "https://github.com/NVIDIA/open-gpu-kernel-modules/archive/d5a0858f901d15bda4c3d6db19a271507722a860.tar.gz"
  assert_output --partial "require sha256 6eebe94e585e385e8804f5a74152df414887bf819cc21bd95b72acd0fb182c7a"
  assert_output --partial "p2p-0005-uvm-bar1-peer-dma-base.patch"
  assert_output --partial "p2p-0006-nvlink-kept-with-bar1-p2p.patch"
  assert_output --partial 'NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=2;RMBar1P2PKeepNvlink=1"'
  assert_output --partial "Next steps"
  assert_not_exist "${CACHE}"
}

@test "the pipeline without dkms is refused before any work (10), naming the package and --no-dkms" {
  as_root
  rm "${STUBS}/dkms"
  PATH="$(path_hiding dkms)" run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_failure 10
  assert_output --partial "dkms is not installed: install it (Debian/Ubuntu: apt-get install dkms), or pass --no-dkms"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
}

@test "a machine without g++ (nvidia-modeset has C++) is refused before any work (10), naming the package" {
  as_root
  PATH="$(path_hiding g++)" run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_failure 10
  assert_output --partial "'g++' is required but not installed (Debian package: g++)"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
}

@test "the help's staging recipe (--root DIR --no-userspace) stages the modules where DIR has no userspace, and says so" {
  as_root
  run_build --help
  assert_output --partial "stage with --no-userspace"
  run_build --root "${ROOT}" --yes --dry-run "${FIXTURE_TAG}" --no-userspace --source "${FIX}/upstream" --no-ccache
  assert_success
  refute_output --regexp 'kept: *$'
  assert_output --partial "userspace driver: none in ${ROOT} (staging with --root): left out, not checked"
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --no-userspace --source "${FIX}/upstream" --no-ccache
  assert_success
  refute_output --regexp 'kept: *$'
  assert_output --partial "userspace driver: none in ${ROOT} (staging with --root): left out, not checked; the system that uses ${ROOT} needs the userspace driver of ${FIXTURE_TAG} and its GSP firmware"
  assert_output --partial "no userspace driver staged in ${ROOT}"
  assert_file_exist "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/dkms/nvidia.ko"
  run grep -c standin.run "${STUB_LOG}"
  assert_output 0
  # a userspace of another version in DIR is still a mismatch (12)
  mkdir -p "${ROOT}/usr/lib/x86_64-linux-gnu"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14"
  run_build --root "${ROOT}" --yes "${FIXTURE_TAG}" --no-userspace --source "${FIX}/upstream" --no-ccache
  assert_failure 12
  assert_output --partial "userspace driver version is '550.54.14'"
}

@test "--userspace keep on / (not staging): the userspace line names what is kept, never an empty \"kept:\"" {
  as_root
  run_build --yes --dry-run "${FIXTURE_TAG}" --no-userspace --kernel "${FIXTURE_KREL}" --source "${FIX}/upstream" --no-ccache
  assert_output --regexp 'userspace driver: kept: [^[:space:]]'
  refute_output --regexp 'kept: *$'
}

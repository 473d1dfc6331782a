#!/usr/bin/env bats
# install through DKMS (the default) and its uninstall, with the dkms
# stand-in (test/fixtures/dkms): registration as nvidia-p2p/<tag>, kernels
# with and without headers, other NVIDIA kernel modules, the transaction
# around DKMS's steps, byte-for-byte restore by uninstall.

load ../test_helper

K2="6.12.0-99-test"

setup() {
  prepared_setup dkms_env dkms_state
}

dkms_env() {
  export STANDIN_ROOT="${ROOT}"
  RUNFILE="${FIX}/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  DKMS_SRC="${ROOT}/usr/src/nvidia-p2p-${FIXTURE_TAG}"
  DEST="${ROOT}/lib/modules/${FIXTURE_KREL}/updates/dkms"
}

# Fetched and built, as root, the dkms stand-in; the state before: another
# DKMS module's file, an index, an initramfs, DKMS's empty tree, kmod's
# configuration directories.
dkms_state() {
  fetch_and_build
  as_root
  stub_dkms
  mkdir -p "${DEST}" "${ROOT}/boot" "${ROOT}/var/lib/dkms" "${ROOT}/etc/depmod.d" "${ROOT}/etc/modprobe.d"
  printf 'other dkms module\n' >"${DEST}/other.ko"
  printf 'old index\n' >"${ROOT}/lib/modules/${FIXTURE_KREL}/modules.dep"
  printf 'old initrd\n' >"${ROOT}/boot/initrd.img-${FIXTURE_KREL}"
}

dkms_install() {
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --run "${RUNFILE}"
}

# tree_state: every path under ROOT with its type and mode, and every file's
# checksum; build.sh's lock file aside (it stays, empty, by design).
tree_state() {
  (
    cd "${ROOT}" || exit 1
    find . -path ./var/lib/nvidia-p2p -prune -o -printf '%p %y %m %l\n' | LC_ALL=C sort
    find . -path ./var/lib/nvidia-p2p -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
  )
}

assert_nothing_of_ours() {
  assert_not_exist "${DKMS_SRC}"
  assert_not_exist "${ROOT}/var/lib/dkms/nvidia-p2p"
  assert_not_exist "${DEST}/nvidia.ko"
  assert_not_exist "${ROOT}/etc/depmod.d/nvidia-p2p.conf"
  assert_not_exist "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_not_exist "${ROOT}/var/lib/nvidia-p2p/dkms-${FIXTURE_TAG}"
  assert_equal "$(find "${ROOT}/var/lib/nvidia-p2p" -name 'txn.*' 2>/dev/null | wc -l)" 0
  run cat "${DEST}/other.ko"
  assert_output 'other dkms module'
  run cat "${ROOT}/lib/modules/${FIXTURE_KREL}/modules.dep"
  assert_output 'old index'
}

@test "build assembles the DKMS source: kernel-open, the two objects as .o_binary, dkms.conf for nvidia-p2p/<tag>" {
  local src="${WORK}/${FIXTURE_TAG}/dkms-src"
  assert_file_exist "${src}/Makefile"
  assert_file_exist "${src}/nvidia/nv-kernel.o_binary"
  assert_file_exist "${src}/nvidia-modeset/nv-modeset-kernel.o_binary"
  assert [ ! -L "${src}/nvidia/nv-kernel.o_binary" ]
  run cat "${src}/dkms.conf"
  assert_line 'PACKAGE_NAME="nvidia-p2p"'
  assert_line "PACKAGE_VERSION=\"${FIXTURE_TAG}\""
  assert_line 'AUTOINSTALL="yes"'
  assert_line --partial "MAKE[0]=\"'make'"
  assert_line --partial "KERNEL_UNAME=\${kernelver} \$(sed -n"
  assert_line --partial "2>/dev/null | tr '\\n' ' ') modules\""
  assert_line 'BUILT_MODULE_NAME[0]="nvidia"'
  assert_line 'BUILT_MODULE_NAME[4]="nvidia-peermem"'
  assert_line 'DEST_MODULE_LOCATION[4]="/updates/dkms"'
  refute_output --partial 'PACKAGE_NAME="nvidia"'
}

@test "dkms.conf's MAKE adds LLVM=1 (and LD=ld.lld) for a kernel built with clang (and lld), nothing for gcc, on one line" {
  local src="${WORK}/${FIXTURE_TAG}/dkms-src" k="${BATS_TEST_TMPDIR}/k" rel
  mkdir -p "${k}/build"
  # DKMS reads dkms.conf with kernelver set; /lib/modules/<kernelver>/build
  # reaches the fixture's directory through .. (/lib/modules may be a link)
  rel=$(realpath --relative-to=/lib/modules "${k}")
  printf 'CONFIG_CC_IS_GCC=y\n' >"${k}/build/.config"
  run bash -c 'kernelver=$1 parallel_jobs=2; . "$2"; printf "%s\n" "${MAKE[0]}"' _ "${rel}" "${src}/dkms.conf"
  assert_output "'make' -j2 NV_EXCLUDE_BUILD_MODULES='' KERNEL_UNAME=${rel}  modules"
  printf 'CONFIG_CC_IS_CLANG=y\nCONFIG_CLANG_VERSION=190107\nCONFIG_LD_IS_LLD=y\n' >"${k}/build/.config"
  run bash -c 'kernelver=$1 parallel_jobs=2; . "$2"; printf "%s\n" "${MAKE[0]}"' _ "${rel}" "${src}/dkms.conf"
  assert_output "'make' -j2 NV_EXCLUDE_BUILD_MODULES='' KERNEL_UNAME=${rel} LLVM=1 IGNORE_CC_MISMATCH=1 LD=ld.lld  modules"
}

@test "a DKMS install writes the NVLink mode into the options: kept by default where the family can, --nvlink off forces BAR1" {
  printf '# nvlink-keep: RMForceP2PType=0\n' >>"${NVP2P_DATA_DIR}/patches/999/modprobe.conf"
  dkms_install
  assert_success
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_line 'options nvidia NVreg_RegistryDwords="RMForceP2PType=0"'
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --run "${RUNFILE}" --nvlink off
  assert_success
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_line 'options nvidia NVreg_RegistryDwords="RMForceP2PType=2"'
}

@test "install registers nvidia-p2p/<tag> with DKMS, which builds it; override, options, state" {
  dkms_install
  assert_success
  assert_file_exist "${DKMS_SRC}/dkms.conf"
  assert_file_exist "${DKMS_SRC}/nvidia/nv-kernel.o_binary"
  local m
  for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
    assert_file_exist "${DEST}/${m}.ko"
  done
  run cat "${STUB_LOG}"
  assert_line "dkms add -m nvidia-p2p -v ${FIXTURE_TAG} --sourcetree ${ROOT}/usr/src --dkmstree ${ROOT}/var/lib/dkms --installtree ${ROOT}/lib/modules"
  assert_line --partial "dkms install -m nvidia-p2p -v ${FIXTURE_TAG} -k ${FIXTURE_KREL}"
  refute_line --regexp '^dkms (add|install|remove) -m nvidia '
  run cat "${ROOT}/etc/depmod.d/nvidia-p2p.conf"
  assert_line 'override nvidia * updates/dkms'
  assert_line 'override nvidia_peermem * updates/dkms'
  run cat "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_output --partial 'RMForceP2PType=2'
  run cat "${ROOT}/var/lib/nvidia-p2p/dkms-${FIXTURE_TAG}"
  assert_output --partial "tag=${FIXTURE_TAG} kernels=${FIXTURE_KREL} family=999"
  run cat "${DEST}/other.ko"
  assert_output 'other dkms module'
}

@test "every installed kernel with headers gets the modules; one without headers is named with the package to install" {
  fixture_kernel "${ROOT}" "${K2}"
  mkdir -p "${ROOT}/lib/modules/6.13.0-99-test/kernel"
  dkms_install
  assert_success
  assert_file_exist "${DEST}/nvidia.ko"
  assert_file_exist "${ROOT}/lib/modules/${K2}/updates/dkms/nvidia.ko"
  assert_output --partial "kernel 6.13.0-99-test has no headers"
  assert_not_exist "${ROOT}/lib/modules/6.13.0-99-test/updates"
  run cat "${STUB_LOG}"
  assert_line "depmod -a -b ${ROOT} -C ${ROOT}/etc/depmod.d ${K2}"
}

@test "--kernel limits the DKMS build to that kernel; a --kernel without headers is refused (10)" {
  fixture_kernel "${ROOT}" "${K2}"
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --run "${RUNFILE}" --kernel "${K2}"
  assert_success
  assert_file_exist "${ROOT}/lib/modules/${K2}/updates/dkms/nvidia.ko"
  assert_not_exist "${DEST}/nvidia.ko"
  run_build --root "${ROOT}" --yes uninstall
  assert_success
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --run "${RUNFILE}" --kernel 6.13.0-99-test
  assert_failure 10
  assert_output --partial "no kernel headers for 6.13.0-99-test"
  assert_nothing_of_ours
}

@test "the headers of a new kernel missing: DKMS fails for it (9), everything rolls back, the old kernel keeps its modules" {
  dkms_install
  assert_success
  fixture_kernel "${ROOT}" "${K2}"
  FAKE_DKMS_FAIL="${K2}" dkms_install
  assert_failure 9
  assert_output --partial "DKMS could not build or install nvidia-p2p/${FIXTURE_TAG} for ${K2}"
  assert_output --partial "make.log"
  assert_output --partial "rolled back"
  assert_file_exist "${DEST}/nvidia.ko"
  assert_file_exist "${DKMS_SRC}/dkms.conf"
  assert_file_exist "${ROOT}/var/lib/dkms/nvidia-p2p/${FIXTURE_TAG}/${FIXTURE_KREL}/x86_64/module/nvidia.ko"
  assert_not_exist "${ROOT}/lib/modules/${K2}/updates/dkms/nvidia.ko"
}

@test "a DKMS build failure on a first install leaves nothing half-installed (9)" {
  FAKE_DKMS_FAIL="${FIXTURE_KREL}" dkms_install
  assert_failure 9
  assert_output --partial "rolled back"
  assert_nothing_of_ours
  run grep -c standin.run "${STUB_LOG}"
  assert_output 0
}

@test "SIGTERM during the DKMS build rolls everything back (130)" {
  FAKE_DKMS_SLEEP=3 "${BUILD_SH}" --cache-dir "${CACHE}" --work-dir "${WORK}" --root "${ROOT}" \
    --yes install "${FIXTURE_TAG}" --run "${RUNFILE}" >"${BATS_TEST_TMPDIR}/out" 2>&1 &
  local pid=$!
  for _ in $(seq 1 100); do
    grep -q '^dkms install' "${STUB_LOG}" && break
    sleep 0.1
  done
  kill -TERM "${pid}"
  local rc=0
  wait "${pid}" || rc=$?
  assert_equal "${rc}" 130
  run cat "${BATS_TEST_TMPDIR}/out"
  assert_output --partial "interrupted"
  assert_output --partial "rolled back"
  assert_nothing_of_ours
}

@test "uninstall removes the DKMS module and restores the tree byte for byte" {
  mkdir -p "${ROOT}/usr/lib/x86_64-linux-gnu"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${FIXTURE_TAG}"
  gsp_firmware "${FIXTURE_TAG}"
  fixture_kernel "${ROOT}" "${K2}"
  local before
  before=$(tree_state)
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-userspace
  assert_success
  assert_file_exist "${ROOT}/lib/modules/${K2}/updates/dkms/nvidia.ko"
  [[ "$(tree_state)" != "${before}" ]] || fail "install changed nothing"
  run_build --root "${ROOT}" --yes uninstall
  assert_success
  assert_output --partial "remove nvidia-p2p/${FIXTURE_TAG}"
  run cat "${STUB_LOG}"
  assert_line --partial "dkms remove -m nvidia-p2p -v ${FIXTURE_TAG} --all"
  assert_equal "$(tree_state)" "${before}"
}

@test "uninstall removes /etc/depmod.d when install made it, and only then" {
  mkdir -p "${ROOT}/usr/lib/x86_64-linux-gnu"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${FIXTURE_TAG}"
  gsp_firmware "${FIXTURE_TAG}"
  rmdir "${ROOT}/etc/depmod.d"
  local before
  before=$(tree_state)
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-userspace
  assert_success
  assert_file_exist "${ROOT}/etc/depmod.d/nvidia-p2p.conf"
  run_build --root "${ROOT}" --yes uninstall
  assert_success
  assert_not_exist "${ROOT}/etc/depmod.d"
  assert_equal "$(tree_state)" "${before}"
}

@test "uninstall leaves a kernel with headers only as it was: no index of nothing, no empty updates/" {
  mkdir -p "${ROOT}/usr/lib/x86_64-linux-gnu"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${FIXTURE_TAG}"
  gsp_firmware "${FIXTURE_TAG}"
  fixture_kernel "${ROOT}" "${K2}"
  assert_not_exist "${ROOT}/lib/modules/${K2}/modules.builtin"
  FAKE_DEPMOD_INDEX=1 depmod -a -b "${ROOT}" "${FIXTURE_KREL}"
  local before
  before=$(tree_state)
  FAKE_DEPMOD_INDEX=1 run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-userspace
  assert_success
  run cat "${ROOT}/lib/modules/${K2}/modules.dep"
  assert_line ./updates/dkms/nvidia.ko
  FAKE_DEPMOD_INDEX=1 run_build --root "${ROOT}" --yes uninstall
  assert_success
  assert_output --partial "none for ${K2} (headers only, no modules left): its index files removed"
  assert_not_exist "${ROOT}/lib/modules/${K2}/modules.dep"
  assert_not_exist "${ROOT}/lib/modules/${K2}/updates"
  # The kernel with modules was indexed again, as before install.
  run cat "${ROOT}/lib/modules/${FIXTURE_KREL}/modules.dep"
  assert_output ./updates/dkms/other.ko
  assert_equal "$(tree_state)" "${before}"
}

@test "uninstall reindexes a kernel with headers only that still holds another module" {
  mkdir -p "${ROOT}/usr/lib/x86_64-linux-gnu"
  touch "${ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${FIXTURE_TAG}"
  gsp_firmware "${FIXTURE_TAG}"
  fixture_kernel "${ROOT}" "${K2}"
  mkdir -p "${ROOT}/lib/modules/${K2}/updates/dkms"
  printf 'other\n' >"${ROOT}/lib/modules/${K2}/updates/dkms/other.ko"
  FAKE_DEPMOD_INDEX=1 run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-userspace
  assert_success
  FAKE_DEPMOD_INDEX=1 run_build --root "${ROOT}" --yes uninstall
  assert_success
  assert_output --partial "depmod    ${K2}"
  refute_output --partial "its index files removed"
  run cat "${ROOT}/lib/modules/${K2}/modules.dep"
  assert_output ./updates/dkms/other.ko
}

@test "a failing depmod during uninstall rolls back (9): the DKMS module stays registered and installed" {
  dkms_install
  assert_success
  FAKE_DEPMOD_FAIL=1 run_build --root "${ROOT}" --yes uninstall
  assert_failure 9
  assert_output --partial "rolled back"
  assert_file_exist "${DEST}/nvidia.ko"
  assert_file_exist "${DKMS_SRC}/dkms.conf"
  assert_dir_exist "${ROOT}/var/lib/dkms/nvidia-p2p/${FIXTURE_TAG}/source"
  assert_file_exist "${ROOT}/var/lib/nvidia-p2p/dkms-${FIXTURE_TAG}"
}

@test "a second install replaces the first through DKMS (remove, add, install)" {
  dkms_install
  assert_success
  dkms_install
  assert_success
  run grep -c "^dkms remove -m nvidia-p2p -v ${FIXTURE_TAG} --all" "${STUB_LOG}"
  assert_output 1
  assert_file_exist "${DEST}/nvidia.ko"
}

@test "a --no-dkms install is replaced by the DKMS install in the same transaction" {
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --no-dkms --run "${RUNFILE}"
  assert_success
  assert_file_exist "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/nvidia-p2p/nvidia.ko"
  dkms_install
  assert_success
  assert_output --partial "replacing the --no-dkms install for ${FIXTURE_KREL}"
  assert_not_exist "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/nvidia-p2p"
  assert_not_exist "${ROOT}/var/lib/nvidia-p2p/installed-${FIXTURE_KREL}"
  assert_file_exist "${DEST}/nvidia.ko"
}

@test "dkms missing is refused (10) naming the package and --no-dkms; nothing changes" {
  rm "${STUBS}/dkms"
  PATH="$(path_hiding dkms)" dkms_install
  assert_failure 10
  assert_output --partial "dkms is not installed: install it (Debian/Ubuntu: apt-get install dkms), or pass --no-dkms"
  assert_nothing_of_ours
}

@test "dkms older than 3.0.10 is refused (10); 3.0.10 and trixie's 3.2.x are accepted" {
  FAKE_DKMS_VERSION=2.8.7 dkms_install
  assert_failure 10
  assert_output --partial "dkms 2.8.7 is older than 3.0.10"
  assert_nothing_of_ours
  FAKE_DKMS_VERSION=3.2.1 dkms_install
  assert_success
}

@test "the distribution's NVIDIA DKMS package is refused (14) with the exact removal command" {
  stub dpkg-query - <<'STUB'
case " $* " in
*" -S /usr/src/nvidia-current-535.216.01 "*) echo "nvidia-kernel-dkms: /usr/src/nvidia-current-535.216.01" ;;
*" -W "*) printf 'ii  nvidia-kernel-dkms\n' ;;
*) exit 1 ;;
esac
STUB
  FAKE_DKMS_STATUS="nvidia-current/535.216.01, ${FIXTURE_KREL}, x86_64: installed" dkms_install
  assert_failure 14
  assert_output --partial "Remove it first: sudo apt-get purge nvidia-kernel-dkms"
  assert_nothing_of_ours
}

@test "the .run's own DKMS module 'nvidia' is refused (14) with its dkms remove command" {
  FAKE_DKMS_STATUS="nvidia/550.54.14, ${FIXTURE_KREL}, x86_64: installed" dkms_install
  assert_failure 14
  assert_output --partial "sudo dkms remove nvidia/550.54.14 --all"
  assert_output --partial "sudo nvidia-uninstall"
  assert_nothing_of_ours
}

@test "Ubuntu's nvidia-dkms-* package is refused (14) even when DKMS lists nothing" {
  stub dpkg-query - <<'STUB'
case " $* " in
*" -W "*) printf 'ii  nvidia-dkms-550\nii  nvidia-p2p-dkms\nrc  nvidia-kernel-dkms\n' ;;
*) exit 1 ;;
esac
STUB
  dkms_install
  assert_failure 14
  assert_output --partial "sudo apt-get purge nvidia-dkms-550"
  refute_output --partial "purge nvidia-dkms-550 nvidia-p2p-dkms"
  refute_output --partial "nvidia-kernel-dkms"
  assert_nothing_of_ours
}

@test "Ubuntu's prebuilt linux-modules-nvidia-* is a warning: the depmod override wins" {
  stub dpkg-query - <<'STUB'
case " $* " in
*" -W "*) printf 'ii  linux-modules-nvidia-550-6.8.0-45-generic\n' ;;
*) exit 1 ;;
esac
STUB
  dkms_install
  assert_success
  assert_output --partial "linux-modules-nvidia-550-6.8.0-45-generic ships prebuilt NVIDIA modules; the depmod override makes ours win"
  run cat "${ROOT}/etc/depmod.d/nvidia-p2p.conf"
  assert_line 'override nvidia * updates/dkms'
}

@test "install without a DKMS source (nothing built) is refused (10)" {
  rm -rf "${WORK}/${FIXTURE_TAG}/dkms-src"
  dkms_install
  assert_failure 10
  assert_output --partial "no DKMS source of ${FIXTURE_TAG}"
  assert_output --partial "run: build.sh build ${FIXTURE_TAG}"
  assert_nothing_of_ours
}

@test "install --dry-run shows the DKMS steps and changes nothing" {
  local before
  before=$(tree_state)
  run_build --root "${ROOT}" --dry-run install "${FIXTURE_TAG}" --run "${RUNFILE}"
  assert_success
  assert_output --partial "would run: dkms add -m nvidia-p2p -v ${FIXTURE_TAG}"
  assert_output --partial "would run: dkms install -m nvidia-p2p -v ${FIXTURE_TAG} -k ${FIXTURE_KREL}"
  assert_output --partial "override entries for nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem in updates/dkms"
  assert_equal "$(tree_state)" "${before}"
}

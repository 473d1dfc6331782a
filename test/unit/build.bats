#!/usr/bin/env bats
# build: kernel selection (installed headers, split/relocated header trees),
# the make invocation, module checks, failures.

load ../test_helper

setup() {
  common_setup
  make_fixture
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
}

@test "build against installed headers passes SYSSRC/SYSOUT from /lib/modules and checks the modules" {
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_line "${WORK}/${FIXTURE_TAG}/modules-${FIXTURE_KREL}"
  local m
  for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
    assert_file_exist "${WORK}/${FIXTURE_TAG}/modules-${FIXTURE_KREL}/${m}.ko"
  done
  run grep '^make ' "${STUB_LOG}"
  assert_output --partial "SYSSRC=${ROOT}/usr/src/linux-headers-common"
  assert_output --partial "SYSOUT=${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}"
  assert_output --regexp "-j[0-9]+"
  refute_output --partial "ccache"
}

@test "the running kernel is the default target" {
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --no-ccache
  assert_success
  assert_line "${WORK}/${FIXTURE_TAG}/modules-${FIXTURE_KREL}"
}

@test "ccache is used when installed, through a one-word CC that runs ccache with the compiler's path" {
  stub ccache
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}"
  assert_success
  assert_output --partial "with gcc through ccache"
  run grep '^make ' "${STUB_LOG}"
  assert_output --regexp "CC=${CACHE}/ccache-bin/[0-9a-f]{16}/gcc( |\$)"
  refute_output --partial "CC=ccache"
  local wrapper
  wrapper=$(grep -o -E "CC=[^ ]+" <<<"${output}" | head -n 1)
  wrapper=${wrapper#CC=}
  # What upstream's nv-compiler.sh runs: "$(CC) -E -P -" on its standard input.
  : >"${STUB_LOG}"
  run "${wrapper}" -E -P -
  assert_success
  run cat "${STUB_LOG}"
  assert_output "ccache $(command -v gcc) -E -P -"
}

@test "--dry-run with ccache writes no wrapper" {
  stub ccache
  run_build --root "${ROOT}" --dry-run build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}"
  assert_success
  assert_output --regexp "CC=${CACHE}/ccache-bin/[0-9a-f]{16}/gcc"
  assert_not_exist "${CACHE}/ccache-bin"
}

@test "a kernel with IBT: kernel-independent objects without ENDBR64 fail the build (8); with them it passes" {
  printf 'CONFIG_X86_KERNEL_IBT=y\n' >>"${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/.config"
  FAKE_NO_ENDBR=1 run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 8
  assert_output --partial "nv-kernel.o has no ENDBR64 instruction (it was compiled without -fcf-protection=branch), but kernel ${FIXTURE_KREL} has CONFIG_X86_KERNEL_IBT"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  run grep -c '^objdump -d -- .*nv-kernel.o$' "${STUB_LOG}"
  assert_output 2
}

@test "a kernel without IBT: the objects are not checked for ENDBR64" {
  FAKE_NO_ENDBR=1 run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  run grep -c '^objdump ' "${STUB_LOG}"
  assert_output 0
}

@test "missing headers exit 10 and name the package to install" {
  mkdir -p "${ROOT}/etc"
  printf 'ID=debian\n' >"${ROOT}/etc/os-release"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel 6.1.0-77-amd64
  assert_failure 10
  assert_output --partial "no kernel headers for 6.1.0-77-amd64"
  assert_output --partial "apt-get install linux-headers-6.1.0-77-amd64"
}

@test "missing headers of a kernel no distribution ships: the hint is --kernel-src with its build tree, not a package" {
  mkdir -p "${ROOT}/etc"
  printf 'ID=debian\n' >"${ROOT}/etc/os-release"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel 6.18.44-fc-v1294
  assert_failure 10
  assert_output --partial "no kernel headers for 6.18.44-fc-v1294"
  assert_output --partial "no distribution packages headers for 6.18.44-fc-v1294 (not a distribution kernel's release): build against the tree it was built in, with its .config and Module.symvers: --kernel-src DIR"
  refute_output --partial "linux-headers-6.18.44-fc-v1294"
  # distribution kernels keep their package's name
  local k
  for k in 6.12.38+deb13-amd64 6.8.0-45-generic; do
    run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${k}"
    assert_output --partial "apt-get install linux-headers-${k}"
  done
  printf 'ID=fedora\n' >"${ROOT}/etc/os-release"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel 6.11.4-301.fc41.x86_64
  assert_output --partial "dnf install kernel-devel-6.11.4-301.fc41.x86_64"
}

@test "--kernel with a non-release string is refused (2)" {
  run_build build "${FIXTURE_TAG}" --kernel '../../etc'
  assert_failure 2
}

@test "--kernel-src: split headers extracted outside /usr/src get a shadow with the include fixed" {
  local sysroot="${BATS_TEST_TMPDIR}/sysroot/usr/src"
  mkdir -p "${sysroot}/linux-headers-6.12.0-test-amd64/include/config" "${sysroot}/linux-headers-6.12.0-test-common" \
    "${BATS_TEST_TMPDIR}/sysroot/usr/lib/linux-kbuild-6.12/scripts"
  printf 'include /usr/src/linux-headers-6.12.0-test-common/Makefile\n' >"${sysroot}/linux-headers-6.12.0-test-amd64/Makefile"
  printf '6.12.0-test-amd64\n' >"${sysroot}/linux-headers-6.12.0-test-amd64/include/config/kernel.release"
  printf '# common\n' >"${sysroot}/linux-headers-6.12.0-test-common/Makefile"
  ln -s ../../lib/linux-kbuild-6.12/scripts "${sysroot}/linux-headers-6.12.0-test-amd64/scripts"
  run_build build "${FIXTURE_TAG}" --kernel-src "${sysroot}/linux-headers-6.12.0-test-amd64" --no-ccache
  assert_success
  local shadow="${WORK}/kernels/linux-headers-6.12.0-test-amd64"
  assert_file_exist "${shadow}/Makefile"
  run cat "${shadow}/Makefile"
  assert_output "include ${sysroot}/linux-headers-6.12.0-test-common/Makefile"
  assert_equal "$(readlink "${shadow}/scripts")" "${BATS_TEST_TMPDIR}/sysroot/usr/lib/linux-kbuild-6.12/scripts"
  run grep '^make ' "${STUB_LOG}"
  assert_output --partial "SYSSRC=${sysroot}/linux-headers-6.12.0-test-common"
  assert_output --partial "SYSOUT=${shadow}"
  assert_file_exist "${WORK}/${FIXTURE_TAG}/modules-6.12.0-test-amd64/nvidia.ko"
}

@test "--kernel-src: a kernel's own source tree (its Makefile includes \$(srctree)/...) is source and output at once" {
  local tree="${BATS_TEST_TMPDIR}/linux-6.1"
  mkdir -p "${tree}/include/config"
  # shellcheck disable=SC2016 # kbuild's own variables, literally
  printf 'VERSION = 6\ninclude $(srctree)/arch/$(SRCARCH)/Makefile\n' >"${tree}/Makefile"
  printf '6.1.192\n' >"${tree}/include/config/kernel.release"
  run_build build "${FIXTURE_TAG}" --kernel-src "${tree}" --no-ccache
  assert_success
  run grep '^make ' "${STUB_LOG}"
  assert_output --partial "SYSSRC=${tree} SYSOUT=${tree}"
  assert_file_exist "${WORK}/${FIXTURE_TAG}/modules-6.1.192/nvidia.ko"
}

@test "--kernel-src without kernel.release is refused (10)" {
  mkdir -p "${BATS_TEST_TMPDIR}/notakernel"
  touch "${BATS_TEST_TMPDIR}/notakernel/Makefile"
  run_build build "${FIXTURE_TAG}" --kernel-src "${BATS_TEST_TMPDIR}/notakernel"
  assert_failure 10
  assert_output --partial "not a prepared kernel build directory"
}

@test "the kernel release comes from UTS_RELEASE, which Debian's kernel.release does not hold" {
  mkdir -p "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/include/generated"
  printf '6.1.999\n' >"${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/include/config/kernel.release"
  printf '#define UTS_RELEASE "%s"\n' "${FIXTURE_KREL}" >"${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/include/generated/utsrelease.h"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_line "${WORK}/${FIXTURE_TAG}/modules-${FIXTURE_KREL}"
}

@test "a failed build exits 8, shows the errors, and leaves no modules" {
  FAKE_MAKE_FAIL=1 run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 8
  assert_output --partial "build of ${FIXTURE_TAG} for ${FIXTURE_KREL} failed"
  assert_output --partial "nv.c:1: error: fake failure"
  assert_output --partial "nothing was installed"
  assert_not_exist "${WORK}/${FIXTURE_TAG}/modules-${FIXTURE_KREL}"
}

@test "modules with the wrong version fail the checks (8)" {
  FAKE_KO_VERSION=999.10.02 run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 8
  assert_output --partial "has version '999.10.02', expected ${FIXTURE_TAG}"
  assert_not_exist "${WORK}/${FIXTURE_TAG}/modules-${FIXTURE_KREL}"
}

@test "modules with the wrong vermagic fail the checks (8)" {
  FAKE_KO_KREL=6.1.0-1-other run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 8
  assert_output --partial "expected kernel ${FIXTURE_KREL}"
}

@test "a missing module fails the checks (8)" {
  stub make - <<'STUB'
dir=""; while [[ $# -gt 0 ]]; do [[ $1 == -C ]] && dir=$2; shift; done
printf "version=%s\nvermagic=%s x\n" "${FIXTURE_TAG}" "${FIXTURE_KREL}" >"${dir}/kernel-open/nvidia.ko"
STUB
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 8
  assert_output --partial "nvidia-uvm.ko was not built"
}

@test "a second build for the same kernel reuses the build tree, unless the kernel's .config or Module.symvers changed" {
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  touch "${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL}/incremental-marker"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_file_exist "${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL}/incremental-marker"
  # the kernel's export list changed in place: a fresh tree (no stale conftest results)
  printf '0x0\tclose_fd\tvmlinux\tEXPORT_SYMBOL\t\n' >>"${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/Module.symvers"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_not_exist "${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL}/incremental-marker"
}

@test "a patched tree changed after patching is refused (6) before anything is compiled: a byte flipped, a file added, a file removed" {
  local out="${WORK}/${FIXTURE_TAG}/patched" units
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  cp -a "${out}" "${BATS_TEST_TMPDIR}/pristine"
  printf 'X' | dd of="${out}/kernel-open/nvidia/nv-pci.c" bs=1 seek=0 count=1 conv=notrunc status=none
  for units in "" --units-only; do
    : >"${STUB_LOG}"
    run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" ${units:+"${units}"} --no-ccache
    assert_failure 6
    assert_output --partial "build.sh: ${out} changed since it was patched (changed: kernel-open/nvidia/nv-pci.c)"
    assert_output --partial "rm -rf -- ${out}"
    run grep -c '^make ' "${STUB_LOG}"
    assert_output 0
  done
  rm -rf "${out}" && cp -a "${BATS_TEST_TMPDIR}/pristine" "${out}"
  printf 'int x;\n' >"${out}/kernel-open/nvidia/extra.c"
  rm "${out}/src/nvidia/kern_bus.c"
  : >"${STUB_LOG}"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 6
  assert_output --partial "changed since it was patched (added: kernel-open/nvidia/extra.c; removed: src/nvidia/kern_bus.c)"
  run grep -c '^make ' "${STUB_LOG}"
  assert_output 0
}

@test "build --dry-run prints the make command and builds nothing" {
  run_build --root "${ROOT}" --dry-run build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_output --partial "would run: make -C ${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL} modules"
  assert_not_exist "${WORK}"
  run grep -c '^make ' "${STUB_LOG}"
  assert_output 0
}

@test "--kernel-src: a Debian 7.x -amd64 Makefile (KBUILD_OUTPUT= first, include second) gets both lines fixed" {
  local sysroot="${BATS_TEST_TMPDIR}/sysroot/usr/src" amd64 shadow
  amd64="${sysroot}/linux-headers-7.3.4+deb13-amd64"
  mkdir -p "${amd64}/include/config" "${sysroot}/linux-headers-7.3.4+deb13-common"
  printf 'KBUILD_OUTPUT=/usr/src/linux-headers-7.3.4+deb13-amd64\ninclude /usr/src/linux-headers-7.3.4+deb13-common/Makefile\n' \
    >"${amd64}/Makefile"
  printf '7.3.4+deb13-amd64\n' >"${amd64}/include/config/kernel.release"
  printf '# common\n' >"${sysroot}/linux-headers-7.3.4+deb13-common/Makefile"
  run_build build "${FIXTURE_TAG}" --kernel-src "${amd64}" --no-ccache
  assert_success
  shadow="${WORK}/kernels/linux-headers-7.3.4+deb13-amd64"
  run cat "${shadow}/Makefile"
  assert_line --index 0 "KBUILD_OUTPUT=${shadow}"
  assert_line --index 1 "include ${sysroot}/linux-headers-7.3.4+deb13-common/Makefile"
  run grep '^make ' "${STUB_LOG}"
  assert_output --partial "SYSSRC=${sysroot}/linux-headers-7.3.4+deb13-common"
  assert_output --partial "SYSOUT=${shadow}"
}

# kernel_config KREL TEXT: the fixture kernel's .config names its compiler.
kernel_config() {
  printf 'CONFIG_CC_VERSION_TEXT="%s"\n' "$2" >"${ROOT}/usr/src/linux-headers-$1/.config"
}

@test "the kernel's own compiler (CONFIG_CC_VERSION_TEXT) is used when installed" {
  kernel_config "${FIXTURE_KREL}" "gcc-14 (Debian 14.2.0-19) 14.2.0"
  stub gcc-14 <<<''
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_output --partial "with gcc-14"
  run grep '^make ' "${STUB_LOG}"
  assert_output --partial "CC=gcc-14"
}

@test "a kernel built with a compiler that is not installed: warning, and the build goes on with gcc" {
  kernel_config "${FIXTURE_KREL}" "gcc-99 (Debian 99.1.0-1) 99.1.0"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_output --partial "was built with gcc-99, which is not installed; using gcc"
  run grep '^make ' "${STUB_LOG}"
  assert_output --partial "CC=gcc"
}

# clang_kernel VERSION_TEXT CLANG_VERSION [lld]: the fixture kernel was built
# with clang (and linked with lld).
clang_kernel() {
  kernel_config "${FIXTURE_KREL}" "$1"
  printf 'CONFIG_CC_IS_CLANG=y\nCONFIG_CLANG_VERSION=%s\n' "$2" >>"${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/.config"
  [[ ${3:-} != lld ]] || printf 'CONFIG_LD_IS_LLD=y\n' >>"${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/.config"
}

# clang_stub NAME VERSION: a clang that says it is VERSION.
clang_stub() {
  stub "$1" - <<STUB
[[ \$1 == --version ]] && echo "Debian clang version $2 (1)" && echo "Target: x86_64-pc-linux-gnu"
exit 0
STUB
}

@test "a kernel built with clang (CONFIG_CC_IS_CLANG) is built with its clang and LLVM=-<major>, and lld where it was linked with lld" {
  clang_kernel "Debian clang version 19.1.7 (3+b1)" 190107 lld
  clang_stub clang-19 19.1.7
  stub ld.lld-19 <<<''
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_output --partial "with clang-19"
  run grep '^make .* modules ' "${STUB_LOG}"
  assert_output --partial "CC=clang-19 LLVM=-19 LD=ld.lld-19 IGNORE_CC_MISMATCH=1"
}

@test "a clang kernel with an unversioned clang of its version: LLVM=1; GNU ld where it was linked with it" {
  clang_kernel "clang version 20.1.8" 200108
  clang_stub clang 20.1.8
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  run grep '^make .* modules ' "${STUB_LOG}"
  assert_output --partial "CC=clang LLVM=1 IGNORE_CC_MISMATCH=1"
  refute_output --partial "LD="
}

@test "a clang kernel without its clang (another version only, or its lld missing): refused (13) before anything is compiled" {
  clang_kernel "clang version 20.1.8" 200108 lld
  clang_stub clang 19.1.7
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 13
  assert_output --partial "kernel ${FIXTURE_KREL} was built with clang 20 (clang version 20.1.8): its modules must be built with clang 20 and LLVM=1"
  assert_output --partial "neither clang-20 nor a clang 20 is installed (Debian: clang-20 lld-20 llvm-20; Arch, CachyOS: clang lld llvm); nothing was built"
  clang_stub clang-20 20.1.8
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 13
  assert_output --partial "was linked with lld (CONFIG_LD_IS_LLD), and ld.lld-20 is not installed (Debian: lld-20; Arch, CachyOS: lld)"
  # a clang kernel whose .config names no clang version at all
  kernel_config "${FIXTURE_KREL}" "clang"
  printf 'CONFIG_CC_IS_CLANG=y\n' >>"${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/.config"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 13
  assert_output --partial "its .config names no clang version (CONFIG_CLANG_VERSION); nothing was built"
  run grep -c '^make ' "${STUB_LOG}"
  assert_output 0
}

@test "the kernel-independent objects of another kernel's build are reused only with the same compiler" {
  local other=6.1.0-98-test
  fixture_kernel "${ROOT}" "${other}"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  mkdir -p "${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL}/src/nvidia/_out"
  touch "${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL}/src/nvidia/_out/nv-kernel.o"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${other}" --no-ccache
  assert_success
  assert_file_exist "${WORK}/${FIXTURE_TAG}/build-${other}/src/nvidia/_out/nv-kernel.o"
  # The same kernel again, now declaring another compiler: a fresh tree.
  kernel_config "${other}" "gcc-14 (Debian 14.2.0-19) 14.2.0"
  stub gcc-14 - <<<'echo "gcc-14 (Debian 14.2.0-19) 14.2.0"'
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${other}" --no-ccache
  assert_success
  assert_not_exist "${WORK}/${FIXTURE_TAG}/build-${other}/src/nvidia/_out/nv-kernel.o"
}

@test "two names of one compiler are one compiler: the objects are reused; another file of the same version is not" {
  local other=6.1.0-98-test
  fixture_kernel "${ROOT}" "${other}"
  # Like gcc, the version line starts with the name it was called by.
  stub gcc-14 - <<'STUB'
echo "${0##*/} (Debian 14.2.0-19) 14.2.0"
STUB
  ln -s gcc-14 "${STUBS}/x86_64-linux-gnu-gcc-14"
  kernel_config "${FIXTURE_KREL}" "gcc-14 (Debian 14.2.0-19) 14.2.0"
  kernel_config "${other}" "x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  mkdir -p "${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL}/src/nvidia/_out"
  touch "${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL}/src/nvidia/_out/nv-kernel.o"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${other}" --no-ccache --verbose
  assert_success
  assert_output --partial "with x86_64-linux-gnu-gcc-14"
  assert_output --partial "reusing the kernel-independent objects of ${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL}"
  assert_file_exist "${WORK}/${FIXTURE_TAG}/build-${other}/src/nvidia/_out/nv-kernel.o"
  # A separate executable that prints the same version line is another compiler.
  rm "${STUBS}/x86_64-linux-gnu-gcc-14"
  cp "${STUBS}/gcc-14" "${STUBS}/x86_64-linux-gnu-gcc-14"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${other}" --no-ccache
  assert_success
  assert_not_exist "${WORK}/${FIXTURE_TAG}/build-${other}/src/nvidia/_out/nv-kernel.o"
}

@test "--units-only compiles each changed unit with upstream's rules and makes no modules" {
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache --units-only
  assert_success
  assert_line "ok    src/nvidia/kern_bus.c"
  assert_line "ok    kernel-open/nvidia/nv-pci.c (kernel ${FIXTURE_KREL})"
  run grep '^make ' "${STUB_LOG}"
  assert_line --regexp "^make -C ${WORK}/${FIXTURE_TAG}/units/src/nvidia CC=gcc _out/Linux_x86_64/kern_bus.o\$"
  assert_output --partial "-C ${ROOT}/usr/src/linux-headers-common M=${WORK}/${FIXTURE_TAG}/units/kernel-open"
  assert_output --partial "NV_KERNEL_OUTPUT=${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}"
  assert_output --partial "KBUILD_OUTPUT=${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}"
  assert_output --partial "NV_KERNEL_MODULES=nvidia nvidia/nv-pci.o"
  assert_not_exist "${WORK}/${FIXTURE_TAG}/modules-${FIXTURE_KREL}"
  assert_not_exist "${WORK}/${FIXTURE_TAG}/units"
}

@test "--units-only: conftest results are reused for the same conftest inputs only" {
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache --units-only
  assert_success
  run grep -c '^conftests ran$' "${STUB_LOG}"
  assert_output 1
  run find "${CACHE}/conftest" -name headers.h
  assert_output --regexp "^${CACHE}/conftest/[0-9a-f]{64}/headers.h\$"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache --units-only --verbose
  assert_success
  assert_output --partial "conftest results of the same inputs reused"
  run grep -c '^conftests ran$' "${STUB_LOG}"
  assert_output 1
  # Another kernel configuration: the conftests run again.
  printf 'CONFIG_OTHER=y\n' >>"${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/.config"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache --units-only
  assert_success
  run grep -c '^conftests ran$' "${STUB_LOG}"
  assert_output 2
}

@test "conftest_key: changes with conftest.sh and the module's Kbuild, not with the version string" {
  local k="${BATS_TEST_TMPDIR}/k" a b c d
  mkdir -p "${k}/nvidia"
  printf 'echo test\n' >"${k}/conftest.sh"
  printf 'EXTRA_CFLAGS += -DNV_VERSION_STRING=\\"1.0\\"\nEXTRA_CFLAGS += -Wall\n' >"${k}/Kbuild"
  printf 'NV_CONFTEST_FUNCTION_COMPILE_TESTS += a\n' >"${k}/nvidia/nvidia.Kbuild"
  a=$(key_of "${k}")
  sed -i 's/1\.0/2.0/' "${k}/Kbuild"
  b=$(key_of "${k}")
  assert_equal "${b}" "${a}"
  printf 'NV_CONFTEST_FUNCTION_COMPILE_TESTS += b\n' >>"${k}/nvidia/nvidia.Kbuild"
  c=$(key_of "${k}")
  printf 'echo test2\n' >"${k}/conftest.sh"
  d=$(key_of "${k}")
  [[ ${c} != "${b}" && ${d} != "${c}" && ${a} =~ ^[0-9a-f]{64}$ ]]
}

key_of() {
  (
    # shellcheck source=build.sh
    source "${BATS_TEST_DIRNAME}/../../build.sh"
    P2P_SYSSRC=/nonexistent P2P_SYSOUT=/nonexistent conftest_key "$1" gcc nvidia
  )
}

@test "changed_units: a kernel-open header the series changes adds the first listed unit of each module that includes it" {
  local tree="${BATS_TEST_TMPDIR}/tree" k
  k="${tree}/kernel-open"
  mkdir -p "${k}/nvidia" "${k}/nvidia-drm" "${k}/nvidia-uvm" "${k}/common/inc"
  printf '+++ b/kernel-open/common/inc/nv-hdr.h\n@@ -1 +1 @@\n' >"${NVP2P_DATA_DIR}/patches/999/compat-0002-header.patch"
  printf 'compat-0002-header.patch\n' >>"${NVP2P_DATA_DIR}/series"
  # nvidia: a-unlisted.c is in no sources list, nv-b.c comes before nv-c.c.
  printf '#include "nv-hdr.h"\n' >"${k}/nvidia/a-unlisted.c"
  printf '#include "other.h"\n# include "nv-hdr.h"\n' >"${k}/nvidia/nv-b.c"
  printf '#include <nv-hdr.h>\n' >"${k}/nvidia/nv-c.c"
  printf 'NVIDIA_SOURCES += nvidia/nv-c.c\nNVIDIA_SOURCES += nvidia/nv-b.c\n' >"${k}/nvidia/nvidia-sources.Kbuild"
  printf '#include "nv-hdr.h"\n' >"${k}/nvidia-drm/drm-x.c"
  printf 'NVIDIA_DRM_SOURCES += nvidia-drm/drm-x.c\n' >"${k}/nvidia-drm/nvidia-drm-sources.mk"
  # Other names, a mention outside #include: not includers.
  printf '#include "nv-hdrxh"\n#include "nv-hdr.h.in"\n/* nv-hdr.h */\n' >"${k}/nvidia-uvm/uvm-y.c"
  printf 'NVIDIA_UVM_SOURCES += nvidia-uvm/uvm-y.c\n' >"${k}/nvidia-uvm/nvidia-uvm-sources.Kbuild"
  run units_of "${tree}"
  assert_success
  assert_output "$(printf '%s\n' kernel-open/nvidia-drm/drm-x.c kernel-open/nvidia/nv-b.c \
    kernel-open/nvidia/nv-pci.c src/nvidia/kern_bus.c)"
  # Without the tree (a dry run before patching), the .c files of the patches.
  run units_of ""
  assert_output "$(printf '%s\n' kernel-open/nvidia/nv-pci.c src/nvidia/kern_bus.c)"
}

units_of() {
  (
    # shellcheck source=build.sh
    source "${BATS_TEST_DIRNAME}/../../build.sh"
    P2P_CACHE_DIR="${CACHE}"
    versions_load
    changed_units "${FIXTURE_TAG}" "$1"
  )
}

@test "--units-only: a unit of another module runs the nvidia module's conftests too (the common headers test their macros)" {
  local tree="${BATS_TEST_TMPDIR}/tree"
  mkdir -p "${tree}/kernel-open/nvidia-uvm"
  run bash -c '
    source "$1/build.sh"
    run_logged() { printf "%s\n" "$*"; }
    P2P_CACHE_DIR=$2 P2P_SYSSRC=/nonexistent P2P_SYSOUT=/nonexistent P2P_MAKE_CC=gcc P2P_KREL=6.1.0-56-amd64
    compile_kernel_open_units "$3" gcc nvidia-uvm/uvm_gpu.c nvidia-uvm/uvm_va_space.c' _ \
    "${REPO_ROOT}" "${CACHE}" "${tree}"
  assert_success
  assert_line --partial "NV_KERNEL_MODULES=nvidia nvidia-uvm nvidia-uvm/uvm_gpu.o nvidia-uvm/uvm_va_space.o"
  assert_line "ok    kernel-open/nvidia-uvm/uvm_gpu.c (kernel 6.1.0-56-amd64)"
}

@test "--units-only: a unit that does not compile exits 8 and names it" {
  FAKE_UNIT_FAIL=kern_bus run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache --units-only
  assert_failure 8
  assert_line "FAIL  src/nvidia/kern_bus.c"
  assert_output --partial "kern_bus.c:1:1: error: fake unit failure"
  assert_output --partial "a changed translation unit of ${FIXTURE_TAG} does not compile"
}

@test "--units-only needs no kernel headers when the series changes no kernel-open unit" {
  rm "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch"
  printf 'compat-0001-resize.patch  not needed in this test\n' >"${NVP2P_DATA_DIR}/patches/999/dropped.conf"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel 6.1.0-77-amd64 --no-ccache --units-only
  assert_success
  assert_line "ok    src/nvidia/kern_bus.c"
  refute_output --partial "kernel-open"
}

@test "kernels.conf: a tag whose patched tree a kernel cannot build is refused at once (13), with the reason" {
  printf '%s\n' '# test rules' \
    '6.1 kernel-open/nvidia/nv-pci.c forbids pci_resize_resource\(0,[[:space:]]1,[[:space:]]2\) the 3-argument call is gone from this kernel' \
    '6.1 kernel-open/nvidia/not-in-this-tag.c needs anything a rule about a file this tree does not have' \
    '9.9 src/nvidia/kern_bus.c needs nothing-like-this a rule for a kernel not reached yet' >"${NVP2P_DATA_DIR}/kernels.conf"
  # With compat-0001 the call has 4 arguments: the 6.1 rule is met.
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  # Without it, the build is refused before make runs.
  rm "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch"
  printf 'compat-0001-resize.patch  test\n' >"${NVP2P_DATA_DIR}/patches/999/dropped.conf"
  : >"${STUB_LOG}"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 13
  assert_output --partial "${FIXTURE_TAG} cannot be built for kernel ${FIXTURE_KREL}: Linux 6.1+: the 3-argument call is gone from this kernel"
  refute_output --partial "Linux 9.9+"
  refute_output --partial "a file this tree does not have"
  run grep -c '^make ' "${STUB_LOG}"
  assert_output 0
}

@test "kernels.conf: a malformed rule is a data error (4)" {
  printf '6.1 kernel-open/nvidia/nv-pci.c sometimes x reason\n' >"${NVP2P_DATA_DIR}/kernels.conf"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_failure 4
  assert_output --partial "kernels.conf:1: expected: kernel file needs|forbids regex reason"
}

@test "the real kernels.conf refuses each tag family on the kernels it cannot support" {
  local tree="${BATS_TEST_TMPDIR}/tree"
  mkdir -p "${tree}/kernel-open/common/inc" "${tree}/kernel-open/nvidia"
  # A 565-like tree: EXTRA_CFLAGS, strncpy, no drm_atomic_commit conftest.
  printf '%s\n' 'EXTRA_CFLAGS += -Isrc' >"${tree}/kernel-open/Kbuild"
  printf '#if defined(NV_LINUX_OF_GPIO_H_PRESENT)\n' >"${tree}/kernel-open/common/inc/nv-linux.h"
  printf 'strncpy(a, b, 1);\n' >"${tree}/kernel-open/nvidia/os-interface.c"
  : >"${tree}/kernel-open/Makefile"
  printf '        drm_unlocked_ioctl_flag_present)\n' >"${tree}/kernel-open/conftest.sh"
  # (build.sh's run() replaces bats' run once sourced: call directly.)
  # shellcheck source=/dev/null
  source "${BUILD_SH}"
  assert_equal "$(P2P_DATA_DIR=${REPO_ROOT} kernel_rules_unmet "${tree}" 6.12.117+deb12-amd64)" ""
  assert_equal "$(P2P_DATA_DIR=${REPO_ROOT} kernel_rules_unmet "${tree}" 6.15.2 | cut -c1-40)" "Linux 6.15+: kernel-open passes its comp"
  assert_equal "$(P2P_DATA_DIR=${REPO_ROOT} kernel_rules_unmet "${tree}" 7.2.13+deb14-amd64 | cut -d: -f1 | tr '\n' ' ')" \
    "Linux 6.15+ Linux 6.19+ Linux 6.19+ Linux 6.19+ Linux 7.2+ Linux 7.2+ Linux 7.2+ Linux 7.2+ "
  # A 590.48.01-like tree with compat-0003..0006 and 0011/0012 applied: fits 7.2;
  # without compat-0011's conftest, refused from 6.19 for that reason alone.
  (
    mkdir -p "${tree}/kernel-open/nvidia-drm"
    cat >"${tree}/kernel-open/Kbuild" <<'KBUILD'
ccflags-y += -I$(src)
NV_CONFTEST_CFLAGS += $(call cc-option,-fms-extensions,)
KBUILD
    printf 'static inline int nv_in_hardirq(void) { return in_hardirq(); }\n' >"${tree}/kernel-open/common/inc/nv-time.h"
    printf 'strscpy(a, b, 1);\n' >"${tree}/kernel-open/nvidia/os-interface.c"
    printf '        %s)\n' drm_unlocked_ioctl_flag_present drm_atomic_commit_struct_present dev_pagemap_ops_has_folio_free \
      zone_device_page_init_has_pgmap_and_order_args vma_flags_set_word dma_map_ops_has_map_phys >"${tree}/kernel-open/conftest.sh"
  )
  assert_equal "$(P2P_DATA_DIR=${REPO_ROOT} kernel_rules_unmet "${tree}" 7.2.13+deb14-amd64)" ""
  sed -i '/dev_pagemap_ops_has_folio_free/d' "${tree}/kernel-open/conftest.sh"
  assert_equal "$(P2P_DATA_DIR=${REPO_ROOT} kernel_rules_unmet "${tree}" 6.19.1 | cut -c1-70)" \
    "Linux 6.19+: nvidia-uvm sets dev_pagemap_ops.page_free, which Linux 6."
  rm -f "${tree}/kernel-open/common/inc/nv-time.h" "${tree}/kernel-open/nvidia/os-interface.c"
  # A 535.54.03-like tree: vmas passed to get_user_pages(), follow_pfn() called,
  # no DRM_UNLOCKED test; no libspdm_shash.c (that rule does not apply).
  printf '#elif defined(NV_GET_USER_PAGES_HAS_ARGS_TSK_FLAGS)\n' >"${tree}/kernel-open/common/inc/nv-mm.h"
  printf '#if defined(NV_UNSAFE_FOLLOW_PFN_PRESENT)\n' >"${tree}/kernel-open/nvidia/os-mlock.c"
  : >"${tree}/kernel-open/conftest.sh"
  assert_equal "$(P2P_DATA_DIR=${REPO_ROOT} kernel_rules_unmet "${tree}" 6.1.0-56-amd64)" ""
  assert_equal "$(P2P_DATA_DIR=${REPO_ROOT} kernel_rules_unmet "${tree}" 6.12.117+deb12-amd64 | cut -d: -f1 | tr '\n' ' ')" \
    "Linux 6.5+ Linux 6.8+ Linux 6.10+ "
  # A 535.86.05-like libspdm_shash.c, without the fallback: refused from 6.7.
  printf 'char *src_ipad = crypto_tfm_ctx_aligned(&src_tfm->base);\n' >"${tree}/kernel-open/nvidia/libspdm_shash.c"
  assert_equal "$(P2P_DATA_DIR=${REPO_ROOT} kernel_rules_unmet "${tree}" 6.7.1 | cut -d: -f1 | tr '\n' ' ')" \
    "Linux 6.5+ Linux 6.7+ "
}

@test "a run that does work names its log on its first line, a failed fetch too; the log is there" {
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_regex "${lines[0]}" "^build.sh: log: ${CACHE}/logs/[0-9TZ]+-[0-9]+\.log$"
  assert_file_exist "${lines[0]#build.sh: log: }"
  run_build fetch 999.20.01 --source "${BATS_TEST_TMPDIR}/no-such-source"
  assert_failure
  assert_regex "${lines[0]}" "^build.sh: log: ${CACHE}/logs/"
  assert_file_exist "${lines[0]#build.sh: log: }"
}

@test "a long build says which part it is in, and every few seconds how long it took and the last object" {
  NVP2P_PROGRESS_SECONDS=1 FAKE_MAKE_PROGRESS=1 run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_output --regexp '\[[0-9]{2}:[0-9]{2}\] build     now: nv-kernel.o \(src/nvidia\)'
  assert_output --regexp '\[[0-9]{2}:[0-9]{2}\] build     now: kernel-open, nvidia-uvm'
  assert_output --regexp 'build     still building: 0 min [0-9]+ s so far, in nv-kernel.o \(src/nvidia\); last: CC src/kernel/gpu/bus/kern_bus.c'
  # paths relative to the build tree
  assert_output --regexp 'build     still building: 0 min [0-9]+ s so far, in kernel-open, nvidia-uvm; last: CC \[M\] kernel-open/nvidia-uvm/uvm_va_space.o'
  # NO_COLOR, no terminal: plain lines
  refute_output --partial $'\033'
  # make's output is in the log, the progress lines only on stderr
  local log=${lines[0]#build.sh: log: }
  run grep -c 'CC \[M\]' "${log}"
  assert_output 1
  run grep -c 'still building' "${log}"
  assert_output 0
  # the watcher is gone with the run: the next run gets the lock
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
}

@test "fetch, patch and build end with a next: line naming the next command" {
  run_build patch "${FIXTURE_TAG}"
  assert_success
  assert_line "build.sh: next: ${BUILD_SH} build ${FIXTURE_TAG} --cache-dir ${CACHE} --work-dir ${WORK}"
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --kernel "${FIXTURE_KREL}" --no-ccache
  assert_success
  assert_line "build.sh: next: ${BUILD_SH} install ${FIXTURE_TAG} --kernel ${FIXTURE_KREL} --cache-dir ${CACHE} --work-dir ${WORK} --root ${ROOT}"
  as_user
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --no-ccache
  assert_line "build.sh: next: sudo ${BUILD_SH} install ${FIXTURE_TAG} --cache-dir ${CACHE} --work-dir ${WORK} --root ${ROOT}"
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-run
  assert_success
  assert_line --partial "build.sh: next: ${BUILD_SH} build ${FIXTURE_TAG} --cache-dir ${CACHE} --work-dir ${WORK} (it patches first"
  # a dry run did nothing to go on from
  run_build --dry-run patch "${FIXTURE_TAG}"
  refute_output --partial "next:"
}

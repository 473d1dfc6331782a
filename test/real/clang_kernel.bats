#!/usr/bin/env bats
# A kernel built with clang, as CachyOS builds its kernels (clang, lld,
# ThinLTO, IBT): ci/setup/clang-kernel.sh configures and prepares Debian's
# linux-source-6.1 with LLVM=1, then `build.sh build` builds all five modules
# of a real tag against it. build.sh takes the kernel's clang (its major
# version, CONFIG_CLANG_VERSION) and passes LLVM=-<major> and LD=ld.lld-<major>
# (kernel-open/Makefile would hand GNU ld to kbuild, which cannot link
# ThinLTO objects); the modules' .comment names that clang; the module checks
# and the ENDBR64 check (the kernel has IBT) pass.
#
# Heavy (the kernel tree about 3 minutes, the build 10-15 with an empty
# ccache; clang's objects share nothing with gcc's ccache), so it takes turns
# with the other heavy tests (dkms_record.bash): a pass is recorded with the
# digest of its inputs (build.sh, lib/, the tag's family, ci/setup/clang-kernel.sh,
# this file, the clang) and, for CLANG_MAX_AGE_DAYS, SKIPs with that pass's
# date (NVP2P_TEST_CLANG=always runs it). It SKIPs, with the reason, where
# clang, lld, llvm, linux-source-6.1 or Debian's kernel headers of its version
# are missing, or the time left before
# NVP2P_TEST_DEADLINE does not hold it.

load ../test_helper
load dkms_record

CLANG_TAG=580.65.06
CLANG_NEED_MIN=20
CLANG_MAX_AGE_DAYS=7

setup_file() {
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  export K_CACHE="${NVP2P_TEST_CACHE:-${BATS_FILE_TMPDIR}/cache}" K_SKIP="" K_RC=0
  export K_OUT="${BATS_FILE_TMPDIR}/build.out" K_TREE="" K_MODS=""
  mkdir -p "${K_CACHE}"
  clang_cannot_run
  [[ -z ${K_SKIP} ]] || return 0
  clang_run
}

# clang_cannot_run: K_SKIP, why not here, or nothing; K_GIT, K_RECORD,
# K_DIGEST.
clang_cannot_run() {
  local t
  for t in clang ld.lld llvm-ar; do
    command -v "${t}" >/dev/null 2>&1 || { K_SKIP="${t} is not installed (Debian: clang lld llvm)" && return 0; }
  done
  [[ -r /usr/src/linux-source-6.1.tar.xz ]] || { K_SKIP="linux-source-6.1 is not installed" && return 0; }
  K_GIT=$(real_git_dir "${K_CACHE}") || { K_SKIP=${K_GIT} && return 0; }
  K_RECORD="${K_CACHE}/clang-kernel-passed"
  K_DIGEST=$(clang_digest) || { K_SKIP="${CLANG_TAG} is not in versions.conf" && return 0; }
  export K_GIT K_RECORD K_DIGEST
  K_SKIP=$(heavy_gate "${K_CACHE}/heavy-turns" clang-kernel "${CLANG_NEED_MIN}" "${K_RECORD}" "${K_DIGEST}" "${CLANG_MAX_AGE_DAYS}" NVP2P_TEST_CLANG)
}

clang_digest() {
  {
    tree_digest "${REPO_ROOT}" - "${CLANG_TAG}" ci/setup/clang-kernel.sh test/real/clang_kernel.bats || return 1
    clang --version | head -n 1
  } | sha256sum | cut -d' ' -f1
}

# clang_run: the kernel tree, then build.sh build against it (its own cache
# directory: ccache entries of clang apart from gcc's).
clang_run() {
  local cache="${K_CACHE}/clang-kernel" work="${NVP2P_TEST_WORK:-${BATS_FILE_TMPDIR}/work}-clang"
  mkdir -p "${cache}"
  K_TREE=$("${REPO_ROOT}/ci/setup/clang-kernel.sh" "${cache}/kernel" 2>"${BATS_FILE_TMPDIR}/kernel.log") || K_RC=$?
  export K_TREE
  # 77: something it needs is missing here (the reason on its last line)
  [[ ${K_RC} -ne 77 ]] || K_SKIP=$(tail -n 1 "${BATS_FILE_TMPDIR}/kernel.log")
  [[ ${K_RC} -eq 0 ]] || return 0
  "${REPO_ROOT}/build.sh" --cache-dir "${cache}/build" --work-dir "${work}" build "${CLANG_TAG}" \
    --source "${K_GIT}" --kernel-src "${K_TREE}" >"${K_OUT}" 2>&1 || K_RC=$?
  K_MODS="${work}/${CLANG_TAG}/modules-$(cat "${K_TREE}/include/config/kernel.release" 2>/dev/null || true)"
  export K_RC K_MODS
}

setup() {
  [[ -z ${K_SKIP} ]] || skip "${K_SKIP}"
}

@test "clang kernel: ci/setup/clang-kernel.sh prepared a tree with clang, lld, ThinLTO and IBT" {
  [[ -n ${K_TREE} && -f ${K_TREE}/.config ]] || { cat "${BATS_FILE_TMPDIR}/kernel.log"; false; }
  run grep -E '^CONFIG_(CC_IS_CLANG|LD_IS_LLD|LTO_CLANG_THIN|X86_KERNEL_IBT)=y$' "${K_TREE}/.config"
  assert_equal "${#lines[@]}" 4
}

@test "clang kernel: build.sh builds all five modules of ${CLANG_TAG} with the kernel's clang, LLVM=-<major> and its ld.lld" {
  run cat "${K_OUT}"
  [[ ${K_RC} -eq 0 ]] || { printf '%s\n' "${output}"; false; }
  local major
  major=$(sed -n -E 's/^CONFIG_CLANG_VERSION=([0-9]+)$/\1/p' "${K_TREE}/.config")
  major=$((major / 10000))
  assert_output --regexp "build +${CLANG_TAG//./\\.} for .* with clang(-${major})?( through ccache)? "
  local m
  for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
    assert_file_exist "${K_MODS}/${m}.ko"
  done
  # the objects of the module (kernel-open, built by kbuild) name clang
  run readelf -p .comment "${K_MODS}/nvidia-uvm.ko"
  assert_output --partial "clang version ${major}."
  refute_output --partial "GCC:"
}

@test "clang kernel: the modules' vermagic is the tree's release, and the pass is recorded" {
  [[ ${K_RC} -eq 0 ]] || skip "the build failed (previous test)"
  local rel
  rel=$(cat "${K_TREE}/include/config/kernel.release")
  run modinfo -F vermagic "${K_MODS}/nvidia.ko"
  assert_output --regexp "^${rel//./\\.} "
  printf '%s %s\n' "$(date +%s)" "${K_DIGEST}" >"${K_RECORD}.tmp" && mv -f -- "${K_RECORD}.tmp" "${K_RECORD}"
}

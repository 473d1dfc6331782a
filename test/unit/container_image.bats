#!/usr/bin/env bats
# build.sh container: the OCI image, assembled by the real umoci and read back
# by the real skopeo; the base's mmdebstrap is a stand-in making a tiny root
# (no network). The entrypoint inside: test/unit/container.bats; the whole
# image in a chroot against real kernel headers: test/real/container.bats.

load ../test_helper

setup() {
  common_setup
  make_fixture
  local t
  for t in umoci skopeo; do
    command -v "${t}" >/dev/null || skip "${t} is not installed (Debian package: ${t}; ci/setup/deps.sh unit installs it)"
  done
  OUT="${BATS_TEST_TMPDIR}/oci"
  RUNFILE="${FIX}/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  export SOURCE_DATE_EPOCH=1700000000
  stub mmdebstrap - <<'STUB'
out=""
for a in "$@"; do case ${a} in *.tar.new) out=${a} ;; esac; done
[ -z "${STUB_MMDEBSTRAP_FAIL:-}" ] || exit 1
d=$(mktemp -d)
mkdir -p "${d}/etc" "${d}/usr/bin"
echo 'ID=debian' >"${d}/etc/os-release"
tar -C "${d}" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "${out}" etc usr
rm -rf "${d}"
STUB
}

container() {
  run_build container "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${RUNFILE}" --out "${OUT}" --no-ccache "$@"
}

# layer_files REF N: the files of layer N (1: base, 2: ours) of REF in OUT.
layer_files() {
  local digest
  digest=$(skopeo inspect "oci:${OUT}:$1" | grep -o 'sha256:[0-9a-f]*' | sed -n "$(($2 + 1))p")
  tar -tzf "${OUT}/blobs/sha256/${digest#sha256:}"
}

@test "container: an OCI image <tag>-debian12 with the entrypoint, the labels and two layers; the reference on stdout" {
  container
  assert_success
  assert_line "oci:${OUT}:${FIXTURE_TAG}-debian12"
  run skopeo inspect --config "oci:${OUT}:${FIXTURE_TAG}-debian12"
  assert_success
  assert_output --regexp '"Entrypoint": \[[[:space:]]*"/usr/local/bin/nvidia-driver"'
  assert_output --regexp '"Cmd": \[[[:space:]]*"init"'
  assert_output --partial "\"DRIVER_VERSION=${FIXTURE_TAG}\""
  assert_output --partial '"NVIDIA_VISIBLE_DEVICES=void"'
  assert_output --partial "\"org.opencontainers.image.version\": \"${FIXTURE_TAG}\""
  assert_output --partial "\"nvidia-p2p.run-sha256\": \"$(sha256sum "${RUNFILE}" | cut -d' ' -f1)\""
  assert_output --partial '"created": "2023-11-14T22:13:20Z"'
  run skopeo inspect --raw "oci:${OUT}:${FIXTURE_TAG}-debian12"
  assert_output --partial '"nvidia-p2p.family":'
  run layer_files "${FIXTURE_TAG}-debian12" 2
  assert_line usr/local/bin/nvidia-driver
  assert_line "usr/src/nvidia-p2p-${FIXTURE_TAG}/dkms.conf"
  assert_line "usr/src/nvidia-p2p-${FIXTURE_TAG}/nvidia/nv-kernel.o_binary"
  assert_line "drivers/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  assert_line usr/share/nvidia-p2p/image.conf
  assert_line usr/share/nvidia-p2p/nvidia-p2p.conf
  run layer_files "${FIXTURE_TAG}-debian12" 1
  assert_line etc/os-release
}

@test "container: the same inputs give the same digests; the base is made once and taken from the cache" {
  container
  assert_success
  local first
  first=$(skopeo inspect --raw "oci:${OUT}:${FIXTURE_TAG}-debian12" | sha256sum)
  rm -rf "${OUT}"
  container
  assert_success
  assert_equal "$(skopeo inspect --raw "oci:${OUT}:${FIXTURE_TAG}-debian12" | sha256sum)" "${first}"
  run grep -c '^mmdebstrap ' "${STUB_LOG}"
  assert_output 1
  # another SOURCE_DATE_EPOCH: other digests
  rm -rf "${OUT}"
  SOURCE_DATE_EPOCH=1700000001 container
  assert_success
  [[ "$(skopeo inspect --raw "oci:${OUT}:${FIXTURE_TAG}-debian12" | sha256sum)" != "${first}" ]]
}

@test "container: a cached base that no longer matches its sha256 is made again" {
  container
  assert_success
  local tar
  tar=$(ls "${CACHE}"/container/base-debian12-*.tar)
  printf 'x' >>"${tar}"
  container
  assert_success
  assert_output --partial "does not match its sha256: made again"
  run grep -c '^mmdebstrap ' "${STUB_LOG}"
  assert_output 2
}

@test "container: the base is debian12's suites from Debian's archive, or --mirror's" {
  container --mirror http://mirror.example/debian/
  assert_success
  run grep '^mmdebstrap ' "${STUB_LOG}"
  assert_output --partial "--variant=minbase --format=tar"
  assert_output --partial "bookworm "
  assert_output --partial "deb http://mirror.example/debian bookworm main"
  assert_output --partial "deb http://mirror.example/debian bookworm-updates main"
  assert_output --partial "deb http://mirror.example/debian-security bookworm-security main"
  # backports too: a node on Debian's backports kernel gets its headers at init
  assert_output --partial "deb http://mirror.example/debian bookworm-backports main"
}

@test "container: each os's base packages; ubuntu22.04 carries gcc-12 for HWE kernels" {
  run bash -c 'source "$1" && for o in debian12 ubuntu22.04; do ctr_packages "${o}"; done && ctr_sources ubuntu22.04' _ "${BUILD_SH}"
  assert_success
  assert_line "bash,ca-certificates,dwarves,gcc,kmod,libc6-dev,libelf-dev,make,mount,pciutils,util-linux,xz-utils"
  assert_line "bash,ca-certificates,dwarves,gcc,kmod,libc6-dev,libelf-dev,make,mount,pciutils,util-linux,xz-utils,gcc-12"
  assert_line "deb http://archive.ubuntu.com/ubuntu jammy-backports main universe"
}

@test "container: --no-userspace is refused (exit 3): the operator's probe needs nvidia-smi in the image" {
  container --no-userspace
  assert_failure 3
  assert_output --partial "--no-userspace: an image without NVIDIA's userspace cannot pass the GPU Operator's startup probe"
  assert_output --partial "labelled pre-installed by the driver manager"
  assert_not_exist "${OUT}"
}

@test "container: a branch below 580 is refused for GPU Operator 26.7.0 (its validator's CUDA 13.2 workload), before anything runs" {
  export NVP2P_DATA_DIR="${REPO_ROOT}" # the project's tags
  run_build container 570.211.01 --out "${OUT}"
  assert_failure 3
  assert_output --partial "driver 570.211.01 (branch 570) cannot pass the validator of GPU Operator 26.7.0"
  assert_output --partial 'validator.cuda.env: WITH_WORKLOAD="false"'
  assert_not_exist "${OUT}"
  run_build container 565.57.01 --operator v26.7.1 --out "${OUT}"
  assert_failure 3
  # an older operator release, or the workload off (said loudly): on to the build
  run_build container 570.211.01 --operator 26.3.1 --out "${OUT}" --dry-run
  refute_output --partial "cannot pass the validator"
  refute_output --partial "cannot run the CUDA workload"
  run_build container 570.211.01 --no-validator-workload --out "${OUT}" --dry-run
  assert_output --partial "cannot run the CUDA workload of GPU Operator 26.7.0's validator: the ClusterPolicy must set validator.cuda.env"
  # bad input
  run_build container 570.211.01 --operator 26.3.1 --no-validator-workload --out "${OUT}"
  assert_failure 2
  assert_output --partial "--no-validator-workload is for GPU Operator 26.7.0 and later"
  run_build container 570.211.01 --operator latest
  assert_failure 2
  assert_output --partial "--operator takes the GPU Operator's release"
}

@test "container: image.conf and the labels name the operator release and the validator workload" {
  container --operator 26.7.0
  assert_success
  run skopeo inspect --config "oci:${OUT}:${FIXTURE_TAG}-debian12"
  assert_output --partial '"nvidia-p2p.operator": "26.7.0"'
  assert_output --partial '"nvidia-p2p.validator-workload": "on"'
}

@test "container --precompiled KVER: <branch>-KVER-<os>, the five modules in the image" {
  run_build --root "${ROOT}" container "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${RUNFILE}" --out "${OUT}" --no-ccache \
    --precompiled "${FIXTURE_KREL}"
  assert_success
  local ref="${FIXTURE_TAG%%.*}-${FIXTURE_KREL}-debian12"
  assert_line "oci:${OUT}:${ref}"
  run layer_files "${ref}" 2
  local m
  for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
    assert_line "usr/lib/nvidia-p2p/precompiled/${FIXTURE_KREL}/${m}.ko"
  done
  # what out-of-tree modules link against, from that build
  assert_line "usr/src/nvidia-p2p-${FIXTURE_TAG}/Module.symvers"
  # the kernel's own module lists (and the modules ours need: none here), so init fetches nothing
  assert_line "usr/lib/modules/${FIXTURE_KREL}/modules.builtin"
  assert_line "usr/lib/modules/${FIXTURE_KREL}/kernel/"
  # nothing at the top beside usr/ and drivers/: the base's merged-/usr links (/lib -> usr/lib) stay
  refute_line --regexp '^(lib|lib64|bin|sbin)(/|$)'
  run skopeo inspect --config "oci:${OUT}:${ref}"
  assert_output --partial "\"nvidia-p2p.precompiled\": \"${FIXTURE_KREL}\""
}

@test "container --precompiled: the kernel's own modules ours depend on are baked in (no network at init), transitively; one missing is exit 5" {
  fixture_build_stubs
  local mods="${BATS_TEST_TMPDIR}/mods" k="${BATS_TEST_TMPDIR}/ktree" out="${BATS_TEST_TMPDIR}/out"
  mkdir -p "${mods}" "${k}/kernel/drivers/gpu/drm" "${k}/kernel/drivers/i2c/algos" "${k}/kernel/drivers/sound"
  printf 'depends=\n' >"${mods}/nvidia.ko"
  printf 'depends=nvidia\n' >"${mods}/nvidia-modeset.ko"
  printf 'depends=drm,drm_kms_helper,nvidia-modeset\n' >"${mods}/nvidia-drm.ko"
  printf 'depends=\n' >"${k}/kernel/drivers/gpu/drm/drm.ko"
  printf 'depends=drm,i2c-algo-bit\n' >"${k}/kernel/drivers/gpu/drm/drm_kms_helper.ko"
  printf 'depends=\n' >"${k}/kernel/drivers/i2c/algos/i2c-algo-bit.ko"
  printf 'depends=\n' >"${k}/kernel/drivers/sound/snd.ko"
  printf 'kernel/drivers/gpu/drm/drm.ko\n' >"${k}/modules.order"
  printf 'kernel/drivers/video/fbdev/core/fb.ko\n' >"${k}/modules.builtin"
  run bash -c 'source "$1" && ctr_kernel_deps "$2" "$3" "$4" && cd "$4" && find . -type f | LC_ALL=C sort' _ "${BUILD_SH}" "${mods}" "${k}" "${out}"
  assert_success
  assert_output "$(printf '%s\n' ./kernel/drivers/gpu/drm/drm.ko ./kernel/drivers/gpu/drm/drm_kms_helper.ko \
    ./kernel/drivers/i2c/algos/i2c-algo-bit.ko ./modules.builtin ./modules.order)"
  printf 'depends=ib_core,nvidia\n' >"${mods}/nvidia-peermem.ko"
  run bash -c 'source "$1" && ctr_kernel_deps "$2" "$3" "$4"' _ "${BUILD_SH}" "${mods}" "${k}" "${out}"
  assert_failure 5
  assert_output --partial "kernel module ib_core, which nvidia-peermem.ko needs, is not in ${k}/kernel"
}

@test "container --precompiled: a kernel whose own modules are neither installed nor downloadable: exit 5, saying which" {
  stub apt-get - <<<'exit 100'
  run bash -c 'source "$1"; P2P_ROOT=$2 P2P_WORK_DIR=$3; stage() { :; }; run_logged() { "$@"; }; ctr_kernel_tree 6.1.0-99-none' _ \
    "${BUILD_SH}" "${BATS_TEST_TMPDIR}/root" "${BATS_TEST_TMPDIR}/work"
  assert_failure 5
  assert_output --partial "kernel 6.1.0-99-none's own modules (drm for nvidia-drm, ib_core for nvidia-peermem) are neither installed here"
}

@test "ci/setup/debian-run.sh: bad usage is exit 2, before apt runs" {
  run "${REPO_ROOT}/ci/setup/debian-run.sh" 535.261.03 bookworm
  assert_failure 2
  run "${REPO_ROOT}/ci/setup/debian-run.sh" 'x;y' bookworm "${BATS_TEST_TMPDIR}/o.run"
  assert_failure 2
  assert_output --partial "is not a driver version"
  run "${REPO_ROOT}/ci/setup/debian-run.sh" 535.261.03 'book worm' "${BATS_TEST_TMPDIR}/o.run"
  assert_failure 2
  assert_not_exist "${BATS_TEST_TMPDIR}/o.run"
}

@test "container: bad options are refused before anything is built" {
  container --os plan9
  assert_failure 3
  assert_output --partial "--os plan9: not one of debian12 debian13 ubuntu22.04 ubuntu24.04"
  container --sign-key /nonexistent
  assert_failure 2
  assert_output --partial "with --precompiled only"
  container --kernel-src /nonexistent
  assert_failure 2
  container --mirror ftp://x
  assert_failure 2
  container --precompiled 'bad kernel'
  assert_failure 2
  run_build container 1.2.3 --out "${OUT}"
  assert_failure 3
  assert_file_not_exist "${OUT}"
  run grep -c '^mmdebstrap ' "${STUB_LOG}"
  assert_output 0
}

@test "container: mmdebstrap failing exits 8 and leaves no image and no cached base" {
  STUB_MMDEBSTRAP_FAIL=1 container
  assert_failure 8
  assert_output --partial "mmdebstrap bookworm failed"
  assert_file_not_exist "${OUT}"
  run ls "${CACHE}/container"
  refute_output --partial ".tar"
}

@test "container: umoci missing is a preflight refusal" {
  PATH="$(path_hiding umoci)" container
  assert_failure 10
  assert_output --partial umoci
}

@test "container --precompiled --sign-key/--sign-cert: the modules in the image carry signatures that verify; labelled signed" {
  kernel_sign_file "${ROOT}" "${FIXTURE_KREL}"
  make_key_pair "${BATS_TEST_TMPDIR}/keys" user
  run_build --root "${ROOT}" container "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${RUNFILE}" --out "${OUT}" --no-ccache \
    --precompiled "${FIXTURE_KREL}" --sign-key "${BATS_TEST_TMPDIR}/keys/user.key" --sign-cert "${BATS_TEST_TMPDIR}/keys/user.der"
  assert_success
  local ref="${FIXTURE_TAG%%.*}-${FIXTURE_KREL}-debian12" x="${BATS_TEST_TMPDIR}/x" m
  mkdir -p "${x}"
  tar -xzf "${OUT}/blobs/sha256/$(skopeo inspect "oci:${OUT}:${ref}" | grep -o 'sha256:[0-9a-f]*' | sed -n 3p | cut -d: -f2)" -C "${x}"
  for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
    bash -c 'source "$1/lib/60-sign.sh" && module_sig_verify "$2" "$3"' _ "${REPO_ROOT}" \
      "${x}/usr/lib/nvidia-p2p/precompiled/${FIXTURE_KREL}/${m}.ko" "${BATS_TEST_TMPDIR}/keys/user.der" ||
      fail "${m}.ko in the image does not verify"
  done
  # the private key never enters the image
  run grep -rl "PRIVATE KEY" "${x}"
  assert_failure
  run skopeo inspect --config "oci:${OUT}:${ref}"
  assert_output --partial '"nvidia-p2p.signed": "yes"'
}

@test "container: umoci failing exits 8 and leaves no image" {
  local real
  real=$(type -P umoci)
  stub umoci - <<STUB
[[ \$1 == raw ]] && { echo "umoci: add-layer: fake failure" >&2; exit 1; }
exec ${real} "\$@"
STUB
  container
  assert_failure 8
  assert_output --partial "umoci failed to assemble ${FIXTURE_TAG}-debian12"
  assert_file_not_exist "${OUT}"
}

@test "container --precompiled KVER --kernel-src DIR of another kernel: refused (2) before anything is built" {
  fixture_kernel "${BATS_TEST_TMPDIR}/k" 6.1.0-98-other
  run_build container "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${RUNFILE}" --out "${OUT}" --no-ccache \
    --precompiled "${FIXTURE_KREL}" --kernel-src "${BATS_TEST_TMPDIR}/k/usr/src/linux-headers-6.1.0-98-other"
  assert_failure 2
  assert_output --partial "--kernel-src is kernel 6.1.0-98-other, not --precompiled ${FIXTURE_KREL}"
  run grep -c '^make ' "${STUB_LOG}"
  assert_output 0
  assert_file_not_exist "${OUT}"
}
